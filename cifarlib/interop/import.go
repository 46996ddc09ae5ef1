package interop

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// ImportOptions configures Import.
type ImportOptions struct {
	// Arch is the lab architecture: "resnet18" (the default), "cnn" or "airbench94".
	Arch string
	// Spec is the dataset the model was trained on; its classes are the head width (CIFAR10()
	// when zero).
	Spec data.Spec
	// Names is the PyTorch naming; "" detects it from the keys.
	Names Names
	// Source is the normalisation the model was trained with. Zero means: the file's own
	// metadata when it is a safetensors file the lab exported, else kuangliu's
	// (PytorchCIFARNormalization) for resnet18, the lab's for the cnn twin and airbench's
	// (AirbenchNormalization) for airbench94.
	Source Normalization
}

// ImportReport says what Import read and wrote.
type ImportReport struct {
	// File is the PyTorch file, Dir the run folder written.
	File, Dir string
	// Arch, Names and Spec are the imported model's.
	Arch  string
	Names Names
	Spec  data.Spec
	// Wrapper, Prefix, Acc/HasAcc and Epoch/HasEpoch are the state_dict's (see StateDict).
	Wrapper, Prefix string
	Acc             float64
	HasAcc          bool
	Epoch           int
	HasEpoch        bool
	// Source is the normalisation the file's model expects, which the run records and its
	// model applies at its input (cifarlib.InputNormalization); Lab is the dataset's, which the
	// lab's data pipeline applies before it.
	Source, Lab Normalization
	// BatchNorms is the number of batch-norm layers carried, BatchesTracked the largest
	// num_batches_tracked, which set their averaging weights.
	BatchNorms     int
	BatchesTracked int64
	// Tensors is the number of tensors imported.
	Tensors int
}

// String is the summary the CLI prints.
func (r *ImportReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported %s (%s naming, %d tensors", r.File, r.Names, r.Tensors)
	if r.Wrapper != "" {
		fmt.Fprintf(&b, ", state_dict under %q", r.Wrapper)
	}
	if r.Prefix != "" {
		fmt.Fprintf(&b, ", prefix %q removed", r.Prefix)
	}
	fmt.Fprintf(&b, ") into %s: %s for %s\n", r.Dir, r.Arch, r.Spec.ID())
	if r.Source != r.Lab {
		fmt.Fprintf(&b, "normalisation: %v, the file's model's, recorded by the run and applied at its input "+
			"(weights unchanged; the lab's data is %v)\n", r.Source, r.Lab)
	} else {
		fmt.Fprintf(&b, "normalisation: %v, the lab's\n", r.Lab)
	}
	if r.BatchNorms > 0 {
		fmt.Fprintf(&b, "batch norm: %d layers, running statistics carried, averaging weight %d (num_batches_tracked)", r.BatchNorms, r.BatchesTracked)
	} else {
		fmt.Fprintf(&b, "batch norm: none in this model")
	}
	if r.HasAcc || r.HasEpoch {
		fmt.Fprintf(&b, "\nthe file records")
		if r.HasAcc {
			fmt.Fprintf(&b, " acc %.2f%%", r.Acc)
		}
		if r.HasEpoch {
			fmt.Fprintf(&b, " epoch %d", r.Epoch)
		}
	}
	return b.String()
}

// Import reads the PyTorch state_dict in file (torch.save zip or .safetensors) and writes the
// run folder dir for it (see package doc). Nothing is written on error.
func Import(file, dir string, opts ImportOptions) (*ImportReport, error) {
	arch := opts.Arch
	if arch == "" {
		arch = cifarlib.ArchResNet18
	}
	spec := opts.Spec
	if spec.Name == "" {
		spec = data.CIFAR10()
	}
	sd, err := ReadStateDict(file)
	if err != nil {
		return nil, err
	}
	lab := Normalization{Mean: spec.Mean, Std: spec.Std}
	src, err := sourceNormalization(sd, arch, opts.Source, lab)
	if err != nil {
		return nil, err
	}
	c, err := convertStateDict(sd, arch, opts.Names, spec.NumClasses, src)
	if err != nil {
		return nil, err
	}
	m, err := cifarlib.NewModel(spec, arch).Input(cifarlib.InputNormalization(src)).Done()
	if err != nil {
		return nil, err
	}
	store, err := newStore(c.variables)
	if err != nil {
		return nil, err
	}
	setSourceNames(store, c.names)
	if err := training.WriteImportedRun(dir, m, store, file); err != nil {
		return nil, err
	}
	return &ImportReport{File: file, Dir: dir, Arch: arch, Names: c.names, Spec: spec, Wrapper: sd.Wrapper, Prefix: sd.Prefix,
		Acc: sd.Acc, HasAcc: sd.HasAcc, Epoch: sd.Epoch, HasEpoch: sd.HasEpoch, Source: src, Lab: lab,
		BatchNorms: c.batchNorms, BatchesTracked: c.batches, Tensors: len(c.variables)}, nil
}

// sourceNormalization is the normalisation the file's model expects: the option, else the
// statistics a lab export recorded, else the naming's usual ones.
func sourceNormalization(sd *StateDict, arch string, opt, lab Normalization) (Normalization, error) {
	if opt != (Normalization{}) {
		return opt, nil
	}
	if m, s := sd.Metadata[MetaNormalizeMean], sd.Metadata[MetaNormalizeStd]; m != "" || s != "" {
		mean, err1 := cifarlib.ParseStats(m)
		std, err2 := cifarlib.ParseStats(s)
		if err1 != nil || err2 != nil {
			return Normalization{}, &RefusalError{File: sd.File, Kind: ErrNormalization, Detail: fmt.Sprintf("metadata %s=%q, %s=%q: "+
				"want three numbers each", MetaNormalizeMean, m, MetaNormalizeStd, s)}
		}
		return Normalization{Mean: mean, Std: std}, nil
	}
	switch arch {
	case cifarlib.ArchCNN:
		return lab, nil
	case cifarlib.ArchAirbench94:
		return AirbenchNormalization, nil
	}
	return PytorchCIFARNormalization, nil
}

// ParseNormalization parses "MEAN,MEAN,MEAN/STD,STD,STD" (the CLI's --normalize) or the name
// "pytorch-cifar" (kuangliu's statistics) or "lab" (returned as the zero value's complement:
// lab, passed in).
func ParseNormalization(s string, lab Normalization) (Normalization, error) {
	switch s {
	case "":
		return Normalization{}, nil
	case "pytorch-cifar":
		return PytorchCIFARNormalization, nil
	case "lab":
		return lab, nil
	}
	m, sd, ok := strings.Cut(s, "/")
	mean, err1 := cifarlib.ParseStats(m)
	std, err2 := cifarlib.ParseStats(sd)
	if !ok || err1 != nil || err2 != nil {
		return Normalization{}, fmt.Errorf("normalisation %q: want MEAN,MEAN,MEAN/STD,STD,STD (e.g. 0.4914,0.4822,0.4465/0.2023,0.1994,0.2010), "+
			"pytorch-cifar or lab", s)
	}
	return Normalization{Mean: mean, Std: std}, nil
}
