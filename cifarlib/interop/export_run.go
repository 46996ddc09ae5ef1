package interop

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// Metadata keys Export writes into the safetensors header (besides "format": "pt").
const (
	MetaNormalizeMean = "normalize_mean" // "0.4914,0.4822,0.4465"
	MetaNormalizeStd  = "normalize_std"  // "0.247,0.2435,0.2616"
	MetaTransforms    = "transforms"     // "transforms.Normalize((...), (...))"
	MetaArch          = "cifarlab_model"
	MetaNames         = "cifarlab_names"
	MetaDataset       = "cifarlab_dataset"
)

// ExportOptions configures Export.
type ExportOptions struct {
	// Names is the PyTorch naming ("" for an imported run's source naming, else the
	// architecture's default: pytorch-cifar for resnet18, cnn-twin for cnn).
	Names Names
	// Backend runs the model once to load its variables ("go" when nil).
	Backend compute.Backend
}

// ExportResult says what Export wrote.
type ExportResult struct {
	// File is the safetensors file, Run the run folder it came from.
	File, Run string
	// Arch, Names and NumClasses are the model's.
	Arch       string
	Names      Names
	NumClasses int
	// Tensors is the number of tensors written.
	Tensors int
	// Normalization is what the PyTorch side must feed the model: the run's own (an imported
	// run's source normalisation, kept through fine-tuning), else its dataset's.
	Normalization Normalization
}

// String is the summary the CLI prints: what was written and the Normalize line to use. The
// PyTorch line is Python to paste: a File that names an environment variable ($CIFARLAB_DATA/...,
// as a notebook shows it) is expanded with os.path.expandvars, since Python does not expand it.
func (r *ExportResult) String() string {
	load := fmt.Sprintf("model.load_state_dict(safetensors.torch.load_file(%s))", pythonString(r.File))
	if strings.Contains(r.File, "$") {
		load = fmt.Sprintf("import os; model.load_state_dict(safetensors.torch.load_file(os.path.expandvars(%s)))", pythonString(r.File))
	}
	return fmt.Sprintf("exported %s (%s, %d classes) to %s: %d tensors with %s's names\n"+
		"PyTorch: %s, with inputs normalised by\n  %v",
		r.Run, r.Arch, r.NumClasses, r.File, r.Tensors, r.Names, load, r.Normalization)
}

// pythonString is s as a Python string literal: Go's quoting, which Python reads the same for
// ASCII text; other characters are written as \u or \U escapes, which both read the same.
func pythonString(s string) string { return strconv.QuoteToASCII(s) }

// Export writes the model of the run in runDir to out (a safetensors file, written atomically)
// with PyTorch's names and layouts: float32 tensors, int64 num_batches_tracked, and metadata
// "format": "pt" plus the normalisation the model expects.
func Export(runDir, out string, opts ExportOptions) (*ExportResult, error) {
	backend := opts.Backend
	if backend == nil {
		var err error
		if backend, err = backends.New(backends.Go); err != nil {
			return nil, err
		}
	}
	ck, err := training.LoadCheckpoint(runDir, backend)
	if err != nil {
		return nil, err
	}
	m := ck.Model
	names := opts.Names
	if names == "" {
		names = sourceNames(ck.Store) // an imported run's own
	}
	if names == "" {
		names = DefaultNames(m.Arch)
	}
	if _, err := keyMap(m.Arch, names, m.NumClasses); err != nil {
		return nil, err
	}
	vars, err := runVariables(ck.Trained)
	if err != nil {
		return nil, fmt.Errorf("interop: %s: %w", runDir, err)
	}
	ts, err := toTorch(vars, m.Arch, names, m.NumClasses)
	if err != nil {
		return nil, err
	}
	norm := Normalization(m.Normalization()) // the run's own: an imported model's, else its dataset's
	meta := map[string]string{"format": "pt", MetaNormalizeMean: cifarlib.JoinStats(norm.Mean), MetaNormalizeStd: cifarlib.JoinStats(norm.Std),
		MetaTransforms: norm.String(), MetaArch: m.Arch, MetaNames: string(names), MetaDataset: m.Spec.ID()}
	if err := safetensors.WriteFile(out, ts, meta); err != nil {
		return nil, err
	}
	return &ExportResult{File: out, Run: runDir, Arch: m.Arch, Names: names, NumClasses: m.NumClasses, Tensors: len(ts),
		Normalization: norm}, nil
}

// runVariables runs the model once on a blank image, which loads every variable of the
// checkpoint into the store, and returns them by path.
func runVariables(t *training.Trained) (map[string]Variable, error) {
	blank := tensors.FromFlatDataAndDimensions(make([]float32, data.ImageBytes), 1, 32, 32, 3)
	if _, err := t.Logits(blank); err != nil {
		return nil, err
	}
	vars := map[string]Variable{}
	for v := range t.Store.IterVariables() {
		value, err := v.Value()
		if err != nil {
			return nil, err
		}
		flat, err := tensors.CopyFlatData[float32](value)
		if err != nil {
			continue // not a float32 variable (the global step)
		}
		vars[v.Path()] = Variable{Path: v.Path(), Shape: value.Shape().Dimensions, Values: flat}
	}
	return vars, nil
}
