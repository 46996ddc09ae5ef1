// Real-browser test of a cifarlab notebook.
//
// It starts JupyterLab on 127.0.0.1 with token authentication (serving a temporary copy of the
// notebook, so the committed file is never touched), opens the notebook in headless Chromium
// (Debian's /usr/bin/chromium, driven by playwright-core), runs all cells from the Run menu, waits
// for every cell to finish and the kernel to go idle, and then checks:
//
//   - the server refuses requests without the token;
//   - every code cell ran (it shows an execution count);
//   - the text each cell's metadata expects ("cifarlab": {"expect": [...]}) is visible in that
//     cell's rendered output area;
//   - the notebook saved from the browser (Ctrl+S) passes `nbcheck.py --check-only`: no error
//     output except in cells tagged raises-exception, which must show their error, and every
//     expectation holds on the saved outputs.
//
// Screenshots go to $OUT_DIR (default <repo>/out/browser): <name>.png shows the cell whose
// error the guard raises (the story's punchline), <name>-top.png the top of the notebook; the
// notebook as saved by the browser is kept as <name>.executed.ipynb.
//
// Environment (all optional): NOTEBOOK (default 01-reproduce.ipynb, relative to notebooks/),
// KERNEL (kernelspec name, default cifarlab-cpu), PYTHON (the venv's python, default
// <repo>/.venv/bin/python), CHROMIUM (default /usr/bin/chromium), OUT_DIR, RUN_TIMEOUT_S
// (default 900: all cells, including GoNB's first compilation of GoMLX).
//
// Exit status 0 on success; 1 with a message on stderr otherwise.

import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const notebooksDir = path.resolve(here, "..");
const repo = path.resolve(notebooksDir, "..");
const notebookName = process.env.NOTEBOOK || "01-reproduce.ipynb";
const kernel = process.env.KERNEL || "cifarlab-cpu";
const python = process.env.PYTHON || path.join(repo, ".venv", "bin", "python");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const outDir = path.resolve(process.env.OUT_DIR || path.join(repo, "out", "browser"));
const runTimeoutMs = 1000 * Number(process.env.RUN_TIMEOUT_S || 900);
const base = path.basename(notebookName, ".ipynb");
const nbFile = path.basename(notebookName);

const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
];

function log(msg) {
  process.stdout.write(`[browser-test ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

class TestFailure extends Error {}

function fail(msg) {
  throw new TestFailure(msg);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function httpStatus(url) {
  try {
    const res = await fetch(url, { redirect: "manual" });
    return res.status;
  } catch {
    return 0;
  }
}

// Expectations per code cell, in code-cell order, read from the notebook's metadata.
function readExpectations(nbPath) {
  const nb = JSON.parse(fs.readFileSync(nbPath, "utf8"));
  return nb.cells
    .filter((c) => c.cell_type === "code")
    .map((c) => {
      const meta = (c.metadata && c.metadata.cifarlab) || {};
      const tags = (c.metadata && c.metadata.tags) || [];
      const texts = (meta.expect || []).filter((e) => typeof e === "string");
      const regexes = (meta.expect || []).filter((e) => e && typeof e === "object" && e.regex).map((e) => e.regex);
      const source = Array.isArray(c.source) ? c.source.join("") : c.source;
      return { texts, regexes, raises: tags.includes("raises-exception"), source };
    });
}

async function startJupyter(work, port, token) {
  const jupyterLog = fs.openSync(path.join(outDir, `${base}.jupyter.log`), "w");
  const args = [
    "-m", "jupyter", "lab",
    "--no-browser",
    "--ServerApp.ip=127.0.0.1",
    `--ServerApp.port=${port}`,
    "--ServerApp.port_retries=0",
    `--IdentityProvider.token=${token}`,
    `--ServerApp.root_dir=${work.root}`,
    `--LabApp.user_settings_dir=${work.settings}`,
    `--LabApp.workspaces_dir=${work.workspaces}`,
    "--LabApp.news_url=",
    "--ServerApp.open_browser=False",
    "--ServerApp.terminals_enabled=False",
  ];
  if (process.getuid && process.getuid() === 0) args.push("--allow-root"); // CI containers run as root
  const env = {
    ...process.env,
    JUPYTER_CONFIG_DIR: work.config,
    JUPYTER_RUNTIME_DIR: work.runtime,
  };
  const proc = spawn(python, args, { env, stdio: ["ignore", jupyterLog, jupyterLog], detached: true });
  proc.on("error", (err) => log(`jupyter failed to start: ${err.message}`));
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) {
      fail(`JupyterLab exited with status ${proc.exitCode}; see ${path.join(outDir, base + ".jupyter.log")}`);
    }
    if ((await httpStatus(`http://127.0.0.1:${port}/api/status?token=${token}`)) === 200) {
      return proc;
    }
    await sleep(500);
  }
  fail("JupyterLab did not answer on /api/status within 90 s");
}

function stopJupyter(proc) {
  if (!proc || proc.exitCode !== null) return;
  try {
    process.kill(-proc.pid, "SIGTERM");
  } catch {
    /* already gone */
  }
}

// Lab settings for the test: no autosave (the test saves explicitly) and no virtual scrolling,
// so every cell of the notebook is in the DOM.
function writeLabSettings(dir) {
  const put = (plugin, file, obj) => {
    const d = path.join(dir, plugin);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, file), JSON.stringify(obj));
  };
  put("@jupyterlab/docmanager-extension", "plugin.jupyterlab-settings", { autosave: false });
  put("@jupyterlab/notebook-extension", "tracker.jupyterlab-settings", { windowingMode: "none" });
  put("@jupyterlab/apputils-extension", "notification.jupyterlab-settings", {
    fetchNews: "false",
    checkForUpdates: false,
  });
}

async function cellStates(page) {
  return page.$$eval(".jp-NotebookPanel .jp-Notebook .jp-CodeCell", (cells) =>
    cells.map((c) => {
      const prompt = c.querySelector(".jp-InputArea-prompt");
      return { prompt: prompt ? prompt.textContent.trim() : "" };
    }),
  );
}

// visibleOutputs scrolls each code cell into view (JupyterLab skips rendering cells outside the
// viewport) and returns the text its output area shows.
async function visibleOutputs(page) {
  const cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell");
  const texts = [];
  for (let i = 0; i < (await cells.count()); i++) {
    const cell = cells.nth(i);
    await cell.scrollIntoViewIfNeeded();
    const out = cell.locator(".jp-OutputArea");
    texts.push((await out.count()) ? await out.first().innerText() : "");
  }
  return texts;
}

async function waitForRun(page, nCells) {
  const deadline = Date.now() + runTimeoutMs;
  let lastReport = 0;
  while (Date.now() < deadline) {
    const states = await cellStates(page);
    const pending = states.filter((s) => s.prompt === "[*]:").length;
    const done = states.filter((s) => /^\[\d+\]:$/.test(s.prompt)).length;
    const status = await page
      .$eval(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator", (e) => e.getAttribute("data-status"))
      .catch(() => null);
    if (Date.now() - lastReport > 30_000) {
      log(`running: ${done}/${nCells} cells done, ${pending} pending, kernel ${status}`);
      lastReport = Date.now();
    }
    if (pending === 0 && done === nCells && status === "idle") {
      return states;
    }
    await sleep(1000);
  }
  const states = await cellStates(page);
  fail(`cells still running after ${runTimeoutMs / 1000}s: prompts ${states.map((s) => s.prompt).join(" ")}`);
}

async function main() {
  const src = path.resolve(notebooksDir, notebookName);
  if (!fs.existsSync(src)) fail(`no notebook ${src}`);
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
  const nbCopy = path.join(work.root, nbFile);
  fs.copyFileSync(src, nbCopy);
  const expectations = readExpectations(src);

  const token = randomBytes(24).toString("hex");
  const port = await freePort();
  let jupyter, context;
  try {
    log(`starting JupyterLab on 127.0.0.1:${port}`);
    jupyter = await startJupyter(work, port, token);
    const noToken = await httpStatus(`http://127.0.0.1:${port}/api/contents/${encodeURIComponent(nbFile)}`);
    if (noToken !== 403) fail(`the server answered ${noToken} without the token (want 403)`);

    context = await chromium.launchPersistentContext(work.profile, {
      executablePath: chromiumPath,
      headless: true,
      args: chromiumArgs,
      viewport: { width: 1280, height: 1000 },
    });
    const page = context.pages()[0] || (await context.newPage());
    const consoleErrors = [];
    page.on("pageerror", (err) => consoleErrors.push(String(err)));

    log(`opening ${notebookName} in Chromium`);
    await page.goto(`http://127.0.0.1:${port}/lab/tree/${encodeURIComponent(nbFile)}?token=${token}`);
    await page.waitForSelector(".jp-NotebookPanel .jp-Notebook .jp-Cell", { timeout: 120_000 });
    // A kernel dialog means the notebook's kernel could not be started.
    const dialog = await page.waitForSelector(".jp-Dialog", { timeout: 3000 }).catch(() => null);
    if (dialog) fail(`JupyterLab showed a dialog instead of starting the kernel: ${await dialog.innerText()}`);
    // Wait for the notebook's kernel (the one named in its metadata) to be chosen and started.
    await page.waitForFunction(
      () => {
        const e = document.querySelector(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator");
        const name = document.querySelector(".jp-NotebookPanel .jp-KernelName");
        const st = e && e.getAttribute("data-status");
        return name && !/No Kernel/i.test(name.textContent) && st && !/starting|restarting|autorestarting|dead|terminating/.test(st);
      },
      null,
      { timeout: 120_000 },
    );
    // Then for its connection to settle. GoNB may report no status until it executes something
    // ("unknown"); JupyterLab queues the cells anyway, so a status that stays unsettled is only logged.
    await page
      .waitForFunction(
        () => {
          const st = document.querySelector(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator")?.getAttribute("data-status");
          return st === "idle" || st === "unknown";
        },
        null,
        { timeout: 60_000 },
      )
      .catch(() => log("the kernel status did not settle within 60 s; running the cells anyway"));
    const kernelName = await page.$eval(".jp-NotebookPanel .jp-KernelName", (e) => e.textContent.trim());
    const kernelStatus = await page.$eval(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator", (e) => e.getAttribute("data-status"));
    log(`kernel "${kernelName}" connected (status ${kernelStatus}); running all cells`);

    await page.click(".jp-NotebookPanel .jp-Notebook");
    await page.click('.lm-MenuBar-itemLabel:text-is("Run")');
    await page.click('.lm-Menu-itemLabel:text-is("Run All Cells")');

    const states = await waitForRun(page, expectations.length);
    log(`all ${states.length} code cells ran`);
    const windowing = await fetch(`http://127.0.0.1:${port}/lab/api/settings/@jupyterlab/notebook-extension:tracker?token=${token}`)
      .then((r) => r.json())
      .then((j) => j.settings && j.settings.windowingMode)
      .catch(() => "?");
    log(`notebook windowing mode: ${windowing}`);

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

    // Screenshots: the top, and the guarded-loss error (first raises-exception cell), with the
    // file browser closed so the notebook gets the width.
    if (await page.locator("#jp-left-stack").isVisible()) {
      await page.keyboard.press("Escape");
      await page.keyboard.press("Control+b"); // application:toggle-left-area
      await page.locator("#jp-left-stack").waitFor({ state: "hidden", timeout: 10_000 }).catch(() => {});
    }
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

    // Save from the browser (Ctrl+S), wait until the tab is no longer marked dirty and the file
    // holds the executed notebook, then check it with the same rules as CI.
    await page.keyboard.press("Escape");
    await page.keyboard.press("Control+s");
    await page
      .waitForFunction(() => !document.querySelector(".jp-mod-current.jp-mod-dirty, .lm-TabBar-tab.jp-mod-current.jp-mod-dirty"), null, {
        timeout: 30_000,
      })
      .catch(() => {});
    const saved = path.join(outDir, `${base}.executed.ipynb`);
    const saveDeadline = Date.now() + 30_000;
    let savedOK = false;
    while (!savedOK && Date.now() < saveDeadline) {
      try {
        const nb = JSON.parse(fs.readFileSync(nbCopy, "utf8"));
        savedOK = nb.cells.some((c) => c.cell_type === "code" && c.execution_count);
      } catch {
        /* not written yet, or being written */
      }
      if (!savedOK) await sleep(250);
    }
    if (!savedOK) fail("Ctrl+S did not save the executed notebook within 30 s");
    fs.copyFileSync(nbCopy, saved);
    const check = spawnSync(python, [path.join(notebooksDir, "nbcheck.py"), "--check-only", saved], {
      encoding: "utf8",
    });
    process.stdout.write(check.stdout);
    if (check.status !== 0) problems.push(`nbcheck --check-only on the browser-saved notebook failed:\n${check.stdout}${check.stderr}`);
    if (consoleErrors.length) log(`page errors (not fatal): ${consoleErrors.join(" | ")}`);

    if (problems.length) fail(problems.join("\n"));
    log(`PASS: ${notebookName} ran in JupyterLab with kernel "${kernelName}"; screenshot ${shot}`);
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
