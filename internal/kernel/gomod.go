package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// goMod is the part of a go.mod file the kernel checks need: the module path, the go
// directive and the required module versions (direct and indirect).
type goMod struct {
	// Module is the module path.
	Module string
	// Go is the version of the go directive, e.g. "1.27".
	Go string
	// Toolchain is the toolchain line, e.g. "go1.27.3" ("" when there is none): the release the
	// lab builds with (kernel/toolchain.sh and the kernelspecs export it as GOTOOLCHAIN).
	Toolchain string
	// Require maps each required module path to its version.
	Require map[string]string
	// Tools lists the package paths of the tool directives.
	Tools []string
}

// readGoMod parses the go.mod file at path. It understands module, go, toolchain, require and tool
// directives in their single-line and block forms and ignores everything else.
func readGoMod(path string) (*goMod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseGoMod(path, data)
}

// parseGoMod parses go.mod content; name is used in error messages.
func parseGoMod(name string, data []byte) (*goMod, error) {
	mod := &goMod{Require: map[string]string{}}
	block := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if block != "" {
			if fields[0] == ")" {
				block = ""
				continue
			}
			if err := mod.directive(block, fields); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
			}
			continue
		}
		if len(fields) == 2 && fields[1] == "(" {
			block = fields[0]
			continue
		}
		if err := mod.directive(fields[0], fields[1:]); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if mod.Module == "" {
		return nil, fmt.Errorf("%s: no module directive", name)
	}
	return mod, nil
}

func (m *goMod) directive(verb string, args []string) error {
	switch verb {
	case "module":
		if len(args) != 1 {
			return fmt.Errorf("module directive needs one path, got %q", args)
		}
		m.Module = strings.Trim(args[0], `"`)
	case "go":
		if len(args) != 1 {
			return fmt.Errorf("go directive needs one version, got %q", args)
		}
		m.Go = args[0]
	case "toolchain":
		if len(args) != 1 {
			return fmt.Errorf("toolchain directive needs one name, got %q", args)
		}
		m.Toolchain = args[0]
	case "require":
		if len(args) != 2 {
			return fmt.Errorf("require needs a module path and a version, got %q", args)
		}
		m.Require[strings.Trim(args[0], `"`)] = args[1]
	case "tool":
		if len(args) != 1 {
			return fmt.Errorf("tool directive needs one package path, got %q", args)
		}
		m.Tools = append(m.Tools, strings.Trim(args[0], `"`))
	}
	return nil
}

// repoToolchain returns the toolchain line of repo's go.mod ("" when it has none or repo is zero).
func repoToolchain(repo Repo) string {
	if repo.Dir == "" {
		return ""
	}
	mod, err := readGoMod(filepath.Join(repo.Dir, "go.mod"))
	if err != nil {
		return ""
	}
	return mod.Toolchain
}
