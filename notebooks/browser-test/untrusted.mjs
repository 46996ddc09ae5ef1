// The committed notebook as a reader opens it: untrusted (a fresh JupyterLab's notary has never
// seen it), where JupyterLab renders no SVG and shows a chart's PNG, else its text. Then
// trusted and saved, which must change nothing in the file.

import fs from "node:fs";
import path from "node:path";
import { fail, hideLeftArea, isDirty, log, mapCodeCells, openNotebook, save, sleep } from "./jupyterlab.mjs";

// chartsPerCell counts, for each code cell of the notebook file, its outputs with a bitmap (a
// PNG, or a JPEG of photographs: "png" below) and with an SVG.
function chartsPerCell(file) {
  const nb = JSON.parse(fs.readFileSync(file, "utf8"));
  return nb.cells
    .filter((c) => c.cell_type === "code")
    .map((c) => {
      const data = (c.outputs || []).map((o) => o.data || {});
      return { png: data.filter((d) => "image/png" in d || "image/jpeg" in d).length, svg: data.filter((d) => "image/svg+xml" in d).length };
    });
}

// shownImages counts the images each code cell's outputs show, by kind.
async function shownImages(page) {
  return mapCodeCells(page, (cell) =>
    cell.evaluate((c) => ({
      png: c.querySelectorAll('.jp-OutputArea-output img[src^="data:image/png"], .jp-OutputArea-output img[src^="data:image/jpeg"]').length,
      svg: c.querySelectorAll('.jp-OutputArea-output img[src^="data:image/svg+xml"], .jp-OutputArea-output svg').length,
    })),
  );
}

// trust runs "Trust Notebook" from the command palette and accepts its dialog, as a reader does.
async function trust(page) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Shift+C");
  const input = page.locator(".lm-CommandPalette-input");
  await input.waitFor({ timeout: 10_000 });
  await input.fill("Trust Notebook");
  await page.locator('.lm-CommandPalette-item:has-text("Trust Notebook")').first().click();
  await page.locator(".jp-Dialog .jp-mod-accept").click({ timeout: 10_000 });
  await page.locator(".jp-Dialog").waitFor({ state: "detached", timeout: 10_000 });
  await sleep(1000); // the outputs re-render
}

// firstDifference says where two files first differ, by line.
function firstDifference(a, b) {
  const la = a.split("\n");
  const lb = b.split("\n");
  for (let i = 0; i < Math.max(la.length, lb.length); i++) {
    if (la[i] !== lb[i]) return `line ${i + 1}: committed ${JSON.stringify((la[i] ?? "").trim().slice(0, 100))}, saved ${JSON.stringify((lb[i] ?? "").trim().slice(0, 100))}`;
  }
  return "none";
}

// checkOpened opens name (the committed file src, copied to copy) untrusted and checks that every
// chart shows as its PNG (a picture of images: its JPEG) and that opening dirties nothing; then trusts it (the charts show as SVG),
// saves it and checks that the file is byte for byte the committed one. Screenshots:
// <base>-untrusted.png and <base>-trusted.png at the first chart. It returns the problems found.
export async function checkOpened(context, { port, token, name, src, copy, outDir }) {
  const base = path.basename(src, ".ipynb");
  const problems = [];
  const page = await context.newPage();
  try {
    const kernel = await openNotebook(page, { port, token, name });
    await hideLeftArea(page);
    await sleep(1000);
    const want = chartsPerCell(src);
    const firstChart = want.findIndex((c) => c.png > 0 || c.svg > 0);
    const shown = await shownImages(page);
    want.forEach((w, i) => {
      if (shown[i].png !== w.png) {
        problems.push(`${name} code cell ${i + 1}: ${w.png} output(s) with a PNG or JPEG in the file, ${shown[i].png} shown as such by an untrusted JupyterLab`);
      }
      if (w.svg > w.png) problems.push(`${name} code cell ${i + 1}: ${w.svg - w.png} SVG output(s) without a PNG or JPEG, which an untrusted JupyterLab shows as text`);
      if (shown[i].svg) problems.push(`${name} code cell ${i + 1}: an untrusted JupyterLab shows ${shown[i].svg} SVG image(s)?`);
    });
    const shot = async (suffix) => {
      if (firstChart < 0) return;
      const cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell").nth(firstChart);
      await cell.scrollIntoViewIfNeeded();
      await cell.evaluate((e) => e.querySelector(".jp-OutputArea")?.scrollIntoView({ block: "start" }));
      await sleep(500);
      const file = path.join(outDir, `${base}-${suffix}.png`);
      await page.screenshot({ path: file });
      log(`screenshot: ${file}`);
    };
    await shot("untrusted");
    if (await isDirty(page)) problems.push(`${name}: opening it (kernel "${kernel}") marked it modified`);

    await trust(page);
    const trusted = await shownImages(page);
    want.forEach((w, i) => {
      if (trusted[i].svg !== w.svg) problems.push(`${name} code cell ${i + 1}: trusted, ${trusted[i].svg} of its ${w.svg} SVG output(s) shown as SVG`);
    });
    await shot("trusted");
    await save(page, copy);
    const committed = fs.readFileSync(src, "utf8");
    const saved = fs.readFileSync(copy, "utf8");
    if (saved !== committed) {
      const keep = path.join(outDir, `${base}.saved.ipynb`);
      fs.writeFileSync(keep, saved);
      problems.push(`${name}: trusted and saved in JupyterLab, the file changed (kept as ${keep}); first difference at ${firstDifference(committed, saved)}`);
    }
    const charts = want.reduce((n, c) => n + c.png, 0);
    log(`${name}: ${charts} chart(s) shown as PNG or JPEG untrusted and as SVG trusted; saved ${saved === committed ? "unchanged" : "CHANGED"}`);
  } catch (err) {
    if (err.name === "TimeoutError") fail(`${name}: ${err.message}`);
    throw err;
  } finally {
    await page.close().catch(() => {});
  }
  return problems;
}
