package compilecache

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// SharedFit is what one shared folder holds for a machine: an entry's key holds the hardware it
// was compiled for, so the entries of another machine (an image built on another CPU model)
// are never looked up there, and every program compiles as if the folder were empty.
type SharedFit struct {
	// Dir is the shared folder; Programs its entries.
	Dir      string
	Programs int
	// ForMachine are the entries compiled for the machine asked about; Unknown those that do not
	// say their machine (written before entries recorded it).
	ForMachine, Unknown int
	// Others describes the other machines the rest were compiled for (their Meta.Machine).
	Others []string
}

// SharedFits says, for each shared folder in use, how many of its entries were compiled for
// machineID (Meta.MachineID); it reads only the entries' descriptions.
func (c *Cache) SharedFits(machineID string) []SharedFit {
	var fits []SharedFit
	for _, dir := range c.shared {
		fit := SharedFit{Dir: dir}
		files, _ := filepath.Glob(filepath.Join(dir, "*"+entryExt))
		for _, f := range files {
			if strings.HasPrefix(filepath.Base(f), ".") {
				continue
			}
			fit.Programs++
			switch m := readMeta(f); {
			case m.MachineID == "":
				fit.Unknown++
			case m.MachineID == machineID:
				fit.ForMachine++
			case !slices.Contains(fit.Others, m.Machine):
				fit.Others = append(fit.Others, m.Machine)
			}
		}
		fits = append(fits, fit)
	}
	return fits
}

// ForeignShared is the line to say when the shared folders hold programs and none of them was
// compiled for this machine (described as machine): they will not load, and every program
// compiles as without them. It is "" when a shared folder serves this machine (or may: entries
// that do not say their machine), or none holds programs.
func ForeignShared(fits []SharedFit, machine string) string {
	var dirs, others []string
	n := 0
	for _, f := range fits {
		if f.ForMachine > 0 || f.Unknown > 0 {
			return ""
		}
		if f.Programs > 0 {
			dirs, n = append(dirs, f.Dir), n+f.Programs
			for _, o := range f.Others {
				if !slices.Contains(others, o) {
					others = append(others, o)
				}
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("compile cache: the shared %s %s ($%s) %s %d programs compiled on another machine (%s), none for this one (%s): "+
		"they do not load here, so programs compile as without %s. Compile them on this machine: cifarlab cache warm --into DIR "+
		"--notebook NOTEBOOK, then share DIR (docs/compile-cache.md, \"Workshops\")",
		plural(len(dirs), "folder", "folders"), strings.Join(dirs, ", "), SharedEnv, plural(len(dirs), "holds", "hold"), n,
		strings.Join(others, "; "), machine, plural(len(dirs), "it", "them"))
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
