package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/sweep"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
)

// flagOf is the flag of `cifarlab train` that sets the Settings field path (a
// training.Field's Path; paths checked together, "A/B", become "--a/--b"), or "".
func flagOf(path string) string {
	var flags []string
	for p := range strings.SplitSeq(path, "/") {
		f := training.FieldOfPath(p)
		if f == nil {
			return ""
		}
		flags = append(flags, "--"+f.Name)
	}
	return strings.Join(flags, "/")
}

// inFlags says err in a CLI user's words: the library's errors tell a Go caller what to change
// (a Settings field, a factory); on the command line the same fix is a flag. Errors it does not
// know are returned as they are; errors.Is and errors.As see through the rewrite.
func inFlags(err error) error {
	var ge *sweep.GridError
	if errors.As(err, &ge) && ge.Err != nil { // a task refused: the refusal in flags
		words := *ge
		words.Err = inFlags(ge.Err)
		return &flagWords{err: err, msg: words.Error()}
	}
	var hm *cifarlib.HeadMismatchError
	if errors.As(err, &hm) && hm.Overridden {
		return &flagWords{err: err, msg: fmt.Sprintf("model head has %d outputs but dataset %s has %d classes (--head %d): "+
			"drop --head, so that the head is sized from --dataset (%d outputs)", hm.HeadWidth, hm.Dataset, hm.NumClasses,
			hm.HeadWidth, hm.NumClasses)}
	}
	var bd *backends.BatchDivisibilityError
	if errors.As(err, &bd) {
		if flag := flagOf(bd.Field); flag != "" {
			return &flagWords{err: err, msg: strings.Replace(strings.TrimPrefix(bd.Error(), "backends: training config: "),
				fmt.Sprintf("%s=%d", bd.Field, bd.BatchSize), fmt.Sprintf("%s %d", flag, bd.BatchSize), 1)}
		}
	}
	if msg, ok := transferInFlags(err); ok {
		return &flagWords{err: err, msg: msg}
	}
	var ce *training.ConfigError
	if errors.As(err, &ce) {
		if flag := flagOf(ce.Field); flag != "" {
			return &flagWords{err: err, msg: fmt.Sprintf("%s: %s", flagValues(flag, ce.Value), ce.Reason)}
		}
	}
	var ve *training.ValueError
	if errors.As(err, &ve) {
		switch {
		case ve.Err != nil: // the words of the package that read it
			return &flagWords{err: err, msg: ve.Err.Error()}
		case ve.Unknown:
			return &flagWords{err: err, msg: fmt.Sprintf("unknown --%s %q: use %s", ve.Field, ve.Value, ve.Range)}
		}
		return &flagWords{err: err, msg: fmt.Sprintf("--%s %q: use %s", ve.Field, ve.Value, ve.Range)}
	}
	return err
}

// transferInFlags says the transfer errors' fixes in flags: the architecture to ask for, or the
// transfer of the run.
func transferInFlags(err error) (string, bool) {
	var am *training.ArchMismatchError
	if errors.As(err, &am) {
		return fmt.Sprintf("%s; use --model %s, or leave --model out with --from", am.Problem(), am.Saved), true
	}
	var sm *checkpoints.ShapeMismatchError
	if !errors.As(err, &sm) {
		return "", false
	}
	fix := fmt.Sprintf("cifarlab train --from %s --dataset %s", sm.Dir, datasetFlags(sm.ModelDataset))
	if sm.Resume {
		fix += ", with a new --checkpoint directory"
	}
	return fmt.Sprintf("%s (%s)", sm.Problem(), fix), true
}

// datasetFlags is the flags naming the dataset with the given Spec ID.
func datasetFlags(id string) string {
	if id == "cifar100-coarse" {
		return "cifar100 --labels coarse"
	}
	return id
}

// flagValues writes flags with their values: "--steps 3" for one, "--steps 3 and --epochs 1"
// for settings checked together ("--steps/--epochs", "3/1").
func flagValues(flags, values string) string {
	fs, vs := strings.Split(flags, "/"), strings.Split(strings.Trim(values, `"`), "/")
	if len(fs) != len(vs) {
		return flags + " " + strings.Trim(values, `"`)
	}
	words := make([]string, len(fs))
	for i := range fs {
		words[i] = fs[i] + " " + vs[i]
	}
	return strings.Join(words, " and ")
}

// flagWords is an error with a CLI user's message.
type flagWords struct {
	err error
	msg string
}

func (e *flagWords) Error() string { return e.msg }
func (e *flagWords) Unwrap() error { return e.err }
