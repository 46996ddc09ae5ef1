// A JupyterLab tab left open, as an attendee who went home leaves it: docker/hub/test.sh's culling
// check. Headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core from
// notebooks/browser-test) logs in through the hub's login page, opens a notebook in the user's
// JupyterLab (its kernel starts; no cell runs) and stays there: JupyterLab keeps polling the server
// (kernels, sessions, contents) as it does in any open tab. Every 5 s it appends a line to EVENTS
// (JSON: the time, the kernel's status as the notebook shows it, a dialog's text when JupyterLab
// shows one, e.g. when the server is gone). It runs until it is killed.
//
//   node docker/hub/tab.mjs HUB_URL USER PASSWORD NOTEBOOK EVENTS

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const { chromium } = await import(path.join(here, "..", "..", "notebooks", "browser-test", "node_modules", "playwright-core", "index.mjs"));

const [hub, user, password, notebook, events] = process.argv.slice(2);
if (!events) {
  console.error("usage: node docker/hub/tab.mjs HUB_URL USER PASSWORD NOTEBOOK EVENTS");
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const record = (event) => fs.appendFileSync(events, JSON.stringify({ t: Date.now() / 1000, ...event }) + "\n");
const indicator = ".jp-NotebookPanel .jp-Notebook-ExecutionIndicator";

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking"],
});
const stop = async () => {
  await browser.close().catch(() => {});
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // The attendee's login, on the hub's own page.
  await page.goto(`${hub}/hub/login`);
  await page.fill("input[name=username]", user);
  await page.fill("input[name=password]", password);
  await Promise.all([page.waitForNavigation({ timeout: 120_000 }), page.press("input[name=password]", "Enter")]);
  if (page.url().includes("/hub/login")) throw new Error(`the login did not succeed: still at ${page.url()}`);
  // The notebook in the user's JupyterLab (a fresh workspace); its kernel starts.
  await page.goto(`${hub}/user/${user}/lab/tree/${encodeURIComponent(notebook)}?reset`, { timeout: 120_000 });
  await page.waitForSelector(".jp-NotebookPanel .jp-Notebook .jp-Cell", { timeout: 120_000 });
  await page.waitForFunction(
    (sel) => ["idle", "unknown"].includes(document.querySelector(sel)?.getAttribute("data-status")),
    indicator,
    { timeout: 120_000 },
  );
  record({ event: "open", url: page.url(), kernel: await page.$eval(indicator, (e) => e.getAttribute("data-status")) });
  for (;;) {
    await sleep(5000);
    const kernel = await page.$eval(indicator, (e) => e.getAttribute("data-status")).catch(() => null);
    const dialog = await page.$eval(".jp-Dialog", (e) => e.innerText.replace(/\s+/g, " ").slice(0, 300)).catch(() => null);
    record({ event: "poll", kernel, dialog });
  }
} catch (e) {
  record({ event: "error", error: String(e) });
  console.error(`tab.mjs: ${e}`);
  await browser.close().catch(() => {});
  process.exit(1);
}
