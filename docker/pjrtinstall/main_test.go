package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseArgs(t *testing.T) {
	const sum = "30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7"
	for _, tc := range []struct {
		name    string
		args    []string
		want    request
		wantErr string
	}{
		{"cpu", []string{"-plugin", "cpu", "-version", "v0.114.0"},
			request{plugin: "cpu", version: "v0.114.0", path: "/usr/local/lib/go-xla"}, ""},
		{"cuda with path and upper-case sum", []string{"-plugin", "cuda13", "-version", "0.11.2", "-path", "/opt/x", "-sha256", strings.ToUpper(sum)},
			request{plugin: "cuda13", version: "0.11.2", path: "/opt/x", sha256: sum}, ""},
		{"no plugin", []string{"-version", "v1"}, request{}, "-plugin is required"},
		{"unknown plugin", []string{"-plugin", "rocm", "-version", "1"}, request{}, `-plugin "rocm" is not one of`},
		{"latest refused", []string{"-plugin", "cpu", "-version", "latest"}, request{}, `"latest" would make the image unreproducible`},
		{"missing version", []string{"-plugin", "cuda13"}, request{}, "-version must be an exact release"},
		{"cpu version without v", []string{"-plugin", "cpu", "-version", "0.114.0"}, request{}, "must be a pjrt-cpu-binaries tag"},
		{"cuda version with v", []string{"-plugin", "cuda13", "-version", "v0.11.2"}, request{}, `no leading "v"`},
		{"relative path", []string{"-plugin", "cpu", "-version", "v1", "-path", "lib"}, request{}, `-path "lib" must be absolute`},
		{"short sum", []string{"-plugin", "cpu", "-version", "v1", "-sha256", "abcd"}, request{}, "is not 64 hexadecimal digits"},
		{"stray argument", []string{"-plugin", "cpu", "-version", "v1", "extra"}, request{}, `unexpected arguments ["extra"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseArgs(tc.args, io.Discard)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPluginFile(t *testing.T) {
	require.Equal(t, "/l/go-xla/pjrt_c_api_cpu_v0.114.0_plugin.so",
		pluginFile(request{plugin: "cpu", version: "v0.114.0", path: "/l/go-xla"}))
	require.Equal(t, "/l/go-xla/nvidia/pjrt_c_api_cuda_plugin.so",
		pluginFile(request{plugin: "cuda13", version: "0.11.2", path: "/l/go-xla"}))
}

func TestFileSHA256(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "plugin.so")
	require.NoError(t, os.WriteFile(f, []byte("abc"), 0o644))
	got, err := fileSHA256(f)
	require.NoError(t, err)
	require.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", got)

	_, err = fileSHA256(dir)
	require.ErrorContains(t, err, "is not a regular file")
	_, err = fileSHA256(filepath.Join(dir, "missing.so"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
