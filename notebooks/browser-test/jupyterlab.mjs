// JupyterLab and Chromium for the browser tests: a server on 127.0.0.1 with a token, and the
// page actions the tests share (open a notebook and wait for its kernel, wait for a run, save).

import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

export class TestFailure extends Error {}

export function fail(msg) {
  throw new TestFailure(msg);
}

export function log(msg) {
  process.stdout.write(`[browser-test ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function httpStatus(url) {
  try {
    const res = await fetch(url, { redirect: "manual" });
    return res.status;
  } catch {
    return 0;
  }
}

// startJupyter starts JupyterLab on 127.0.0.1:port serving work.root, its log in logFile. Its
// notebook notary keeps signatures in memory: every notebook opens untrusted, as a fresh
// JupyterLab opens a notebook from a clone or a download.
export async function startJupyter({ python, work, port, token, logFile }) {
  const jupyterLog = fs.openSync(logFile, "w");
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
    "--NotebookNotary.db_file=:memory:",
  ];
  if (process.getuid && process.getuid() === 0) args.push("--allow-root"); // CI containers run as root
  const env = { ...process.env, JUPYTER_CONFIG_DIR: work.config, JUPYTER_RUNTIME_DIR: work.runtime };
  const proc = spawn(python, args, { env, stdio: ["ignore", jupyterLog, jupyterLog], detached: true });
  proc.on("error", (err) => log(`jupyter failed to start: ${err.message}`));
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) fail(`JupyterLab exited with status ${proc.exitCode}; see ${logFile}`);
    if ((await httpStatus(`http://127.0.0.1:${port}/api/status?token=${token}`)) === 200) return proc;
    await sleep(500);
  }
  fail("JupyterLab did not answer on /api/status within 90 s");
}

export function stopJupyter(proc) {
  if (!proc || proc.exitCode !== null) return;
  try {
    process.kill(-proc.pid, "SIGTERM");
  } catch {
    /* already gone */
  }
}

// writeLabSettings: no autosave (the tests save explicitly), no virtual scrolling (every cell
// of the notebook is in the DOM), no news.
export function writeLabSettings(dir) {
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

const indicator = ".jp-NotebookPanel .jp-Notebook-ExecutionIndicator";

// openNotebook opens name in page, in a fresh workspace, and waits until its kernel (the one
// its metadata names) is started and its status settled; it returns the kernel's name.
export async function openNotebook(page, { port, token, name }) {
  await page.goto(`http://127.0.0.1:${port}/lab/tree/${encodeURIComponent(name)}?reset&token=${token}`);
  await page.waitForSelector(".jp-NotebookPanel .jp-Notebook .jp-Cell", { timeout: 120_000 });
  // A kernel dialog means the notebook's kernel could not be started.
  const dialog = await page.waitForSelector(".jp-Dialog", { timeout: 3000 }).catch(() => null);
  if (dialog) fail(`JupyterLab showed a dialog instead of starting the kernel: ${await dialog.innerText()}`);
  await page.waitForFunction(
    (sel) => {
      const e = document.querySelector(sel);
      const kernel = document.querySelector(".jp-NotebookPanel .jp-KernelName");
      const st = e && e.getAttribute("data-status");
      return kernel && !/No Kernel/i.test(kernel.textContent) && st && !/starting|restarting|autorestarting|dead|terminating/.test(st);
    },
    indicator,
    { timeout: 120_000 },
  );
  // GoNB may report no status until it executes something ("unknown"); JupyterLab queues the
  // cells anyway, so a status that stays unsettled is only logged.
  await page
    .waitForFunction((sel) => ["idle", "unknown"].includes(document.querySelector(sel)?.getAttribute("data-status")), indicator, {
      timeout: 60_000,
    })
    .catch(() => log("the kernel status did not settle within 60 s"));
  return page.$eval(".jp-NotebookPanel .jp-KernelName", (e) => e.textContent.trim());
}

// mapCodeCells scrolls each code cell of the notebook into view (JupyterLab skips rendering
// cells outside the viewport) and returns what fn gives for its locator, in order.
export async function mapCodeCells(page, fn) {
  const cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell");
  const out = [];
  for (let i = 0; i < (await cells.count()); i++) {
    const cell = cells.nth(i);
    await cell.scrollIntoViewIfNeeded();
    out.push(await fn(cell));
  }
  return out;
}

export async function cellStates(page) {
  return page.$$eval(".jp-NotebookPanel .jp-Notebook .jp-CodeCell", (cells) =>
    cells.map((c) => {
      const prompt = c.querySelector(".jp-InputArea-prompt");
      return { prompt: prompt ? prompt.textContent.trim() : "" };
    }),
  );
}

// waitForRun waits until nCells code cells show an execution count and the kernel is idle.
export async function waitForRun(page, nCells, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let lastReport = 0;
  while (Date.now() < deadline) {
    const states = await cellStates(page);
    const pending = states.filter((s) => s.prompt === "[*]:").length;
    const done = states.filter((s) => /^\[\d+\]:$/.test(s.prompt)).length;
    const status = await page.$eval(indicator, (e) => e.getAttribute("data-status")).catch(() => null);
    if (Date.now() - lastReport > 30_000) {
      log(`running: ${done}/${nCells} cells done, ${pending} pending, kernel ${status}`);
      lastReport = Date.now();
    }
    if (pending === 0 && done === nCells && status === "idle") return states;
    await sleep(1000);
  }
  const states = await cellStates(page);
  fail(`cells still running after ${timeoutMs / 1000}s: prompts ${states.map((s) => s.prompt).join(" ")}`);
}

// hideLeftArea closes the file browser, so that the notebook gets the page's width.
export async function hideLeftArea(page) {
  if (await page.locator("#jp-left-stack").isVisible()) {
    await page.keyboard.press("Escape");
    await page.keyboard.press("Control+b"); // application:toggle-left-area
    await page.locator("#jp-left-stack").waitFor({ state: "hidden", timeout: 10_000 }).catch(() => {});
  }
}

export async function isDirty(page) {
  return page.evaluate(() => !!document.querySelector(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty"));
}

// save saves the current notebook from the browser (Ctrl+S) and waits until the file was
// written (its modification time changed) and the tab is no longer marked dirty.
export async function save(page, file) {
  const before = fs.statSync(file).mtimeMs;
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+s");
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (fs.statSync(file).mtimeMs !== before && !(await isDirty(page))) return;
    await sleep(250);
  }
  fail(`Ctrl+S did not save ${path.basename(file)} within 30 s`);
}

// writeCodeNotebook writes to file a notebook of code cells with the given sources (ids
// PREFIX-0, PREFIX-1, ...) for the Go kernelspec kernel.
export function writeCodeNotebook(file, kernel, prefix, sources) {
  const nb = {
    cells: sources.map((source, i) => ({ cell_type: "code", execution_count: null, id: `${prefix}-${i}`, metadata: {}, outputs: [], source })),
    metadata: { kernelspec: { display_name: "Go (cifarlab, CPU)", language: "go", name: kernel } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  fs.writeFileSync(file, JSON.stringify(nb, null, 1) + "\n");
}

// svgTexts returns the texts of an SVG document's <text> elements.
export function svgTexts(svg) {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
}

// measureChart draws an SVG chart in page, as JupyterLab shows a trusted one, and measures it
// with the browser's fonts: its width (CSS px), the width of its plotting area (its horizontal
// grid lines' span) and the texts drawn more than 1 px outside it (a clipped title or legend),
// each with how far it sticks out.
export async function measureChart(page, svg) {
  return page.evaluate((doc) => {
    const box = document.createElement("div");
    box.style.cssText = "position:absolute;left:0;top:0;background:#fff";
    box.innerHTML = doc.replace(/^<\?xml[^>]*>/, "");
    document.body.appendChild(box);
    try {
      const root = box.querySelector("svg").getBoundingClientRect();
      let plot = 0;
      for (const p of box.querySelectorAll("path")) {
        const r = p.getBoundingClientRect();
        if (/stroke:#808080/.test(p.getAttribute("style") || "") && r.height < 1) plot = Math.max(plot, r.width);
      }
      const outside = [];
      for (const t of box.querySelectorAll("text")) {
        const r = t.getBoundingClientRect();
        const out = Math.max(root.left - r.left, r.right - root.right, root.top - r.top, r.bottom - root.bottom);
        if (out > 1) outside.push(`${t.textContent} (${out.toFixed(1)} px)`);
      }
      return { width: root.width, plot, outside };
    } finally {
      box.remove();
    }
  }, svg);
}
