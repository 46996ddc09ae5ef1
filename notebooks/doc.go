// Package notebooks holds the tests that execute the cifarlab notebooks (the *.ipynb files in
// this folder) with the real GoNB kernel, so that `go test ./...` checks them:
//
//   - TestNotebooks runs each notebook top to bottom through nbclient (nbcheck.py) with the
//     "Go (cifarlab, CPU)" kernelspec and checks the expectations stored in the cells' metadata;
//   - TestBrowser opens 01-reproduce.ipynb in JupyterLab with headless Chromium
//     (browser-test/run.mjs), runs all cells and checks what the page shows;
//   - TestCommittedOutputsPortable checks the committed outputs with nbcheck.py --check-only:
//     their expectations, and nothing of the machine that ran them (no ANSI escapes, no
//     checkout, home, temporary or venv paths, no GoNB temporary main.go).
//
// They need what kernel/setup.sh installs (the venv with JupyterLab and nbclient, the GoNB
// kernelspecs, playwright-core and Chromium). Without it they are skipped, unless CI is set,
// in which case they fail. The package has no code of its own.
package notebooks
