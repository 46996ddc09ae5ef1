// The researcher's loop (issue 47) in real GoNB cells, as a reader sees it in JupyterLab: a run,
// the same run with label smoothing changed, their comparison and the runs table.
//
//   - the first training cell says what it does before its first step ("compiling the train
//     step", then "step 1/N"), and its live charts show;
//   - the re-run with a changed value compiles nothing: its end line's timeline has no compile;
//   - lab.Compare names the runs by what differs: charts titled "by label smoothing", legends
//     "label smoothing 0.2" and "label smoothing 0.1", the validation said in the legend;
//   - the runs table has a "label smoothing" column.
// Screenshot: loop-compare.png.

import path from "node:path";
import { hideLeftArea, log, openNotebook, sleep, svgTexts, waitForRun, writeCodeNotebook } from "./jupyterlab.mjs";

const loopNotebook = "researcher-loop.ipynb";

// fit is the cell that trains the run called name with label smoothing ls.
const fit = (name, ls) => `%%
s := lab.Settings()
s.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Run.LabelSmoothing = 12, 16, 1, ${ls}
s.Eval.Every, s.Eval.Examples, s.Eval.SkipFinal = 4, 32, true
nb.Must(lab.Fit(${JSON.stringify(name)}, s))`;

// cells are the notebook's cells; the lab keeps its runs in runsDir (of its own: the notebooks'
// runs folder, which notebook 05 lists, stays as the notebooks left it).
const cells = (runsDir) => [
  `import (
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
)

var lab = func() *nb.Lab {
	l := nb.Open(data.CIFAR10())
	l.RunsDir = ${JSON.stringify(runsDir)}
	return l
}()

%%
fmt.Println(lab.Arch)`,
  fit("ls-0.2", "0.2"),
  fit("ls-0.1", "0.1"),
  `%%
nb.Check(lab.Compare("ls-0.2", "ls-0.1"))`,
  `%%
nb.Show(nb.Must(lab.Runs()))`,
];

// cellText returns the text of the output area of code cell i (0-based).
async function cellText(page, i) {
  return page.locator(".jp-NotebookPanel .jp-CodeCell .jp-OutputArea").nth(i).innerText();
}

// checkLoop runs the cells in JupyterLab and checks what they show; it returns the problems found.
export async function checkLoop(context, { port, token, root, kernel, outDir, timeoutMs }) {
  const file = path.join(root, loopNotebook);
  writeCodeNotebook(file, kernel, "loop", cells(path.join(root, "loop-runs")));
  const problems = [];
  const page = await context.newPage();
  try {
    await openNotebook(page, { port, token, name: loopNotebook });
    await hideLeftArea(page);
    await page.click(".jp-NotebookPanel .jp-Notebook");
    await page.click('.lm-MenuBar-itemLabel:text-is("Run")');
    await page.click('.lm-Menu-itemLabel:text-is("Run All Cells")');
    // The first training cell speaks before its first step: what it compiles, then the step.
    const first = page.locator(".jp-NotebookPanel .jp-CodeCell .jp-OutputArea").nth(1);
    await first.getByText(/compiling the train step|step 1\/12/).first().waitFor({ timeout: timeoutMs });
    await waitForRun(page, cells("").length, timeoutMs);
    await sleep(500);

    const fit1 = await cellText(page, 1);
    const fit2 = await cellText(page, 2);
    if (!/run "ls-0\.2": trained 12 steps in/.test(fit1)) problems.push(`loop: the first run's cell does not say it trained: ${fit1}`);
    const end2 = fit2.split("\n").find((l) => l.startsWith('run "ls-0.1": trained 12 steps in')) || "";
    if (!end2) problems.push(`loop: the re-run's cell does not say it trained: ${fit2}`);
    else if (/compile/.test(end2)) problems.push(`loop: the re-run with label smoothing changed compiled: ${end2}`);

    // lab.Compare: its two charts, named by what differs, as trusted SVG (the notebook was run here).
    const compare = page.locator(".jp-NotebookPanel .jp-CodeCell").nth(3);
    const svgs = await compare.locator('.jp-OutputArea-output img[src^="data:image/svg+xml"]').evaluateAll((imgs) =>
      imgs.map((i) => decodeURIComponent(i.src.slice(i.src.indexOf(",") + 1))),
    );
    if (svgs.length !== 2) problems.push(`loop: lab.Compare shows ${svgs.length} chart(s), want 2 (loss and validation accuracy)`);
    svgs.forEach((svg, i) => {
      const texts = svgTexts(svg);
      const title = texts.find((t) => / by /.test(t)) || "";
      if (!title.endsWith("by label smoothing")) problems.push(`loop: compare chart ${i + 1}'s title is ${JSON.stringify(title)}, want "... by label smoothing"`);
      for (const want of ["label smoothing 0.2", "label smoothing 0.1"]) {
        if (!texts.some((t) => t.startsWith(want))) problems.push(`loop: compare chart ${i + 1} has no legend ${JSON.stringify(want)} (texts: ${texts.join(" | ")})`);
      }
      if (i === 1 && !texts.some((t) => /32 test images/.test(t))) problems.push(`loop: the accuracy chart's legend does not say what the validation was (texts: ${texts.join(" | ")})`);
    });
    await compare.scrollIntoViewIfNeeded();
    const shot = path.join(outDir, "loop-compare.png");
    await page.screenshot({ path: shot });
    log(`screenshot: ${shot}`);

    // The runs table: a column for the setting the runs differ in.
    const headers = await page.locator(".jp-NotebookPanel .jp-CodeCell").nth(4).locator("th").allInnerTexts();
    if (!headers.map((h) => h.trim()).includes("label smoothing")) problems.push(`loop: the runs table has no "label smoothing" column (columns: ${headers.join(" | ")})`);
    if (!problems.length) log(`loop: the re-run compiled nothing (${end2.trim()}); compare charts by label smoothing; runs table column "label smoothing"`);
  } finally {
    await page.close().catch(() => {});
  }
  return problems;
}
