package plugins

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// CUDALib is one NVIDIA library (or CUDA tool) that the CUDA PJRT plugin of jax-cuda13-pjrt loads,
// where pip's wheel puts it, and the versions the plugin accepts (jax-cuda13-plugin[with-cuda]'s
// requirements; kernel/requirements-cuda-libs.txt pins them).
type CUDALib struct {
	// Name names it, e.g. "cuDNN".
	Name string
	// File is the file the plugin opens: a soname ("libcudnn.so.9") found through the plugin's
	// RPATH, or, for a Tool, a path under the CUDA data dir ("bin/ptxas").
	File string
	// Tool is true for ptxas and libdevice, which XLA finds under --xla_gpu_cuda_data_dir.
	Tool bool
	// Package is the pip package that ships it, e.g. "nvidia-cudnn-cu13".
	Package string
	// Min is the oldest version accepted; Below, when set, the first version no longer accepted.
	Min, Below string
}

// CUDALibs are the libraries and tools doctor checks, in the order the plugin needs them.
var CUDALibs = []CUDALib{
	{Name: "CUDA runtime", File: "libcudart.so.13", Package: "nvidia-cuda-runtime", Min: "13.0.48"},
	{Name: "cuBLAS", File: "libcublas.so.13", Package: "nvidia-cublas", Min: "13.0.0.19"},
	{Name: "cuBLASLt", File: "libcublasLt.so.13", Package: "nvidia-cublas", Min: "13.0.0.19"},
	{Name: "cuDNN", File: "libcudnn.so.9", Package: "nvidia-cudnn-cu13", Min: "9.12.0.46", Below: "10"},
	{Name: "cuFFT", File: "libcufft.so.12", Package: "nvidia-cufft", Min: "12.0.0.15"},
	{Name: "cuSOLVER", File: "libcusolver.so.12", Package: "nvidia-cusolver", Min: "12.0.3.29"},
	{Name: "cuSPARSE", File: "libcusparse.so.12", Package: "nvidia-cusparse", Min: "12.6.2.49"},
	{Name: "NCCL", File: "libnccl.so.2", Package: "nvidia-nccl-cu13", Min: "2.27.7"},
	{Name: "nvJitLink", File: "libnvJitLink.so.13", Package: "nvidia-nvjitlink", Min: "13.0.39"},
	{Name: "ptxas", File: "bin/ptxas", Tool: true, Package: "nvidia-cuda-nvcc", Min: "13.0.48"},
	{Name: "libdevice", File: "nvvm/libdevice/libdevice.10.bc", Tool: true, Package: "nvidia-nvvm", Min: "13.0.48"},
}

// CUDALibsFix says how to install the NVIDIA libraries; part of doctor's lines.
const CUDALibsFix = "on the GPU machine `bash kernel/setup.sh` installs the pinned NVIDIA wheels into .venv " +
	"(CIFARLAB_CUDA=1 forces it without a GPU; or `.venv/bin/pip install --no-deps --require-hashes -r " +
	"kernel/requirements-cuda-libs.txt`), then `cifarlab kernel install`; or set " + CUDASiteEnv +
	" to a site-packages that holds jax-cuda13-pjrt and the nvidia-* wheels"

// jaxCUDA13RPATH is the RPATH of jax-cuda13-pjrt 0.11.2's xla_cuda_plugin.so (readelf -d), used
// when the plugin file cannot be read as ELF.
var jaxCUDA13RPATH = []string{"$ORIGIN/../../nvidia/cu13/lib", "$ORIGIN/../nvidia/cu13/lib", "$ORIGIN/../../nvidia/cudnn/lib",
	"$ORIGIN/../nvidia/cudnn/lib", "$ORIGIN/../../tensorrt", "$ORIGIN/../tensorrt", "$ORIGIN/../../nvidia/nccl/lib",
	"$ORIGIN/../nvidia/nccl/lib"}

// CUDALibStatus is what CheckCUDALibs found for one CUDALib.
type CUDALibStatus struct {
	Lib CUDALib
	// Path is the file found (absolute); "" when missing.
	Path string
	// Version is the version of the pip package that installed Path (its dist-info), else the
	// one in the file's real name (libcudart.so.13.0.96); "" when unknown.
	Version string
	// Problem says what is wrong ("" when nothing): missing, or a version out of range.
	Problem string
}

// OK reports whether the library was found at an accepted version (or an unknown one).
func (s CUDALibStatus) OK() bool { return s.Problem == "" }

// String describes the status for doctor: "PATH (nvidia-cudnn-cu13 9.13.0.50)", or the problem.
func (s CUDALibStatus) String() string {
	if s.Path == "" {
		return s.Problem
	}
	v := s.Version
	if v == "" {
		v = "version unknown"
	}
	out := fmt.Sprintf("%s (%s %s)", s.Path, s.Lib.Package, v)
	if s.Problem != "" {
		out += ": " + s.Problem
	}
	return out
}

// CUDALibDirs returns the folders where the plugin file looks for its libraries: its RPATH with
// $ORIGIN replaced by the plugin's folder (links resolved), then $LD_LIBRARY_PATH.
func CUDALibDirs(plugin string) []string {
	if real, err := filepath.EvalSymlinks(plugin); err == nil {
		plugin = real
	}
	if abs, err := filepath.Abs(plugin); err == nil {
		plugin = abs
	}
	origin := filepath.Dir(plugin)
	rpath := readRPATH(plugin)
	if rpath == nil {
		rpath = jaxCUDA13RPATH
	}
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d = filepath.Clean(d); !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, r := range rpath {
		r = strings.ReplaceAll(strings.ReplaceAll(r, "${ORIGIN}", origin), "$ORIGIN", origin)
		if filepath.IsAbs(r) {
			add(r)
		}
	}
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if filepath.IsAbs(d) {
			add(d)
		}
	}
	return dirs
}

// readRPATH returns the DT_RPATH and DT_RUNPATH entries of an ELF file; nil when it is none.
func readRPATH(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			out = append(out, strings.Split(v, ":")...)
		}
	}
	return out
}

// CUDADataDir returns the folder XLA looks in for ptxas and libdevice with this plugin:
// --xla_gpu_cuda_data_dir in $XLA_FLAGS when set, else SITE/nvidia/cuN next to pip's
// jax-cudaN-pjrt (whether or not it exists).
func CUDADataDir(plugin string) string {
	for _, f := range strings.Fields(os.Getenv("XLA_FLAGS")) {
		if v, ok := strings.CutPrefix(f, "--xla_gpu_cuda_data_dir="); ok {
			return v
		}
	}
	if real, err := filepath.EvalSymlinks(plugin); err == nil {
		plugin = real
	}
	dir := filepath.Dir(plugin)
	cuda, ok := strings.CutPrefix(filepath.Base(dir), "xla_cuda")
	if !ok || cuda == "" {
		cuda = "13"
	}
	return filepath.Join(filepath.Dir(filepath.Dir(dir)), "nvidia", "cu"+cuda)
}

// CheckCUDALibs looks for each of CUDALibs where the plugin file finds it (CUDALibDirs for the
// libraries, CUDADataDir for ptxas and libdevice), without loading anything, and checks the
// version of the pip package that installed it.
func CheckCUDALibs(plugin string) []CUDALibStatus {
	dirs := CUDALibDirs(plugin)
	data := CUDADataDir(plugin)
	out := make([]CUDALibStatus, 0, len(CUDALibs))
	for _, lib := range CUDALibs {
		s := CUDALibStatus{Lib: lib}
		if lib.Tool {
			if p := filepath.Join(data, lib.File); isFile(p) {
				s.Path = p
			}
		} else {
			for _, d := range dirs {
				if p := filepath.Join(d, lib.File); isFile(p) {
					s.Path = p
					break
				}
			}
		}
		if s.Path == "" {
			where, other := data, ""
			if !lib.Tool {
				where, other = describeDirs(dirs), otherMajors(dirs, lib)
			}
			s.Problem = fmt.Sprintf("%s not found (looked in %s)", lib.File, where)
			if other != "" {
				s.Problem += fmt.Sprintf("; found %s, another major version the plugin does not load", other)
			}
			s.Problem += ": install " + lib.Package + " " + lib.versionRange()
			out = append(out, s)
			continue
		}
		s.Version = installedVersion(s.Path, lib.Package)
		if s.Version != "" && !lib.accepts(s.Version) {
			s.Problem = fmt.Sprintf("version %s, the plugin needs %s %s", s.Version, lib.Package, lib.versionRange())
		}
		out = append(out, s)
	}
	return out
}

// describeDirs lists the folders of dirs that exist, for messages: "the plugin's RPATH folders,
// none of which exists, e.g. FIRST" when there is none.
func describeDirs(dirs []string) string {
	var existing []string
	for _, d := range dirs {
		if isDir(d) {
			existing = append(existing, d)
		}
	}
	switch {
	case len(existing) > 0:
		return strings.Join(existing, ", ")
	case len(dirs) > 0:
		return "the plugin's RPATH folders, none of which exists, e.g. " + dirs[0]
	}
	return "no folder: the plugin has no RPATH"
}

// versionRange is ">=Min" or ">=Min,<Below".
func (l CUDALib) versionRange() string {
	r := ">=" + l.Min
	if l.Below != "" {
		r += ",<" + l.Below
	}
	return r
}

func (l CUDALib) accepts(v string) bool {
	return compareVersions(v, l.Min) >= 0 && (l.Below == "" || compareVersions(v, l.Below) < 0)
}

// otherMajors lists the files of the library's stem with another version in dirs (e.g.
// libcudnn.so.8 next to a missing libcudnn.so.9).
func otherMajors(dirs []string, lib CUDALib) string {
	stem := lib.File[:strings.LastIndex(lib.File, ".so.")+len(".so.")]
	var found []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, stem+"*"))
		found = append(found, m...)
	}
	return strings.Join(found, ", ")
}

var reSoVersion = regexp.MustCompile(`\.so\.([0-9]+(\.[0-9]+)+)$`)

// installedVersion returns the version of pkg's dist-info in the site-packages above path's
// "nvidia" folder (pip's layout), else the version in path's real file name; "" when unknown.
func installedVersion(path, pkg string) string {
	if i := strings.LastIndex(path, string(filepath.Separator)+"nvidia"+string(filepath.Separator)); i >= 0 {
		site := path[:i]
		name := strings.ReplaceAll(pkg, "-", "_")
		metas, _ := filepath.Glob(filepath.Join(site, name+"-*.dist-info", "METADATA"))
		for _, m := range metas {
			if v := metadataVersion(m); v != "" {
				return v
			}
		}
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if m := reSoVersion.FindStringSubmatch(real); m != nil {
			return m[1]
		}
	}
	return ""
}

func metadataVersion(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Version: "); ok {
			return strings.TrimSpace(v)
		}
		if sc.Text() == "" {
			break // end of the headers
		}
	}
	return ""
}

// compareVersions compares dotted numeric versions ("9.13.0.50" against "10"): -1, 0 or 1; a
// missing part counts as 0, and a non-numeric part as 0.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}
