package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// realGopls is the checkout's pinned gopls (kernel/setup.sh puts it in .bin), or "" when absent.
func realGopls(t *testing.T) string {
	t.Helper()
	for _, p := range []string{filepath.Join("..", "..", ".bin", "gopls")} {
		if abs, err := filepath.Abs(p); err == nil {
			if _, err := os.Stat(abs); err == nil {
				return abs
			}
		}
	}
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	return ""
}

// lspClient speaks JSON-RPC over conn, as GoNB's goplsclient does.
type lspClient struct {
	t    *testing.T
	conn net.Conn
	in   *bufio.Reader
}

func (c *lspClient) send(v map[string]any) {
	c.t.Helper()
	v["jsonrpc"] = "2.0"
	b, err := json.Marshal(v)
	require.NoError(c.t, err)
	_, err = c.conn.Write(frame(b))
	require.NoError(c.t, err)
}

// await reads until the response to id, answering gopls's own requests with null.
func (c *lspClient) await(id int) map[string]any {
	c.t.Helper()
	for {
		require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(3*time.Minute)))
		m, err := readLSP(c.in)
		require.NoError(c.t, err)
		var msg map[string]any
		require.NoError(c.t, json.Unmarshal(m.raw[strings.Index(string(m.raw), "\r\n\r\n")+4:], &msg))
		if m.method != "" && len(m.id) > 0 { // a request of gopls's
			_, err := c.conn.Write(reply(m.id, "null"))
			require.NoError(c.t, err)
			continue
		}
		if m.method == "" && string(m.id) == strconv.Itoa(id) {
			return msg
		}
	}
}

// TestLazyGoplsAnswersLikeGopls: the lazy gopls answers GoNB's handshake without a gopls, keeps
// its notifications, and at the first request starts the real gopls, which answers it
// (a completion of fmt.Pri in a file it was told of before it ran).
func TestLazyGoplsAnswersLikeGopls(t *testing.T) {
	real := realGopls(t)
	if real == "" {
		t.Skip("no gopls: run kernel/setup.sh")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/cell\n\ngo 1.22\n"), 0o644))
	source := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Pri\n}\n"
	main := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(main, []byte(source), 0o644))

	client, server := net.Pipe()
	defer client.Close()
	served := make(chan error, 1)
	go func() { served <- serveLazily(server, real) }()
	c := &lspClient{t: t, conn: client, in: bufio.NewReader(client)}
	uri := "file://" + dir
	c.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"processId": 0,
		"workspaceFolders": []any{map[string]any{"uri": uri, "name": "cell"}}}})
	init := c.await(1)
	require.Equal(t, map[string]any{"capabilities": map[string]any{}}, init["result"], "answered here")
	c.send(map[string]any{"method": "initialized", "params": map[string]any{}})
	c.send(map[string]any{"method": "textDocument/didOpen", "params": map[string]any{"textDocument": map[string]any{
		"uri": "file://" + main, "languageId": "go", "version": 1, "text": source}}})
	c.send(map[string]any{"id": 2, "method": "textDocument/completion", "params": map[string]any{
		"textDocument": map[string]any{"uri": "file://" + main}, "position": map[string]any{"line": 5, "character": 8}}})
	res := c.await(2)
	require.Nil(t, res["error"], "%v", res)
	b, err := json.Marshal(res["result"])
	require.NoError(t, err)
	require.Contains(t, string(b), `"label":"Println"`)
	client.Close()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("the lazy gopls did not end with its connection")
	}
}
