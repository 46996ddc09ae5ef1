// Package nb is cifarlib in a notebook: the helpers that make each cell of the cifarlab
// notebooks one step of the story, a few lines that read like the PyTorch lines they replace.
//
//   - Open loads what every cell needs (the kernel's backend, the data, the architecture to
//     train) into a Lab; Lab.Fit trains into a named run folder and Lab.Load gets it back in a
//     later cell (GoNB runs every cell as a new program) instead of training again. In a
//     notebook, Fit and a loaded run's Evaluate run in the kernel's lab process, which keeps
//     the backend, the data and the compiled programs from cell to cell (LabProcessEnv).
//   - Check and Must stop a cell with an error, as an uncaught exception stops a Python cell;
//     CellTime prints how long the cell took.
//   - Show displays cifarlib's values richly: summaries and evaluations as tables, histories
//     and label statistics as charts drawn with gonum/plot, image grids: each an Image, one
//     output with an SVG (a trusted JupyterLab shows it), a PNG or JPEG (an untrusted one,
//     GitHub, nbviewer and nbconvert show it) and its text, without scripts.
//
// Outside a notebook (a test, a terminal) everything falls back to plain text on Output.
package nb
