// The researcher's loop (issue 47) in real GoNB cells, as a reader sees it in JupyterLab: a run,
// the same run with label smoothing changed, their comparison and the runs table.
//
//   - the first training cell says what it does before its first step ("compiling the train
//     step", then "step 1/N"), and its live charts show;
//   - the re-run with a changed value compiles nothing: its end line's timeline has no compile;
//   - lab.Compare names the runs by what differs: charts titled "by label smoothing", legends
//     "label smoothing 0.2" and "label smoothing 0.1", the validation said in the legend;
//   - the runs table has a "label smoothing" column, and no "test top-5" column (the runs
//     evaluated none);
//   - lab.Compare of 2, 5 and 10 runs (8 more runs, each departing from the first in a setting or
//     two): the title whole and every legend text inside the chart, the plot at least
//     minPlotShare of its width (measured in the browser), and from 5 runs the values the runs
//     share said once, each run by where it departs from them.
// Screenshots: loop-compare.png, loop-compare-5.png, loop-compare-10.png.

import path from "node:path";
import { hideLeftArea, log, measureChart, openNotebook, sleep, svgTexts, waitForRun, writeCodeNotebook } from "./jupyterlab.mjs";

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
  more,
  `%%
nb.Check(lab.Compare("ls-0.2", "ls-0.1", "run-3", "run-4", "run-5"))`,
  `%%
nb.Check(lab.Compare("ls-0.2", "ls-0.1", "run-3", "run-4", "run-5", "run-6", "run-7", "run-8", "run-9", "run-10"))`,
];

// more trains 8 more runs like the first two (fit), each departing from ls-0.2 in a setting or
// two (seed, learning rate, label smoothing, steps): 10 runs to compare, as a researcher's loop
// leaves them. They compile nothing: every value changed is fed to the kept programs.
const more = `%%
for i, v := range []map[string]string{
	{"seed": "2"}, {"seed": "3"}, {"lr": "0.002"}, {"seed": "2", "lr": "0.0005"},
	{"seed": "3", "steps": "16"}, {"label-smoothing": "0.3"}, {"seed": "2", "lr": "0.003"}, {"seed": "3", "steps": "8"},
} {
	s := lab.Settings()
	s.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Run.LabelSmoothing = 12, 16, 1, 0.2
	s.Eval.Every, s.Eval.Examples, s.Eval.SkipFinal = 4, 32, true
	nb.Check(s.Apply(v))
	nb.Must(lab.Fit(fmt.Sprintf("run-%d", i+3), s))
}`;

// minPlotShare is the least share of a comparison chart's width its plotting area takes.
const minPlotShare = 0.55;

// checkCompare checks the two charts of the lab.Compare cell i, of n runs, in the browser: the
// title whole and no text outside the chart, the plot's share of the width, and from 5 runs the
// shared values said once; it returns the problems found and a line of what it measured.
async function checkCompare(page, i, n) {
  const problems = [];
  const cell = page.locator(".jp-NotebookPanel .jp-CodeCell").nth(i);
  await cell.scrollIntoViewIfNeeded();
  const svgs = await cell.locator('.jp-OutputArea-output img[src^="data:image/svg+xml"]').evaluateAll((imgs) =>
    imgs.map((img) => decodeURIComponent(img.src.slice(img.src.indexOf(",") + 1))),
  );
  if (svgs.length !== 2) problems.push(`compare of ${n} runs: ${svgs.length} chart(s), want 2`);
  const shares = [];
  for (const [j, svg] of svgs.entries()) {
    const texts = svgTexts(svg);
    const m = await measureChart(page, svg);
    const share = m.plot / m.width;
    shares.push(`${Math.round(100 * share)}% of ${Math.round(m.width)} px`);
    if (m.outside.length) problems.push(`compare of ${n} runs, chart ${j + 1}: texts outside the chart (clipped): ${m.outside.join(" | ")}`);
    if (share < minPlotShare) problems.push(`compare of ${n} runs, chart ${j + 1}: the plot is ${Math.round(100 * share)}% of the width, want >= ${100 * minPlotShare}%`);
    const by = n > 2 ? / by seed, / : / by /;
    if (!texts.some((t) => by.test(t))) problems.push(`compare of ${n} runs, chart ${j + 1}: no title ${by} (texts: ${texts.join(" | ")})`);
    if (n >= 5) { // the shared values once; ls-0.1 and run-3 by where they depart from them
      for (const want of [/^unless a line says otherwise:$/, /^(seed 1, )?label smoothing 0\.1$/, /^seed 2$/]) {
        if (!texts.some((t) => want.test(t))) problems.push(`compare of ${n} runs, chart ${j + 1}: no legend text ${want} (texts: ${texts.join(" | ")})`);
      }
    }
  }
  return { problems, measured: `${n} runs: plot ${shares.join(", ")}` };
}

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
    if (headers.some((h) => /top-5/.test(h))) problems.push(`loop: the runs table has a top-5 column, which no run evaluated (columns: ${headers.join(" | ")})`);

    // lab.Compare of 2, 5 and 10 runs: the title whole, the legend compact, the plot the main part.
    const measured = [];
    for (const [i, n] of [[3, 2], [6, 5], [7, 10]]) {
      const c = await checkCompare(page, i, n);
      problems.push(...c.problems);
      measured.push(c.measured);
      if (n > 2) {
        const shot = path.join(outDir, `loop-compare-${n}.png`);
        await page.locator(".jp-NotebookPanel .jp-CodeCell").nth(i).screenshot({ path: shot });
        log(`screenshot: ${shot}`);
      }
    }
    log(`loop: compare charts measured in the browser: ${measured.join("; ")}`);
    if (!problems.length) log(`loop: the re-run compiled nothing (${end2.trim()}); compare charts by label smoothing; runs table column "label smoothing"`);
  } finally {
    await page.close().catch(() => {});
  }
  return problems;
}
