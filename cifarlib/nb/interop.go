package nb

import (
	"fmt"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/interop"
)

// Import imports a PyTorch state_dict (a torch.save file or .safetensors: see package
// interop; nothing in the file is executed) as the run called name, which Load, LoadFor and
// Transfer then use like a run Fit trained: PyTorch's `model.load_state_dict(torch.load(FILE,
// weights_only=True))`. A previous run of that name is replaced, so running the cell again gives
// the same run. opts.Spec defaults to the lab's dataset (the one the file's model was trained
// on, which sets the head width); opts.Arch to resnet18. It prints the import's report.
func (l *Lab) Import(name, file string, opts interop.ImportOptions) (*interop.ImportReport, error) {
	dir, err := l.RunDir(name)
	if err != nil {
		return nil, err
	}
	if opts.Spec.Name == "" {
		opts.Spec = l.Spec
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("nb: removing the previous run %q: %w", name, err)
	}
	rep, err := interop.Import(file, dir, opts)
	if err != nil {
		return nil, err
	}
	shown := *rep
	shown.File, shown.Dir = shownPath(rep.File), shownPath(rep.Dir)
	fmt.Fprintf(output(), "run %q: %v\n", name, &shown)
	return rep, nil
}

// Export writes the model of the run called name as a safetensors file for PyTorch, with the
// PyTorch naming names ("" for the architecture's usual one): `model.load_state_dict(
// safetensors.torch.load_file(file))` loads it with strict=True. It prints the
// transforms.Normalize(...) line the PyTorch side must use.
func (l *Lab) Export(name, file string, names interop.Names) (*interop.ExportResult, error) {
	dir, err := l.existingRun(name)
	if err != nil {
		return nil, err
	}
	res, err := interop.Export(dir, file, interop.ExportOptions{Names: names, Backend: l.Backend})
	if err != nil {
		return nil, err
	}
	shown := *res
	shown.File, shown.Run = shownPath(res.File), shownPath(res.Run)
	fmt.Fprintf(output(), "run %q: %v\n", name, &shown)
	return res, nil
}
