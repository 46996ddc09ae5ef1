package docs

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMarkdownLinks: every relative link of the repository's Markdown resolves to a file or
// folder inside the repository, and an #anchor to a heading of the Markdown file it names, so
// that a page moved or a heading renamed cannot leave a dead link behind.
func TestMarkdownLinks(t *testing.T) {
	files, err := markdownFiles()
	require.NoError(t, err)
	require.Contains(t, files, "README.md")
	cache := map[string]page{}
	checked := 0
	for _, file := range files {
		p, err := readPage(cache, file)
		require.NoError(t, err)
		for _, l := range p.links {
			if problem := checkLink(cache, file, l.target); problem != "" {
				t.Errorf("%s:%d: link %q: %s", file, l.line, l.target, problem)
			}
			checked++
		}
	}
	require.Greater(t, checked, 100, "the pages link to each other")
	t.Logf("%d links in %d Markdown files", checked, len(files))
}

// checkLink returns what is wrong with the link target of the Markdown file from, or "".
func checkLink(cache map[string]page, from, target string) string {
	if urlScheme.MatchString(target) {
		return "" // a URL: not the repository's to check
	}
	file, anchor, _ := strings.Cut(target, "#")
	if file == "" {
		file = from
	} else {
		file = filepath.Clean(filepath.Join(filepath.Dir(from), filepath.FromSlash(file)))
	}
	if file == ".." || strings.HasPrefix(file, ".."+string(filepath.Separator)) {
		return "it leaves the repository"
	}
	if _, err := os.Stat(filepath.Join(root, file)); err != nil {
		return fmt.Sprintf("%s does not exist: link to the file where the text now is", filepath.ToSlash(file))
	}
	if anchor == "" || path.Ext(file) != ".md" {
		return ""
	}
	p, err := readPage(cache, file)
	if err != nil {
		return err.Error()
	}
	if !p.anchors[anchor] {
		return fmt.Sprintf("%s has no heading with the anchor #%s (its anchors: %s)", filepath.ToSlash(file), anchor,
			strings.Join(slices.Sorted(maps.Keys(p.anchors)), ", "))
	}
	return ""
}

// TestReadmeIsTheFrontDoor: README.md stays a page a newcomer reads in minutes (at most 300
// lines), its first commands are the main job and the test command, as files that run, and it
// links every page of docs/, so that none is orphaned.
func TestReadmeIsTheFrontDoor(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	text := string(data)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	require.LessOrEqual(t, len(lines), 300, "README.md has %d lines: move a subject to a page of docs/", len(lines))

	commands := firstCommands(lines, 2)
	require.Equal(t, []string{"./kernel/lab.sh", "./kernel/run-tests.sh"}, commands,
		"README.md's first command block starts with the main job and the test command")
	for _, c := range commands {
		info, err := os.Stat(filepath.Join(root, c))
		require.NoError(t, err, "README.md's command %s", c)
		require.NotZero(t, info.Mode()&0o111, "README.md's command %s is not executable", c)
	}

	linked := map[string]bool{}
	for _, l := range parsePage(text).links {
		file, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(filepath.FromSlash(file))] = true
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		require.True(t, linked[rel], "README.md does not link %s: add it to \"Where to read on\"", filepath.ToSlash(rel))
	}
}

// firstCommands returns the first word of the first n commands in the first fenced block of
// lines.
func firstCommands(lines []string, n int) []string {
	var commands []string
	in := false
	for _, line := range lines {
		if fence.MatchString(line) {
			if in {
				break
			}
			in = true
			continue
		}
		if fields := strings.Fields(line); in && len(fields) > 0 && len(commands) < n {
			commands = append(commands, fields[0])
		}
	}
	return commands
}

// TestGitHubAnchor: the anchors GitHub gives headings of the kinds these pages use.
func TestGitHubAnchor(t *testing.T) {
	for _, c := range []struct{ heading, anchor string }{
		{"Quick start", "quick-start"},
		{"GPU run (`gpu.sh`)", "gpu-run-gpush"},
		{"Sweeps on a cluster: `cifarlab sweep` and Slurm", "sweeps-on-a-cluster-cifarlab-sweep-and-slurm"},
		{"The upgrade to Go 1.27.3, GoMLX v0.28.16 (issue 45)", "the-upgrade-to-go-1273-gomlx-v02816-issue-45"},
		{"A workshop with JupyterHub (docker/hub/)", "a-workshop-with-jupyterhub-dockerhub"},
		{"Where a step's time goes", "where-a-steps-time-goes"},
		{"Several devices (data parallelism)", "several-devices-data-parallelism"},
		{"[The kernels](kernel/README.md) and *their* `GOFLAGS`", "the-kernels-and-their-goflags"},
		{"Storage, disk and capacity", "storage-disk-and-capacity"},
	} {
		require.Equal(t, c.anchor, githubAnchor(c.heading), c.heading)
	}
}

// TestParsePage: links in code are not links, duplicate headings get GitHub's -1, -2.
func TestParsePage(t *testing.T) {
	p := parsePage("# Title\n\n[a](a.md) and `[b](b.md)`\n\n```\n[c](c.md)\n# not a heading\n```\n" +
		"![img](x.png \"t\")\n[ref]: r.md\n## Title\n## Title\n")
	var targets []string
	for _, l := range p.links {
		targets = append(targets, l.target)
	}
	require.Equal(t, []string{"a.md", "x.png", "r.md"}, targets)
	require.Equal(t, []string{"title", "title-1", "title-2"}, slices.Sorted(maps.Keys(p.anchors)))
}
