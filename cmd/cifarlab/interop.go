package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/interop"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func init() {
	register(command{
		name:    "import",
		summary: "import a PyTorch state_dict (torch.save .pth/.pt, or .safetensors) of a CIFAR ResNet-18, the cnn twin or airbench's make_net94 as a run",
		run:     runImport,
	})
	register(command{
		name:    "export",
		summary: "export a run's model for PyTorch: safetensors with PyTorch's names, and the Normalize line to use",
		run:     runExport,
	})
}

func runImport(args []string, stdout io.Writer) error {
	fs := newFlagSet("import", "--from FILE --checkpoint RUN_DIR [--arch resnet18|cnn|airbench94] [--dataset cifar10|cifar100] [--labels fine|coarse] "+
		"[--names pytorch-cifar|torchvision|cnn-twin|airbench94] [--normalize MEAN,MEAN,MEAN/STD,STD,STD|pytorch-cifar|lab] [--check [--data DIR]] [--json]", stdout)
	from := fs.String("from", "", "the PyTorch `FILE`: torch.save(model.state_dict(), FILE) (zip format, torch >= 1.6; a checkpoint dict with "+
		"'net', 'state_dict', 'model' or 'model_state_dict' too), or a .safetensors file; nothing in it is executed (required)")
	ckptDir := fs.String("checkpoint", "", "the run `DIR` to create, new or empty (required)")
	arch := fs.String("arch", cifarlib.ArchResNet18, "lab architecture: resnet18 (kuangliu's ResNet18 or torchvision's resnet18 with a "+
		"3x3 stem), cnn (the lab's cnn twin, bench/interop/models.py) or airbench94 (airbench 0.1.8's make_net94)")
	dataset := fs.String("dataset", "cifar10", "the dataset the model was trained on: cifar10 or cifar100 (its classes are the head width)")
	labels := fs.String("labels", "fine", "CIFAR-100 label set: fine or coarse")
	names := fs.String("names", "", "PyTorch naming: pytorch-cifar, torchvision, cnn-twin or airbench94 (default: detected from the keys)")
	normalize := fs.String("normalize", "", "the transforms.Normalize statistics the model was trained with, recorded by the run and "+
		"applied at its model's input: MEAN,MEAN,MEAN/STD,STD,STD, pytorch-cifar (kuangliu's std 0.2023,0.1994,0.2010) or lab (default: pytorch-cifar "+
		"for resnet18, lab for cnn, airbench's (the lab's CIFAR-10 statistics) for airbench94, or what a lab export recorded)")
	check := fs.Bool("check", false, "evaluate the imported run on the test split of --data and compare with the accuracy the file records")
	dataDir := fs.String("data", data.DefaultDir(), "CIFAR data `DIR` for --check ($"+data.DirEnv+")")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *from == "" || *ckptDir == "" {
		return &exitError{code: 2, err: fmt.Errorf("--from FILE and --checkpoint RUN_DIR are required")}
	}
	spec, err := data.SpecByName(*dataset, *labels)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	norm, err := interop.ParseNormalization(*normalize, interop.Normalization{Mean: spec.Mean, Std: spec.Std})
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--normalize: %w", err)}
	}
	rep, err := interop.Import(*from, *ckptDir, interop.ImportOptions{Arch: *arch, Spec: spec, Names: interop.Names(*names), Source: norm})
	if err != nil {
		return err
	}
	var eval *training.EvalResult
	if *check {
		if eval, err = checkImported(*ckptDir, *dataDir, spec); err != nil {
			return fmt.Errorf("the run %s was written; --check failed: %w", *ckptDir, err)
		}
	}
	return writeImport(stdout, rep, eval, *ckptDir, *dataDir, spec, *asJSON)
}

// writeImport reports an import (as JSON with asJSON): what was read and written, what --check
// measured (eval, when it ran) and what to run next.
func writeImport(stdout io.Writer, rep *interop.ImportReport, eval *training.EvalResult, ckptDir, dataDir string, spec data.Spec, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*interop.ImportReport
			Eval *training.EvalResult `json:"eval,omitempty"`
		}{rep, eval})
	}
	fmt.Fprintln(stdout, rep)
	if eval != nil {
		line := fmt.Sprintf("check: the lab measures %.2f%% on %d test images", 100*eval.Accuracy, eval.Examples)
		if rep.HasAcc {
			line += fmt.Sprintf("; the file records %.2f%%", rep.Acc)
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout, importNext(ckptDir, rep.Arch, dataDir, spec))
	return nil
}

// checkImported evaluates an imported run on the real test split (never synthetic data: the
// comparison is with an accuracy measured on CIFAR).
func checkImported(dir, dataDir string, spec data.Spec) (*training.EvalResult, error) {
	backend, err := backends.New(backends.Auto)
	if err != nil {
		return nil, err
	}
	ck, err := training.LoadCheckpoint(dir, backend)
	if err != nil {
		return nil, err
	}
	recs, err := data.LoadSplit(dataDir, spec, data.SplitTest)
	if err != nil {
		return nil, err
	}
	ctx, stop := training.InterruptContext(context.Background())
	defer stop()
	return training.Evaluate(ctx, backend, ck.Model, ck.Store, recs, training.EvalOptions{BatchSize: 100, Split: "test"})
}

func runExport(args []string, stdout io.Writer) error {
	fs := newFlagSet("export", "--run RUN_DIR --out FILE [--format safetensors] [--names pytorch-cifar|torchvision|cnn-twin|airbench94] [--backend cpu|cuda|go|auto] [--json]", stdout)
	runDir := fs.String("run", "", "the run `DIR` to export (required)")
	out := fs.String("out", "", "the `FILE` to write (required; written atomically)")
	format := fs.String("format", "safetensors", "file format: safetensors (what safetensors.torch.load_file reads)")
	names := fs.String("names", "", "PyTorch naming: pytorch-cifar (kuangliu's ResNet18, the default for resnet18), torchvision, cnn-twin (cnn) or airbench94 (make_net94's nn.Sequential)")
	backendName := fs.String("backend", backends.Auto, "compute backend used to load the run: auto, cpu, go or cuda")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *runDir == "" || *out == "" {
		return &exitError{code: 2, err: fmt.Errorf("--run RUN_DIR and --out FILE are required")}
	}
	if strings.ToLower(*format) != "safetensors" {
		return &exitError{code: 2, err: fmt.Errorf("--format %q: only safetensors is written (torch.load reads it with safetensors.torch.load_file)", *format)}
	}
	backend, err := backends.New(*backendName)
	if err != nil {
		return err
	}
	res, err := interop.Export(*runDir, *out, interop.ExportOptions{Names: interop.Names(*names), Backend: backend})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintln(stdout, res)
	return nil
}
