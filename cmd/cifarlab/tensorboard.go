package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/internal/repo"
)

// tensorboardHint says how to look at the runs of logdir in TensorBoard from here, for the
// header of `cifarlab runs`: "tensorboard --logdir DIR" when tensorboard is on PATH, else with
// the lab venv's (kernel/setup.sh installs it in the checkout's .venv/bin, which is not on
// PATH), else what to install first.
func tensorboardHint(logdir string) string {
	if _, err := exec.LookPath("tensorboard"); err == nil {
		return "tensorboard --logdir " + logdir
	}
	if dir := repo.Dir(); dir != "" {
		venv := filepath.Join(dir, ".venv", "bin", "tensorboard")
		if _, err := exec.LookPath(venv); err == nil {
			return relativeToWD(venv) + " --logdir " + logdir
		}
	}
	return "not installed (bash kernel/setup.sh puts it in .venv/bin), then tensorboard --logdir " + logdir
}

// relativeToWD returns path relative to the working directory when it is below it, else path.
func relativeToWD(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
