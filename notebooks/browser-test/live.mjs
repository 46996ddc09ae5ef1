// A live chart (nb.Live with nb.NotebookSink, as lab.Fit draws one) in a real GoNB cell:
// after the first point, while the cell still runs, the cell shows the loss and accuracy
// charts with whole-step ticks 0 and 1, the evaluation's points named by what they evaluated
// ("test: 500 images, no TTA"); at the end the loss axis fits the loss (2.35 to 1.97: ticks
// between them, not from 0) and the saved output carries the PNG. Screenshots:
// live-first-point.png, live-final.png.

import fs from "node:fs";
import path from "node:path";
import { hideLeftArea, log, openNotebook, save, sleep, svgTexts, waitForRun, writeCodeNotebook } from "./jupyterlab.mjs";

const liveNotebook = "live-chart.ipynb";

// The cell: one point, a pause in which the test looks, a second point, the end.
const cell = `import (
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

%%
live := nb.NewLive(nb.NotebookSink{}, 0)
live.Add(runs.HistoryPoint{Step: 1, Loss: 2.35, Accuracy: 0.1, Eval: &runs.EvalPoint{Examples: 500, Split: "test", Loss: 2.3, Accuracy: 0.12}})
fmt.Println("first point drawn")
time.Sleep(25 * time.Second)
live.Add(runs.HistoryPoint{Step: 2, Loss: 1.97, Accuracy: 0.15, Eval: &runs.EvalPoint{Examples: 500, Split: "test", Loss: 2.0, Accuracy: 0.2}})
live.Finish(nil)
fmt.Println("finished")
`;

// checkLive runs the cell in JupyterLab, looks at the charts after the first point (screenshot
// live-first-point.png) and checks the saved outputs; it returns the problems found.
export async function checkLive(context, { port, token, root, kernel, outDir, timeoutMs }) {
  const file = path.join(root, liveNotebook);
  writeCodeNotebook(file, kernel, "live", [cell]);
  const problems = [];
  const page = await context.newPage();
  try {
    await openNotebook(page, { port, token, name: liveNotebook });
    await hideLeftArea(page);
    await page.click(".jp-NotebookPanel .jp-Notebook");
    await page.click('.lm-MenuBar-itemLabel:text-is("Run")');
    await page.click('.lm-Menu-itemLabel:text-is("Run All Cells")');
    const output = page.locator(".jp-NotebookPanel .jp-CodeCell .jp-OutputArea");
    await output.getByText("first point drawn").waitFor({ timeout: timeoutMs });
    await sleep(1000);
    const running = await page.$eval(".jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt", (e) => e.textContent.trim());
    if (running !== "[*]:") problems.push(`live chart: the cell was no longer running when its first point was drawn (prompt ${running})`);
    const svgs = await page.$$eval('.jp-OutputArea-output img[src^="data:image/svg+xml"]', (imgs) =>
      imgs.map((i) => decodeURIComponent(i.src.slice(i.src.indexOf(",") + 1))),
    );
    const shot = path.join(outDir, "live-first-point.png");
    await page.screenshot({ path: shot });
    log(`screenshot: ${shot}`);
    if (svgs.length !== 2) {
      problems.push(`live chart: after the first point the cell shows ${svgs.length} chart(s), want 2 (loss and accuracy)`);
    }
    svgs.forEach((svg, i) => {
      const texts = svgTexts(svg);
      const ticks = texts.filter((t) => /^\d+(\.\d+)?$/.test(t));
      for (const want of ["0", "1", "step"]) {
        if (!texts.includes(want)) problems.push(`live chart ${i + 1} after the first point: no ${JSON.stringify(want)} on its step axis (texts: ${texts.join(" | ")})`);
      }
      const fractional = ticks.filter((t) => t.includes("."));
      // The accuracy chart's labels are its step axis's and 0, 50, 100: none fractional (the loss
      // chart's y axis fits the loss, whose labels are).
      if (i === 1 && fractional.length) problems.push(`live chart ${i + 1}: fractional tick labels ${fractional.join(" ")}`);
      if (!texts.includes(i === 0 ? "loss" : "accuracy")) problems.push(`live chart ${i + 1}: not the ${i === 0 ? "loss" : "accuracy"} chart`);
      if (!texts.includes("test: 500 images, no TTA")) problems.push(`live chart ${i + 1}: its test points do not say what they evaluated (texts: ${texts.join(" | ")})`);
    });

    await waitForRun(page, 1, timeoutMs);
    await sleep(500);
    const final = await page.$$eval('.jp-OutputArea-output img[src^="data:image/svg+xml"]', (imgs) =>
      imgs.map((i) => decodeURIComponent(i.src.slice(i.src.indexOf(",") + 1))),
    );
    // The loss axis fits the loss, 2.35 to 1.97: its labels lie between them (2.1, 2.2, ...),
    // where an axis from 0 labels 0, 1 and 2 only.
    const lossTicks = final.length ? svgTexts(final[0]).filter((t) => /^\d+\.\d+$/.test(t)) : [];
    if (!lossTicks.some((t) => Number(t) > 1.9 && Number(t) < 2.4)) problems.push(`live chart: the loss axis does not fit the loss 2.35-1.97 (its labels: ${lossTicks.join(" ")})`);
    const finalShot = path.join(outDir, "live-final.png");
    await page.screenshot({ path: finalShot });
    log(`screenshot: ${finalShot}; loss axis labels ${lossTicks.join(" ")}`);
    await save(page, file);
    const saved = JSON.parse(fs.readFileSync(file, "utf8"));
    const displays = saved.cells[0].outputs.filter((o) => o.output_type === "display_data");
    const finals = displays.filter((o) => "image/png" in o.data && "image/svg+xml" in o.data && /curve: 2 points, to step 2/.test([].concat(o.data["text/plain"]).join("")));
    if (finals.length !== 2) {
      problems.push(`live chart: the saved cell has ${finals.length} chart(s) with PNG, SVG and "2 points" text, want 2: ${JSON.stringify(displays.map((o) => Object.keys(o.data)))}`);
    }
    for (const o of finals) {
      const size = o.metadata && o.metadata["image/png"];
      if (!size || !(size.width > 0) || !(size.height > 0)) problems.push(`live chart: the saved PNG has no display size (metadata ${JSON.stringify(o.metadata)})`);
      else log(`live chart saved: PNG ${Math.round((o.data["image/png"].length * 3) / 4)} bytes at ${size.width}x${size.height} CSS px, SVG ${[].concat(o.data["image/svg+xml"]).join("").length} bytes`);
    }
  } finally {
    await page.close().catch(() => {});
  }
  return problems;
}
