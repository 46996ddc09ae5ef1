package kernel

import (
	"fmt"
)

// newKernelSpec is what `cifarlab kernel install` writes for each kernel: the pinned gonb,
// under the supervisor that ends whatever the kernel started when it ends, with --go_work=REPO (cells import the working tree's cifarlib with the repo's
// go.mod versions), and a PATH that finds go, goimports and gopls.
func Example_kernelSpec() {
	repo := Repo{Dir: "/src/cifarlab"}
	spec := newKernelSpec(repo, "cuda", goTools{BinDir: "/usr/local/go/bin"}, backend{GoMLX: "xla:cuda"})
	fmt.Println(spec.DisplayName)
	fmt.Println(spec.Argv)
	fmt.Println(spec.Env["PATH"])
	fmt.Println(spec.Env["GOMLX_BACKEND"], spec.Env["GOMLX_NO_AUTO_INSTALL"])
	// Output:
	// Go (cifarlab, CUDA)
	// [/src/cifarlab/.bin/cifarlab-kernel -- /src/cifarlab/.bin/gonb --kernel {connection_file} --go_work=/src/cifarlab]
	// /src/cifarlab/.bin:/usr/local/go/bin:${PATH}
	// xla:cuda 1
}

// DataDirFor picks where kernelspecs go for --jupyter-data-dir or --prefix; without either,
// the user's Jupyter data directory ($JUPYTER_DATA_DIR or ~/.local/share/jupyter: --user).
// `cifarlab kernel install` without a flag uses DefaultDataDir: the checkout's venv.
func ExampleDataDirFor() {
	dir, _ := DataDirFor("", "/opt/venv")
	fmt.Println(kernelDir(dir, CPUKernel))
	// Output: /opt/venv/share/jupyter/kernels/cifarlab-cpu
}

// kernelArgv is the argv of both kernelspecs: GoNB under the supervisor that ends, with the
// kernel, everything the kernel started (gopls, cells' processes).
func Example_kernelArgv() {
	fmt.Println(kernelArgv(Repo{Dir: "/src/cifarlab"}))
	// Output: [/src/cifarlab/.bin/cifarlab-kernel -- /src/cifarlab/.bin/gonb --kernel {connection_file} --go_work=/src/cifarlab]
}
