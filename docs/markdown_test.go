package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// root is the repository, seen from this package's folder (where go test runs).
const root = ".."

// skipDirs are folders whose Markdown is not the repository's own: generated output, virtual
// environments, node modules and vendored third-party code.
var skipDirs = []string{"out", "node_modules", "third_party"}

// markdownFiles returns the repository's Markdown files, relative to root, skipping hidden
// folders (.git, .venv, bench/.venv-torch) and skipDirs.
func markdownFiles() ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || slices.Contains(skipDirs, name)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// link is one link of a Markdown file: its line (1-based) and its target as written.
type link struct {
	line   int
	target string
}

// page is what the tests read of a Markdown file: its links and its headings' anchors.
type page struct {
	links   []link
	anchors map[string]bool
}

var (
	fence      = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	heading    = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)[\s#]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	urlScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// parsePage reads the links and anchors of Markdown text, leaving out fenced code blocks and
// code spans (a command's `[a](b)` is no link).
func parsePage(text string) page {
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := githubAnchor(m[1])
			if n := seen[slug]; n > 0 {
				p.anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		plain := codeSpan.ReplaceAllString(line, "code")
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			p.links = append(p.links, link{i + 1, m[1]})
		}
		if m := refDef.FindStringSubmatch(plain); m != nil {
			p.links = append(p.links, link{i + 1, m[1]})
		}
	}
	return p
}

// githubAnchor is the anchor GitHub gives a heading: its text without Markdown (code spans keep
// their text, links their label, emphasis asterisks go), lower case, letters, digits, '-' and
// '_' kept, each space a '-', everything else dropped.
func githubAnchor(text string) string {
	text = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// readPage parses the Markdown file at path (relative to root), once per test run.
func readPage(cache map[string]page, path string) (page, error) {
	if p, ok := cache[path]; ok {
		return p, nil
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return page{}, err
	}
	p := parsePage(string(data))
	cache[path] = p
	return p, nil
}
