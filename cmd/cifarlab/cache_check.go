package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/kernel"
)

// cacheCheck is `cifarlab cache check`: one line that says whether the compile cache serves this
// machine (its shared folders hold programs compiled here); exit status 1 when it cannot (a
// folder refused, or shared programs of another machine only). The image's entry point says it
// at every start, and docker/hub/start.sh's test server passes it on to the organiser.
func cacheCheck(args []string, stdout io.Writer) error {
	fs := newFlagSet("cache check", "", stdout)
	fs.Usage = func() { fmt.Fprint(stdout, cacheUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	ok, line := compileCacheFit()
	fmt.Fprintln(stdout, line)
	if !ok {
		return &exitError{code: 1, err: errors.New("the compile cache does not serve this machine (said above)")}
	}
	return nil
}

// compileCacheFit says, in one line, what the compile cache's settings give on this machine: the
// user's folder and each shared folder, with how many of its programs were compiled here; ok is
// false when a folder is refused or the shared folders hold programs of another machine only.
func compileCacheFit() (ok bool, line string) {
	cfg, off, err := compilecache.ConfigFromEnv()
	switch {
	case err != nil:
		return false, err.Error()
	case off:
		return true, fmt.Sprintf("compile cache: off ($%s=off): every process compiles its programs", compilecache.DirEnv)
	}
	var problems []string
	c := compilecache.Open(cfg, func(line string) { problems = append(problems, line) })
	id, machine := backends.Machine()
	fits := c.SharedFits(id)
	if foreign := compilecache.ForeignShared(fits, machine); foreign != "" {
		problems = append(problems, foreign)
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, "; ")
	}
	var parts []string
	for _, f := range fits {
		parts = append(parts, fmt.Sprintf("shared %s: %d programs (%s)", f.Dir, f.Programs, fitWords(f)))
	}
	if len(fits) == 0 {
		parts = append(parts, fmt.Sprintf("no shared folder ($%s)", compilecache.SharedEnv))
	}
	if c.Dir() != "" {
		parts = append(parts, "yours "+c.Dir())
	}
	return true, fmt.Sprintf("compile cache: %s (this machine: %s)", strings.Join(parts, "; "), machine)
}

// probeCompileCache is doctor's line for the compile cache: a warning when it cannot serve this
// machine (a workshop image built on another CPU model: its attendees compile as without it).
func probeCompileCache(context.Context) []kernel.Check {
	c := kernel.Check{Name: "compile cache", Status: kernel.StatusOK}
	ok, line := compileCacheFit()
	c.Detail = strings.TrimPrefix(line, "compile cache: ")
	if !ok {
		c.Status = kernel.StatusWarn
		c.Fix = "programs compile as without the cache; fill a shared folder on this machine (cifarlab cache warm --into DIR " +
			"--notebook NOTEBOOK) and give it as $" + compilecache.SharedEnv + " (docs/compile-cache.md)"
	}
	return []kernel.Check{c}
}

// fitWords says how many of a shared folder's programs were compiled on this machine.
func fitWords(f compilecache.SharedFit) string {
	w := fmt.Sprintf("%d compiled on this machine", f.ForMachine)
	if f.Unknown > 0 {
		w += fmt.Sprintf(", %d that do not say their machine", f.Unknown)
	}
	return w
}
