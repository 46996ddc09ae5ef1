package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

func init() {
	register(command{
		name:    "verify",
		summary: "check a data folder against the official checksums, offline, and record it; --status: say what it holds",
		run:     runVerify,
	})
}

func runVerify(args []string, stdout io.Writer) error {
	fs := newFlagSet("verify", "[--data DIR] [--dataset cifar10|cifar100] [--archive FILE] [--status [--json]]\n\n"+
		"Checks the CIFAR files of DIR against the official checksums without downloading anything, and on\n"+
		"success records it (cifarlab-verified.json), so that the notebooks, training and doctor say\n"+
		"\"real, verified\". What is checked:\n"+
		"  python layout (cifar-10-batches-py/, cifar-100-python/): every file's MD5, as torchvision pins it.\n"+
		"  binary layout (cifar-10-batches-bin/, cifar-100-binary/): only the official archive's SHA-256 is\n"+
		"         known, not its files' checksums: pass the archive (--archive, or leave it in DIR) and each\n"+
		"         file is compared with the archive's copy. Without it only the files' sizes can be compared.\n"+
		"Unverified real data is still used as real data; verifying only changes what is said of it.\n", stdout)
	dataDir := fs.String("data", data.DefaultDir(), "data `DIR` holding the dataset's folder ($"+data.DirEnv+")")
	dataset := fs.String("dataset", "", "dataset: cifar10 or cifar100 (default: each one present in DIR)")
	archive := fs.String("archive", "", "the official archive `FILE` (e.g. cifar-10-binary.tar.gz) to check the files against (default: DIR/<archive name> when it is there)")
	status := fs.Bool("status", false, "only say, in one line per dataset, what DIR holds (real verified, real unverified, synthetic or nothing); checks nothing more, writes nothing")
	asJSON := fs.Bool("json", false, "with --status: say it as JSON, with each split's image count and a line without paths (the notebooks' metadata names their data with it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	specs := []data.Spec{data.CIFAR10(), data.CIFAR100(data.LabelsFine)}
	if *dataset != "" {
		spec, err := data.SpecByName(*dataset, "")
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--dataset: %w", err)}
		}
		specs = []data.Spec{spec}
	}
	if *asJSON && !*status {
		return &exitError{code: 2, err: errors.New("--json goes with --status")}
	}
	if *status && *asJSON {
		return writeStatusJSON(stdout, *dataDir, specs)
	}
	if *status {
		for _, spec := range specs {
			fmt.Fprintln(stdout, data.StateOf(*dataDir, spec))
		}
		return nil
	}
	return verifyData(stdout, *dataDir, *dataset != "", *archive, specs)
}

// verifyData verifies each dataset of specs in dataDir that holds real data (each one when named,
// with its archive when given) and says what it checked; any that is not verified fails it.
func verifyData(stdout io.Writer, dataDir string, named bool, archive string, specs []data.Spec) error {
	var checked []data.Spec
	for _, spec := range specs {
		if named || data.StateOf(dataDir, spec).Real() {
			checked = append(checked, spec)
		}
	}
	if len(checked) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("--data %s holds no real CIFAR data to verify: %s; %s",
			dataDir, data.StateOf(dataDir, specs[0]), data.StateOf(dataDir, specs[1]))}
	}
	if archive != "" && len(checked) > 1 {
		return &exitError{code: 2, err: fmt.Errorf("--archive needs --dataset: the archive is of one dataset")}
	}
	var failed error
	for _, spec := range checked {
		what, err := data.VerifyFolder(dataDir, spec, archive)
		st := data.StateOf(dataDir, spec)
		fmt.Fprintln(stdout, st)
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "  checked: %s\n", what)
		case errors.Is(err, data.ErrNotOfficial):
			fmt.Fprintf(stdout, "  real data, but NOT verifiable as the official files: %v\n", err)
			failed = errors.Join(failed, fmt.Errorf("%s in %s: not the official files", spec.Name, st.Dir))
		default:
			fmt.Fprintf(stdout, "  not verified: %v\n", err)
			failed = errors.Join(failed, fmt.Errorf("%s in %s: not verified", spec.Name, dataDir))
		}
	}
	if failed != nil {
		return &exitError{code: 1, err: failed}
	}
	return nil
}
