// Real-browser tests of the cifarlab notebooks.
//
// It starts JupyterLab on 127.0.0.1 with token authentication, serving temporary copies of the
// notebooks (the committed files are never touched) with a notary that has trusted nothing, and
// drives it with headless Chromium (Debian's /usr/bin/chromium, through playwright-core):
//
//   - NOTEBOOK: runs all its cells from the Run menu, waits for every cell to finish and the
//     kernel to go idle, and checks that the server refuses requests without the token, that
//     every code cell ran, that the texts each cell's metadata expects ("cifarlab": {"expect":
//     [...]}, those that do not depend on the data) are visible in its output area, and that the
//     notebook saved from the browser (Ctrl+S) passes `nbcheck.py --check-only` (its outputs'
//     data is the data folder's, $CIFARLAB_DATA). Screenshots: <name>.png (the cell whose error
//     the guard raises, or the last) and <name>-top.png; the saved notebook: <name>.executed.ipynb.
//   - OPEN (notebooks, comma-separated, or "all"): opens each committed notebook as a reader
//     does, untrusted: every chart must show (its PNG; JupyterLab renders no SVG untrusted) and
//     opening must not mark it modified; then trusts it (the charts show as SVG) and saves it,
//     and the file must stay byte for byte the same (untrusted.mjs). Screenshots:
//     <name>-untrusted.png, <name>-trusted.png.
//   - LIVE=1: a live chart in a real cell, after its first point and at the end (live.mjs).
//     Screenshot: live-first-point.png.
//   - LOOP=1: the researcher's loop in real cells (loop.mjs): a run, the same run with label
//     smoothing changed (it compiles nothing), lab.Compare's charts named by what differs, and the
//     runs table's column for it. Screenshot: loop-compare.png.
//
// Environment (all optional): NOTEBOOK (default 01-reproduce.ipynb, relative to notebooks/;
// "none": no run), OPEN, LIVE, LOOP, KERNEL (kernelspec name, default cifarlab-cpu), PYTHON (the
// venv's python, default <repo>/.venv/bin/python), CHROMIUM (default /usr/bin/chromium),
// OUT_DIR (default <repo>/out/browser), RUN_TIMEOUT_S (default 900: all cells, including
// GoNB's first compilation of GoMLX).
//
// Exit status 0 on success; 1 with a message on stderr otherwise.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import {
  TestFailure,
  fail,
  freePort,
  hideLeftArea,
  httpStatus,
  log,
  mapCodeCells,
  openNotebook,
  save,
  sleep,
  startJupyter,
  stopJupyter,
  waitForRun,
  writeLabSettings,
} from "./jupyterlab.mjs";
import { checkLive } from "./live.mjs";
import { checkLoop } from "./loop.mjs";
import { checkOpened } from "./untrusted.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const notebooksDir = path.resolve(here, "..");
const repo = path.resolve(notebooksDir, "..");
const notebookName = process.env.NOTEBOOK === undefined ? "01-reproduce.ipynb" : process.env.NOTEBOOK;
const runNotebook = notebookName !== "" && notebookName !== "none";
const kernel = process.env.KERNEL || "cifarlab-cpu";
const python = process.env.PYTHON || path.join(repo, ".venv", "bin", "python");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const outDir = path.resolve(process.env.OUT_DIR || path.join(repo, "out", "browser"));
const runTimeoutMs = 1000 * Number(process.env.RUN_TIMEOUT_S || 900);

const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
];

// openList is the notebooks OPEN names: "all" is every committed one (0?-*.ipynb).
function openList() {
  const v = (process.env.OPEN || "").trim();
  if (!v) return [];
  if (v === "all") return fs.readdirSync(notebooksDir).filter((f) => /^0\d-.*\.ipynb$/.test(f)).sort();
  return v.split(",").map((s) => s.trim()).filter(Boolean);
}

// Expectations per code cell, in code-cell order, read from the notebook's metadata; those that
// depend on the data ("data": ...) are left to nbcheck.py, which knows the data.
function readExpectations(nbPath) {
  const nb = JSON.parse(fs.readFileSync(nbPath, "utf8"));
  return nb.cells
    .filter((c) => c.cell_type === "code")
    .map((c) => {
      const meta = (c.metadata && c.metadata.cifarlab) || {};
      const tags = (c.metadata && c.metadata.tags) || [];
      const texts = (meta.expect || []).filter((e) => typeof e === "string");
      const regexes = (meta.expect || []).filter((e) => e && typeof e === "object" && e.regex && !e.data).map((e) => e.regex);
      return { texts, regexes, raises: tags.includes("raises-exception") };
    });
}

// visibleOutputs returns the text each code cell's output area shows.
async function visibleOutputs(page) {
  return mapCodeCells(page, async (cell) => {
    const out = cell.locator(".jp-OutputArea");
    return (await out.count()) ? out.first().innerText() : "";
  });
}

// runAll runs every cell of the notebook copy in the browser and checks it (see the top).
async function runAll(context, { port, token, nbCopy, src }) {
  const base = path.basename(notebookName, ".ipynb");
  const expectations = readExpectations(src);
  const page = await context.newPage();
  const consoleErrors = [];
  page.on("pageerror", (err) => consoleErrors.push(String(err)));
  log(`opening ${notebookName} in Chromium`);
  const kernelName = await openNotebook(page, { port, token, name: path.basename(nbCopy) });
  log(`kernel "${kernelName}" connected; running all cells`);
  await page.click(".jp-NotebookPanel .jp-Notebook");
  await page.click('.lm-MenuBar-itemLabel:text-is("Run")');
  await page.click('.lm-Menu-itemLabel:text-is("Run All Cells")');
  const states = await waitForRun(page, expectations.length, runTimeoutMs);
  log(`all ${states.length} code cells ran`);

  const problems = [];
  const texts = await visibleOutputs(page);
  texts.forEach((text, i) => {
    const exp = expectations[i];
    if (!exp) return;
    for (const t of exp.texts) {
      if (!text.includes(t)) problems.push(`code cell ${i + 1}: expected text not visible: ${JSON.stringify(t)}`);
    }
    for (const r of exp.regexes) {
      if (!new RegExp(r, "m").test(text)) problems.push(`code cell ${i + 1}: no visible match for /${r}/`);
    }
  });
  if (texts.length !== expectations.length) {
    problems.push(`the page shows ${texts.length} code cells, the notebook has ${expectations.length}`);
  }

  // Screenshots: the top, and the guarded-loss error (first raises-exception cell).
  await hideLeftArea(page);
  await page.evaluate(() => document.querySelector(".jp-NotebookPanel .jp-WindowedPanel-outer")?.scrollTo(0, 0));
  await sleep(500);
  await page.screenshot({ path: path.join(outDir, `${base}-top.png`) });
  const raisesIdx = expectations.findIndex((e) => e.raises);
  const target = raisesIdx >= 0 ? raisesIdx : expectations.length - 1;
  const cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell").nth(target);
  await cell.scrollIntoViewIfNeeded();
  await cell.evaluate((e) => e.scrollIntoView({ block: "start" }));
  await sleep(500);
  const shot = path.join(outDir, `${base}.png`);
  await page.screenshot({ path: shot });
  log(`screenshot: ${shot}`);

  // Save from the browser, then check the file with the same rules as CI, on the data this run
  // read.
  await save(page, nbCopy);
  const saved = path.join(outDir, `${base}.executed.ipynb`);
  fs.copyFileSync(nbCopy, saved);
  const args = [path.join(notebooksDir, "nbcheck.py"), "--check-only", saved];
  if (process.env.CIFARLAB_DATA) args.push("--data-dir", process.env.CIFARLAB_DATA);
  const check = spawnSync(python, args, { encoding: "utf8" });
  process.stdout.write(check.stdout);
  if (check.status !== 0) problems.push(`nbcheck --check-only on the browser-saved notebook failed:\n${check.stdout}${check.stderr}`);
  if (consoleErrors.length) log(`page errors (not fatal): ${consoleErrors.join(" | ")}`);
  await page.close().catch(() => {});
  if (!problems.length) log(`PASS: ${notebookName} ran in JupyterLab with kernel "${kernelName}"; screenshot ${shot}`);
  return problems;
}

async function main() {
  const toOpen = openList();
  const live = process.env.LIVE === "1";
  const loop = process.env.LOOP === "1";
  if (!runNotebook && !toOpen.length && !live && !loop) fail("nothing to do: set NOTEBOOK, OPEN, LIVE=1 or LOOP=1");
  if (!fs.existsSync(python)) fail(`no Python at ${python}: run kernel/setup.sh (it creates .venv with JupyterLab)`);
  if (!fs.existsSync(chromiumPath)) fail(`no Chromium at ${chromiumPath}: apt-get install chromium`);
  const ks = spawnSync(python, ["-m", "jupyter", "kernelspec", "list", "--json"], { encoding: "utf8" });
  if (ks.status !== 0) fail(`jupyter kernelspec list failed: ${ks.stderr}`);
  if (!JSON.parse(ks.stdout).kernelspecs[kernel]) {
    fail(`kernelspec ${kernel} is not installed: run \`.bin/cifarlab kernel install\` (kernel/setup.sh does)`);
  }
  fs.mkdirSync(outDir, { recursive: true });

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cifarlab-browser-"));
  const work = {
    root: path.join(tmp, "root"),
    settings: path.join(tmp, "settings"),
    workspaces: path.join(tmp, "workspaces"),
    config: path.join(tmp, "config"),
    runtime: path.join(tmp, "runtime"),
    profile: path.join(tmp, "chromium-profile"),
  };
  for (const d of Object.values(work)) fs.mkdirSync(d, { recursive: true });
  writeLabSettings(work.settings);
  // Each check gets a copy of its own: the run's copy is rewritten when saved.
  const copyOf = (name, as) => {
    const src = path.resolve(notebooksDir, name);
    if (!fs.existsSync(src)) fail(`no notebook ${src}`);
    const copy = path.join(work.root, as || path.basename(name));
    fs.copyFileSync(src, copy);
    return { src, copy };
  };

  const token = randomBytes(24).toString("hex");
  const port = await freePort();
  let jupyter, context;
  const problems = [];
  try {
    log(`starting JupyterLab on 127.0.0.1:${port}`);
    jupyter = await startJupyter({ python, work, port, token, logFile: path.join(outDir, "jupyter.log") });
    const noToken = await httpStatus(`http://127.0.0.1:${port}/api/contents/`);
    if (noToken !== 403) fail(`the server answered ${noToken} without the token (want 403)`);
    context = await chromium.launchPersistentContext(work.profile, {
      executablePath: chromiumPath,
      headless: true,
      args: chromiumArgs,
      viewport: { width: 1280, height: 1000 },
    });
    for (const name of toOpen) {
      const { src, copy } = copyOf(name, `opened-${path.basename(name)}`);
      problems.push(...(await checkOpened(context, { port, token, name: path.basename(copy), src, copy, outDir })));
    }
    if (live) problems.push(...(await checkLive(context, { port, token, root: work.root, kernel, outDir, timeoutMs: runTimeoutMs })));
    if (loop) problems.push(...(await checkLoop(context, { port, token, root: work.root, kernel, outDir, timeoutMs: runTimeoutMs })));
    if (runNotebook) {
      const { src, copy } = copyOf(notebookName);
      problems.push(...(await runAll(context, { port, token, nbCopy: copy, src })));
    }
    if (problems.length) fail(problems.join("\n"));
    log(`PASS: ${[runNotebook && `ran ${notebookName}`, toOpen.length && `opened ${toOpen.join(", ")}`, live && "live chart", loop && "researcher's loop"].filter(Boolean).join("; ")}`);
  } finally {
    if (context) await context.close().catch(() => {});
    stopJupyter(jupyter);
    await sleep(500);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`browser-test: FAIL: ${err instanceof TestFailure ? err.message : err.stack || err}\n`);
    process.exit(1);
  },
);
