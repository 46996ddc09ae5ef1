package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

// TestTensorboardHint: the runs header names a tensorboard that starts from here: the one on
// PATH, else the checkout's .venv/bin/tensorboard (relative when below the working directory),
// else what to install.
func TestTensorboardHint(t *testing.T) {
	executable := func(path string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755))
	}
	checkout := func(withVenv bool) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+repo.ModulePath+"\n"), 0o644))
		if withVenv {
			executable(filepath.Join(dir, ".venv", "bin", "tensorboard"))
		}
		return dir
	}
	onPath := t.TempDir()
	executable(filepath.Join(onPath, "tensorboard"))
	withVenv, without := checkout(true), checkout(false)
	for _, c := range []struct {
		name, path, checkout, wd, want string
	}{
		{"on PATH", onPath, withVenv, withVenv, "tensorboard --logdir runs"},
		{"venv below the working directory", t.TempDir(), withVenv, withVenv, filepath.Join(".venv", "bin", "tensorboard") + " --logdir runs"},
		{"venv elsewhere", t.TempDir(), withVenv, t.TempDir(), filepath.Join(withVenv, ".venv", "bin", "tensorboard") + " --logdir runs"},
		{"none", t.TempDir(), without, without, "not installed (bash kernel/setup.sh puts it in .venv/bin), then tensorboard --logdir runs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PATH", c.path)
			t.Setenv(repo.Env, c.checkout)
			t.Chdir(c.wd)
			require.Equal(t, c.want, tensorboardHint("runs"))
		})
	}
}
