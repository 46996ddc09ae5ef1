package kernel

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
)

// cellLinkFlags are the linker flags of notebook cells, in the kernelspecs' GOFLAGS (cellGoFlags):
// most of a cell's turnaround is linking GoMLX, XLA's binding and cifarlib again (GoNB builds
// every cell as a new program), and these halve the CPU time of that link
// (bench/RESULTS-cells.md):
//
//   - -s: no symbol table and no DWARF. Go's panics and stack traces, and GoNB's
//     "Cell [n] Line m" in them, come from the runtime's pclntab, which stays; what goes is
//     debugging a cell's binary with a debugger;
//   - -linkmode=internal: Go's own linker, without gcc's linker after it. go-xla's binding
//     only needs libdl (PJRT plugins are loaded with dlopen), which internal linking handles.
//     A cell importing a cgo package that needs the external linker (static C++ libraries)
//     overrides them with `%goflags -ldflags=-w` (command-line flags come after GOFLAGS).
//
// The go command splits GOFLAGS with quotes, so the one -ldflags value holds both flags.
const cellLinkFlags = "'-ldflags=-s -linkmode=internal'"

// cellGoFlags returns the GOFLAGS of a kernel's cells on backend b: goEnvPins' flags, then
// cellLinkFlags, then, on an XLA backend, -tags=backends.NoGoBackendTag, which leaves the
// pure-Go backend (the largest part of what a cell links, and one such a kernel never runs) out
// of every cell. A cell that wants it anyway says `%goflags -tags=`: command-line flags come
// after GOFLAGS.
func cellGoFlags(b backend) string {
	flags := goEnvPins()["GOFLAGS"] + " " + cellLinkFlags
	if strings.HasPrefix(strings.ToLower(b.GoMLX), "xla") {
		flags += " -tags=" + backends.NoGoBackendTag
	}
	return flags
}

// defaultGoProxy is the go command's GOPROXY when none is set.
const defaultGoProxy = "https://proxy.golang.org,direct"

// cellGoProxy returns the GOPROXY of the notebook cells: the cells' pinned proxy (gt.CellPins,
// file://, see cellpins.go) when there is one, then the go command's module cache, read as a
// file:// proxy (GOMODCACHE/cache/download), then gt.Proxy, the user's own list (defaultGoProxy
// when empty); "" when the module cache is unknown (cells then use the user's).
//
// The pinned proxy makes every cell build with go.mod's versions of the modules the checkout
// requires, whatever newer versions the cache lists or the network serves.
//
// Why the module cache next: GoNB runs `go get` before it builds each cell, and `go get` asks the
// proxy, for every module of the build list (33 for a cell importing cifarlib), for its versions
// and its latest go.mod, to warn of retractions and deprecations: 0.5-0.9 s of every cell here,
// waiting on the network. The pinned proxy and the module cache hold those answers as files, so
// the same `go get` takes 0.05 s. A module neither holds is "not found" there, and the go command
// asks the next proxy of the list (the ',' separator), so a cell that imports a new module still
// downloads it. What changes: inside a cell, `go get -u` and @latest see go.mod's version of a
// pinned module and the newest version already in the cache of any other;
// `!GOPROXY=https://proxy.golang.org go get -u ...` asks the network.
func cellGoProxy(gt goTools) string {
	if gt.ModCache == "" || !filepath.IsAbs(gt.ModCache) {
		return ""
	}
	cache := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(gt.ModCache, "cache", "download"))}).String()
	proxy := gt.Proxy
	if proxy == "" {
		proxy = defaultGoProxy
	}
	// Installed again from a kernel's own environment: its pins (of this build list or an older
	// one) and the cache are already first.
	if pins := cellPinsOf(proxy); pins != "" {
		first := cellProxyURL(pins)
		proxy = strings.TrimPrefix(strings.TrimPrefix(proxy, first+","), first+"|")
	}
	if !(proxy == cache || strings.HasPrefix(proxy, cache+",") || strings.HasPrefix(proxy, cache+"|")) {
		proxy = cache + "," + proxy
	}
	if gt.CellPins != "" {
		proxy = cellProxyURL(gt.CellPins) + "," + proxy
	}
	return proxy
}
