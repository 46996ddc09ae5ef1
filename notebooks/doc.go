// Package notebooks holds the tests that execute the cifarlab notebooks (the *.ipynb files in
// this folder) with the real GoNB kernel, so that `go test ./...` checks them:
//
//   - TestNotebooks runs each notebook top to bottom through nbclient (nbcheck.py) with the
//     "Go (cifarlab, CPU)" kernelspec and checks the expectations stored in the cells' metadata;
//   - TestBrowser opens every notebook untrusted in JupyterLab with headless Chromium
//     (browser-test/run.mjs): its charts show, and trusted and saved it stays byte for byte the
//     same; it looks at a live chart after its first point, and runs all cells of
//     01-reproduce.ipynb and checks what the page shows;
//   - TestCommittedOutputsPortable checks the committed outputs with nbcheck.py --check-only
//     --form: their expectations, nothing of the machine that ran them (no ANSI escapes, no
//     checkout, home, temporary or venv paths, no GoNB temporary main.go), and the form
//     JupyterLab saves;
//   - TestRegenerateNamesItsData: regenerate.sh refuses a data folder without real data.
//
// They need what kernel/setup.sh installs (the venv with JupyterLab and nbclient, the GoNB
// kernelspecs, playwright-core and Chromium). Without it they are skipped, unless CI is set,
// in which case they fail. The package has no code of its own.
package notebooks
