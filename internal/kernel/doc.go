// Package kernel is cmd/cifarlab's own code for `cifarlab kernel`, `cifarlab doctor` and
// `cifarlab lab`: it sets up the GoNB Jupyter kernels of the cifarlab lab, checks that everything
// around them works, and starts JupyterLab. It exports what cmd/cifarlab uses.
//
// It installs two kernelspecs, "Go (cifarlab, CPU)" and "Go (cifarlab, CUDA)", that run the
// pinned GoNB binary built from tools/go.mod, with a PATH holding go, goimports and gopls and
// with GOMLX_BACKEND selecting the backend, so that moving an experiment to the CPU is a
// kernel switch. Both kernels start GoNB with --go_work pointing at the repository, so
// notebook cells import this repository's cifarlib at its working-tree version, with the
// dependency versions of the repository's go.mod (GoNB puts the repository in the go.work of
// its temporary module and adds the matching replace directive). The kernelspecs go into the
// checkout's venv by default (DefaultDataDir), so that each clone's lab starts its own kernels;
// kernelOwners says which checkout the kernel of each name belongs to as Jupyter finds it. GoNB
// runs under the supervisor cmd/cifarlab-kernel (kernelArgv), which ends every process the
// kernel started when the kernel ends.
//
// Install writes the kernelspecs, Doctor runs the checklist behind "cifarlab doctor" and
// StartLab starts JupyterLab for "cifarlab lab". The install steps for a fresh machine live in
// kernel/setup.sh.
//
// Its files, by concern; none uses a file listed after it:
//
//   - files.go, repo.go, gomod.go, goenv.go: file helpers, the checkout (Repo), go.mod files,
//     the Go environment of the cells' builds;
//   - gocommand.go, tools.go: the go command the kernels build with, the pinned tools and the
//     supervisor in REPO/.bin;
//   - backend.go, plugins.go: each kernel's GoMLX backend, and the plugin files it is made from;
//   - cellpins.go, cellbuild.go, cellwarm.go: the cells' pinned module proxy, build flags and
//     first go get;
//   - spec.go, jupyter.go, paths.go: kernel.json, the jupyter command, Jupyter's data folders;
//   - manifest.go, install.go, owners.go: Install and Uninstall, and which checkout each kernel
//     belongs to;
//   - check.go, doctor_goenv.go, doctor_cuda.go, doctor_go.go, doctor_plugins.go,
//     doctor_cells.go, doctor_kernelspec.go, doctor.go: Doctor and its checks;
//   - lablog.go, labserver.go, labkernels.go, lab.go: StartLab's steps: find what to serve
//     (findLab), ensure the kernels (ensureKernels), start the server and wait for its answer
//     (Lab.start, Lab.waitReady), its output split between the log file and the terminal (labLog).
package kernel
