package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// prefix is what every error of the package starts with.
const prefix = "cifarlib: "

// entry is one tar entry of a test archive.
type entry struct {
	name     string
	typ      byte
	body     string
	size     int64 // the header's size when it differs from the body's (a cut archive)
	linkname string
}

// tarOf writes entries as a tar stream, its first keep bytes when keep > 0 (a cut archive).
func tarOf(t *testing.T, keep int, entries ...entry) []byte {
	t.Helper()
	b, err := buildTar(entries...)
	require.NoError(t, err)
	if keep > 0 {
		return b[:keep]
	}
	return b
}

// buildTar writes entries as a tar stream (a pax global header for TypeXGlobalHeader).
func buildTar(entries ...entry) ([]byte, error) {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Linkname: e.linkname}
		switch e.typ {
		case 0:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.body))
		case tar.TypeXGlobalHeader:
			hdr = &tar.Header{Name: e.name, Typeflag: e.typ, PAXRecords: map[string]string{"comment": "x"}}
		}
		if err := w.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(w, e.body); err != nil && hdr.Size > 0 {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// contents is a small archive's description: d/data (4 bytes), d/small (1 to 8 bytes), d/meta
// (up to 5 bytes).
func contents() Contents {
	return Contents{Name: "t.tar", Official: "test", Dir: "d", Data: map[string]int64{"data": 4, "small": -8},
		Metadata: map[string]bool{"meta": true}, MaxMetadataBytes: 5}
}

// good are the entries of an archive Extract accepts.
func good() []entry {
	return []entry{{name: "d/", typ: tar.TypeDir}, {name: "d/data", body: "abcd"}, {name: "d/small", body: "xy"}, {name: "d/meta", body: "m"}}
}

// with replaces (by name) or adds entries to good().
func with(extra ...entry) []entry {
	es := good()
	for _, e := range extra {
		replaced := false
		for i := range es {
			if es[i].name == e.name {
				es[i], replaced = e, true
			}
		}
		if !replaced {
			es = append(es, e)
		}
	}
	return es
}

// without drops the named entry from good().
func without(name string) []entry {
	var es []entry
	for _, e := range good() {
		if e.name != name {
			es = append(es, e)
		}
	}
	return es
}

// TestExtractRefusals: every refusal by name, with its sentinel and words; a refused archive
// leaves nothing in root (no d/, no staging folder).
func TestExtractRefusals(t *testing.T) {
	errCheck, errStaged, errInstalling := errors.New("check refused"), errors.New("staged refused"), errors.New("installing refused")
	for _, tc := range []struct {
		name string
		tar  []byte
		edit func(*Contents)
		kind error
		want string
	}{
		{"absolute path", tarOf(t, 0, with(entry{name: "/d/data", body: "abcd"})...), nil, ErrUnsafe, `entry "/d/data" has an absolute path`},
		{"parent folder", tarOf(t, 0, with(entry{name: "d/../../etc/passwd", body: "x"})...), nil, ErrUnsafe, `contains ".."`},
		{"parent folder at the end", tarOf(t, 0, with(entry{name: "d/..", body: "x"})...), nil, ErrUnsafe, `contains ".."`},
		{"backslash", tarOf(t, 0, with(entry{name: `d\data`, body: "abcd"})...), nil, ErrUnsafe, "a NUL, backslash or colon in it"},
		{"colon", tarOf(t, 0, with(entry{name: "C:d/data", body: "abcd"})...), nil, ErrUnsafe, "a NUL, backslash or colon in it"},
		{"symlink", tarOf(t, 0, with(entry{name: "d/data", typ: tar.TypeSymlink, linkname: "/etc/passwd"})...), nil, ErrUnsafe,
			`is a link (to "/etc/passwd"); links are not allowed`},
		{"hard link", tarOf(t, 0, with(entry{name: "d/meta", typ: tar.TypeLink, linkname: "d/data"})...), nil, ErrUnsafe, "links are not allowed"},
		{"character device", tarOf(t, 0, with(entry{name: "d/meta", typ: tar.TypeChar})...), nil, ErrUnsafe, `has type '3'; only regular files are allowed`},
		{"fifo", tarOf(t, 0, with(entry{name: "d/meta", typ: tar.TypeFifo})...), nil, ErrUnsafe, "only regular files are allowed"},
		{"another directory", tarOf(t, 0, with(entry{name: "e/", typ: tar.TypeDir})...), nil, ErrUnsafe, "is an unexpected directory (only d/ is expected)"},
		{"a file outside the folder", tarOf(t, 0, with(entry{name: "data", body: "abcd"})...), nil, ErrUnsafe, "is outside d/"},
		{"a file in a sub-folder", tarOf(t, 0, with(entry{name: "d/sub/data", body: "abcd"})...), nil, ErrUnsafe, "is outside d/"},
		{"an unknown file", tarOf(t, 0, with(entry{name: "d/evil.sh", body: "rm"})...), nil, ErrUnsafe, "is not a file of the test archive"},
		{"a file twice", tarOf(t, 0, append(good(), entry{name: "d/./data", body: "abcd"})...), nil, ErrUnsafe, `entry "d/./data" appears twice`},
		{"data file of another size", tarOf(t, 0, with(entry{name: "d/data", body: "abcde"})...), nil, ErrUnsafe,
			"has 5 bytes, but the test data file data has 4"},
		{"bounded data file too large", tarOf(t, 0, with(entry{name: "d/small", body: "123456789"})...), nil, ErrUnsafe,
			"has 9 bytes, but the test file small has at most 8"},
		{"bounded data file empty", tarOf(t, 0, with(entry{name: "d/small", body: ""})...), nil, ErrUnsafe, "has 0 bytes"},
		{"metadata file too large", tarOf(t, 0, with(entry{name: "d/meta", body: "123456"})...), nil, ErrUnsafe,
			"has 6 bytes, more than the 5 allowed for a metadata file"},
		{"missing data file", tarOf(t, 0, without("d/small")...), nil, ErrIncomplete, "it has no d/small"},
		{"cut inside an entry", tarOf(t, 512+512+2, good()...), nil, ErrIncomplete, `entry "d/data" ends after 2 of 4 bytes`},
		{"cut inside a header", tarOf(t, 512+100, good()...), nil, ErrIncomplete, "reading t.tar: incomplete archive"},
		{"not a tar", []byte(strings.Repeat("not a tar stream ", 40)), nil, ErrIncomplete, "reading t.tar"},
		{"data check refuses", tarOf(t, 0, good()...), func(c *Contents) {
			c.CheckData = func(string, io.Writer) io.Writer { return refusingWriter{errCheck} }
		}, errCheck, "check refused"},
		{"staged check refuses", tarOf(t, 0, good()...), func(c *Contents) { c.Staged = func(string) error { return errStaged } }, errStaged, "staged refused"},
		{"installing refuses", tarOf(t, 0, good()...), func(c *Contents) { c.Installing = func(string) error { return errInstalling } },
			errInstalling, "installing refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			c := contents()
			if tc.edit != nil {
				tc.edit(&c)
			}
			files, err := Extract(bytes.NewReader(tc.tar), root, c)
			require.ErrorIs(t, err, tc.kind)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, files)
			if errors.Is(err, ErrUnsafe) || errors.Is(err, ErrIncomplete) {
				require.True(t, strings.HasPrefix(err.Error(), prefix+"t.tar: ") || strings.HasPrefix(err.Error(), prefix+"reading t.tar"), err.Error())
			}
			if errors.Is(err, ErrUnsafe) {
				require.ErrorContains(t, err, "the archive is not the official test archive: delete it and download again")
			}
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			names := []string{}
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if tc.kind == errInstalling {
				require.Equal(t, []string{"d"}, names, "Installing runs on the created folder, before any file is renamed into it")
				inside, err := os.ReadDir(filepath.Join(root, "d"))
				require.NoError(t, err)
				require.Empty(t, inside)
				return
			}
			require.Empty(t, names, "a refused archive changes nothing in root")
		})
	}
}

// refusingWriter is a CheckData writer that refuses every byte.
type refusingWriter struct{ err error }

func (w refusingWriter) Write([]byte) (int, error) { return 0, w.err }

// TestExtractBounds: every bound accepts its limit and refuses one more; the files named, and
// only they, are installed.
func TestExtractBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra entry
		ok    bool
	}{
		{"bounded data file at its maximum", entry{name: "d/small", body: "12345678"}, true},
		{"bounded data file over it", entry{name: "d/small", body: "123456789"}, false},
		{"bounded data file of 1 byte", entry{name: "d/small", body: "1"}, true},
		{"metadata at MaxMetadataBytes", entry{name: "d/meta", body: "12345"}, true},
		{"metadata over it", entry{name: "d/meta", body: "123456"}, false},
		{"data file of its exact size", entry{name: "d/data", body: "wxyz"}, true},
		{"data file one byte short", entry{name: "d/data", body: "xyz"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files, err := Extract(bytes.NewReader(tarOf(t, 0, with(tc.extra)...)), root, contents())
			if !tc.ok {
				require.ErrorIs(t, err, ErrUnsafe)
				return
			}
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(root, tc.extra.name))
			require.NoError(t, err)
			require.Equal(t, tc.extra.body, string(got))
			require.Len(t, files, 2, "the data files and their sizes")
			entries, err := os.ReadDir(filepath.Join(root, "d"))
			require.NoError(t, err)
			require.Len(t, entries, 3, "data, small and meta: nothing else")
		})
	}
	// Without the optional metadata file, and with a pax global header, the archive is complete.
	root := t.TempDir()
	es := append([]entry{{name: "pax_global_header", typ: tar.TypeXGlobalHeader}}, without("d/meta")...)
	files, err := Extract(bytes.NewReader(tarOf(t, 0, es...)), root, contents())
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"data": 4, "small": 2}, files)
}

// FuzzExtract feeds arbitrary bytes to Extract: it installs the named files or fails with one
// of the package's errors, and a failure leaves nothing in root.
func FuzzExtract(f *testing.F) {
	for _, es := range [][]entry{good(), with(entry{name: "d/data", typ: tar.TypeSymlink, linkname: "/"})} {
		seed, err := buildTar(es...)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		_, err := Extract(bytes.NewReader(data), root, contents())
		if err == nil {
			return
		}
		if !errors.Is(err, ErrUnsafe) && !errors.Is(err, ErrIncomplete) && !strings.HasPrefix(err.Error(), prefix) {
			t.Fatalf("an error without the package's prefix: %v", err)
		}
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			t.Fatalf("a refused archive left %d entries in root", len(entries))
		}
	})
}
