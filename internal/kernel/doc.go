// Package kernel sets up the GoNB Jupyter kernels of the cifarlab lab and checks that
// everything around them works.
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
// Doctor runs the checklist behind "cifarlab doctor" and Lab starts JupyterLab for
// "cifarlab lab". The install steps for a fresh machine live in kernel/setup.sh.
package kernel
