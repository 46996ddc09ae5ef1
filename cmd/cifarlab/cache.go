package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/internal/compilecache"
)

func init() {
	register(command{
		name:    "cache",
		summary: "the compile cache: its compiled programs, sizes and loads (show), clear, check, warm",
		run:     runCache,
	})
}

const cacheUsage = `usage: cifarlab cache [show] [--json]
       cifarlab cache clear
       cifarlab cache check
       cifarlab cache warm [--into DIR] [--notebook NOTEBOOK ... | TRAIN FLAGS]

Every XLA program cifarlab compiles (a notebook cell, its lab process, cifarlab train and eval,
a sweep's tasks) is kept in the compile cache, and loaded by the next process that needs it
instead of compiled again. The cache is the user's own folder, $` + compilecache.DirEnv + `
(default ~/.cache/cifarlab/xla-programs; "off" turns the cache off), bounded by
$` + compilecache.MaxEnv + ` (default 4GiB; the programs used longest ago go first), over
the read-only folders of $` + compilecache.SharedEnv + ` (':'-separated: a workshop's shared
programs, filled once with cache warm --into).

show   lists the programs of each folder: their size, how many times a process loaded them,
       when they were last used and how long their compile took.
clear  removes every program of the user's folder (the shared folders are left alone).
check  says in one line whether the cache serves this machine: how many programs of each shared
       folder were compiled here (a folder compiled on another CPU model serves none: its
       programs never load here); exit status 1 when a folder is refused or serves none.
warm   compiles programs ahead of time, into DIR (--into; default: the user's folder):
         --notebook NOTEBOOK  runs the notebook through the real kernel (--kernel, default
                              cifarlab-cpu), e.g. notebooks/01-reproduce.ipynb, with its data
                              ($CIFARLAB_DATA); repeatable
         TRAIN FLAGS          trains the flags of cifarlab train (e.g. --recipe airbench94, or
                              --model resnet18 --batch 128) for 2 steps on synthetic data of the
                              same shapes, which compiles every program a run of those
                              settings compiles
       With --into, DIR becomes a shared folder: readable by all, writable only by its owner.
       Then give it to every user as $` + compilecache.SharedEnv + `=DIR.
`

func runCache(args []string, stdout io.Writer) error {
	sub := "show"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "show":
		return cacheShow(args, stdout)
	case "clear":
		return cacheClear(args, stdout)
	case "warm":
		return cacheWarm(args, stdout)
	case "check":
		return cacheCheck(args, stdout)
	case "help":
		fmt.Fprint(stdout, cacheUsage)
		return nil
	}
	fmt.Fprint(stdout, cacheUsage)
	return &exitError{code: 2, err: fmt.Errorf("unknown sub-command %q: use show, clear, check or warm", sub)}
}

// openCache opens the cache of the settings; a problem with a folder is said on stderr.
func openCache() (*compilecache.Cache, compilecache.Config, error) {
	cfg, off, err := compilecache.ConfigFromEnv()
	if err != nil {
		return nil, cfg, &exitError{code: 2, err: err}
	}
	if off {
		return nil, cfg, &exitError{code: 2, err: fmt.Errorf("the compile cache is off ($%s=off, no $%s)", compilecache.DirEnv, compilecache.SharedEnv)}
	}
	return compilecache.Open(cfg, func(line string) { fmt.Fprintln(os.Stderr, "cifarlab: "+line) }), cfg, nil
}

// cacheShow is `cifarlab cache [show]`.
func cacheShow(args []string, stdout io.Writer) error {
	fs := newFlagSet("cache show", "[--json]", stdout)
	fs.Usage = func() { fmt.Fprint(stdout, cacheUsage) }
	asJSON := fs.Bool("json", false, "print the folders and entries as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, cfg, err := openCache()
	if err != nil {
		return err
	}
	entries, err := c.Entries()
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Dir      string               `json:"dir"`
			Shared   []string             `json:"shared"`
			MaxBytes int64                `json:"max_bytes"`
			Entries  []compilecache.Entry `json:"entries"`
		}{c.Dir(), c.Shared(), maxBytes(cfg), entries})
	}
	writeCacheSummary(stdout, c, cfg, entries)
	return nil
}

// maxBytes is the bound of the user's folder.
func maxBytes(cfg compilecache.Config) int64 {
	if cfg.MaxBytes > 0 {
		return cfg.MaxBytes
	}
	return compilecache.DefaultMaxBytes
}

// writeCacheSummary writes each folder's line, then a table of its programs.
func writeCacheSummary(w io.Writer, c *compilecache.Cache, cfg compilecache.Config, entries []compilecache.Entry) {
	id, machine := backends.Machine()
	fits := map[string]compilecache.SharedFit{}
	for _, f := range c.SharedFits(id) {
		fits[f.Dir] = f
	}
	folder := func(dir string, shared bool) {
		var n int
		var size, loads int64
		for _, e := range entries {
			if e.Dir == dir {
				n, size, loads = n+1, size+e.Size, loads+e.Hits
			}
		}
		if shared {
			fmt.Fprintf(w, "shared, read-only: %s ($%s): %d programs (%s), %s, loaded %d times by this user\n",
				dir, compilecache.SharedEnv, n, fitWords(fits[dir]), compilecache.FormatSize(size), loads)
			return
		}
		fmt.Fprintf(w, "yours: %s ($%s): %d programs, %s of %s ($%s), loaded %d times\n", dir, compilecache.DirEnv, n,
			compilecache.FormatSize(size), compilecache.FormatSize(maxBytes(cfg)), compilecache.MaxEnv, loads)
	}
	if c.Dir() != "" {
		folder(c.Dir(), false)
	}
	for _, s := range c.Shared() {
		folder(s, true)
	}
	if line := compilecache.ForeignShared(c.SharedFits(id), machine); line != "" {
		fmt.Fprintln(w, line)
	}
	if len(entries) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPROGRAM\tSIZE\tLOADS\tLAST USED\tCOMPILE\tFOLDER\tPLUGIN")
	for _, e := range entries {
		where := "yours"
		if e.Shared {
			where = "shared"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%.1f s\t%s\t%s\n", e.Key[:12], shortName(e.Meta.Program), compilecache.FormatSize(e.Size),
			e.Hits, e.LastUsed.Local().Format(time.DateTime), e.Meta.CompileSeconds, where, orDash(e.Meta.Plugin))
	}
	tw.Flush()
}

// shortName is a program's name in the table: GoMLX names some after the Go function that built
// them, at length.
func shortName(s string) string {
	if len(s) > 32 {
		return s[:31] + "…"
	}
	return orDash(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cacheClear is `cifarlab cache clear`.
func cacheClear(args []string, stdout io.Writer) error {
	fs := newFlagSet("cache clear", "", stdout)
	fs.Usage = func() { fmt.Fprint(stdout, cacheUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, _, err := openCache()
	if err != nil {
		return err
	}
	if c.Dir() == "" {
		return fmt.Errorf("no folder of yours to clear ($%s)", compilecache.DirEnv)
	}
	n, size, err := c.Clear()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d compiled programs (%s) from %s\n", n, compilecache.FormatSize(size), c.Dir())
	return nil
}
