package kernel

import (
	"runtime"
)

// goEnvPins is the Go environment the kernelspecs set for GoNB's builds of notebook cells, so
// that the user's own settings, exported or written with `go env -w`, cannot break them. The go
// command takes a non-empty environment variable over its `go env -w` file, so each pin is
// non-empty where the file could hold the variable:
//
//   - GOFLAGS=-buildvcs=false (cells are not stamped with version control information, and git
//     is never asked): replaces e.g. -mod=mod, which workspace mode rejects ("-mod may only be
//     set to readonly or vendor when in workspace mode"), or -tags=... that would change which
//     files build;
//   - GOWORK= (empty: workspace mode finds GoNB's go.work; `go env -w` cannot set GOWORK), so
//     GOWORK=off cannot stop GoNB's --go_work;
//   - GO111MODULE=on; CGO_ENABLED=1 (go-xla's PJRT binding is cgo);
//   - GOOS and GOARCH of this machine (cells run here).
func goEnvPins() map[string]string {
	return map[string]string{
		"GOFLAGS":     "-buildvcs=false",
		"GOWORK":      "",
		"GO111MODULE": "on",
		"CGO_ENABLED": "1",
		"GOOS":        runtime.GOOS,
		"GOARCH":      runtime.GOARCH,
	}
}
