package kernel

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUserInstallOverAnImageLayer: the workshop image's entry point runs `cifarlab kernel install`
// into the user's home at every start (CIFARLAB_CUDA_BACKEND, which the hub always sets), over a
// checkout and a system install that come from the image's layers. On overlay storage, podman's
// and Docker's default, a folder of a lower layer cannot be renamed where overlay's redirect_dir
// is off (EXDEV, "invalid cross-device link"; this machine's kernel has it off). Here a real
// overlay mount stands for the image: the checkout and the image's system install in the lower
// layer, the user's install on the merged view. It must succeed, twice (a container restarted),
// and write only into the user's data directory: nothing of the checkout or the system install
// changes (the upper layer holds only the user's files). At f035eac the user's install renamed
// the checkout's .bin/cell-proxy and failed with EXDEV, and every hub spawn with it.
func TestUserInstallOverAnImageLayer(t *testing.T) {
	root := t.TempDir()
	lower, upper, work, merged := filepath.Join(root, "lower"), filepath.Join(root, "upper"), filepath.Join(root, "work"), filepath.Join(root, "merged")
	for _, d := range []string{lower, upper, work, merged} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	// The image's build: a checkout and its system-wide kernels, in what becomes the lower layer.
	built := fakeRepo(t)
	repoDir := filepath.Join(lower, "opt", "cifarlab")
	require.NoError(t, os.MkdirAll(filepath.Dir(repoDir), 0o755))
	out, err := exec.Command("cp", "-a", built.Dir, repoDir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Setenv(pjrtPluginPathEnv, t.TempDir())
	system := filepath.Join(lower, "usr", "local", "share", "jupyter")
	_, err = Install(context.Background(), InstallOptions{Repo: Repo{Dir: repoDir}, DataDir: system, SkipTools: true, Backends: BackendOptions{CUDA: "xla:cuda"}})
	require.NoError(t, err)

	mount := exec.Command("mount", "-t", "overlay", "overlay", "-o", "lowerdir="+lower+",upperdir="+upper+",workdir="+work, merged)
	if out, err := mount.CombinedOutput(); err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("mounting an overlay needs root (CI runs as root): %s", out)
		}
		t.Fatalf("mount -t overlay (the kernel's overlayfs, as podman's default storage uses it): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", merged).Run() })

	// The container's start, twice: the user-level install over the image's checkout.
	repo := Repo{Dir: filepath.Join(merged, "opt", "cifarlab")}
	home := filepath.Join(merged, "home", "lab", ".local", "share", "jupyter")
	for i := 0; i < 2; i++ {
		res, err := Install(context.Background(), InstallOptions{Repo: repo, DataDir: home, SkipTools: true,
			Backends: BackendOptions{CUDA: "xla:cuda,preallocate=false,memory_fraction=0.25"}})
		require.NoError(t, err, "the user's install over the image's layer (start %d)", i+1)
		require.Equal(t, "xla:cuda,preallocate=false,memory_fraction=0.25", res.Kernels[1].Spec.Env[gomlxBackendEnv])
		pins := cellPinsOf(res.Kernels[0].Spec.Env["GOPROXY"])
		require.True(t, strings.HasPrefix(pins, home+string(filepath.Separator)), "the cells' pins %q are not the user's own", pins)
		require.DirExists(t, pins)
	}
	// What the user's installs changed: files in the upper layer, all under the user's home.
	var changed []string
	require.NoError(t, filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(upper, p)
		changed = append(changed, rel)
		return nil
	}))
	require.NotEmpty(t, changed)
	for _, rel := range changed {
		require.True(t, strings.HasPrefix(rel, filepath.Join("home", "lab")+string(filepath.Separator)),
			"the user's install changed %s, outside the user's home (the image's checkout or system install)", rel)
	}
}
