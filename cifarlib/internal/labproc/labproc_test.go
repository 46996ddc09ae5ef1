package labproc

import (
	"context"
	"encoding/gob"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/janpfeifer/gonb/gonbui/protocol"
	"github.com/stretchr/testify/require"
)

// TestFolderIsPrivate: the lab process's folder is this user's, mode 0700; one open to others,
// or a symbolic link in its place, is refused with what to do.
func TestFolderIsPrivate(t *testing.T) {
	tmp := t.TempDir()
	dir, err := Folder(tmp)
	require.NoError(t, err)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	require.NoError(t, os.Chmod(dir, 0o755))
	_, err = Folder(tmp)
	require.ErrorContains(t, err, "open to other users (mode -rwxr-xr-x): remove it, or chmod 700 it")

	other := t.TempDir()
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(other, "cifarlab-lab")))
	_, err = Folder(other)
	require.ErrorContains(t, err, "is not a folder (a symbolic link or a file)")

	_, err = Folder("")
	require.ErrorContains(t, err, "$GONB_TMP_DIR is not set")
}

// TestFingerprint: editing a library source, go.mod or go.sum changes the fingerprint; tests
// and testdata, which a cell does not link, do not.
func TestFingerprint(t *testing.T) {
	repo := t.TempDir()
	write := func(rel, text string) {
		path := filepath.Join(repo, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write("go.mod", "module github.com/cifarlab/cifarlab\n")
	write("go.sum", "")
	write("cifarlib/a.go", "package cifarlib\n")
	write("cifarlib/nb/b.go", "package nb\n")
	write("internal/c/c.go", "package c\n")
	first, err := Fingerprint(repo)
	require.NoError(t, err)
	require.Len(t, first, 16)
	same := func(what string, want bool) {
		t.Helper()
		fp, err := Fingerprint(repo)
		require.NoError(t, err)
		require.Equal(t, want, fp == first, what)
	}
	same("unchanged", true)
	write("cifarlib/a_test.go", "package cifarlib\n")
	write("cifarlib/testdata/x.go", "package x\n")
	write("cifarlib/README.md", "text")
	same("a test, testdata and a README", true)
	for _, rel := range []string{"cifarlib/nb/b.go", "internal/c/c.go", "go.sum"} {
		write(rel, "package changed\n")
		same(rel+" edited", false)
		first, _ = Fingerprint(repo)
	}
	write("cifarlib/new.go", "package cifarlib\n")
	same("a new file", false)

	_, err = Fingerprint("")
	require.ErrorContains(t, err, "set $CIFARLAB_REPO")
}

// TestLock: a second lock of the same file is refused with the holder's pid, in this process as
// in another; after unlock it is free.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".run.lock")
	unlock, err := Lock(path)
	require.NoError(t, err)
	_, err = Lock(path)
	var locked *LockedError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, os.Getpid(), locked.PID)
	unlock()
	unlock, err = Lock(path)
	require.NoError(t, err)
	unlock()
}

// startServer serves handle on a socket of a new private folder, returning the folder and
// the channel Serve's reason arrives on.
func startServer(t *testing.T, s *Server) (string, chan string) {
	t.Helper()
	folder, err := Folder(t.TempDir())
	require.NoError(t, err)
	s.Socket = SocketPath(folder)
	if s.Fingerprint == "" {
		s.Fingerprint, s.Backend = "fp", BackendKey()
	}
	ended := make(chan string, 1)
	go func() {
		reason, err := s.Serve()
		require.NoError(t, err)
		ended <- reason
	}()
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", s.Socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	return folder, ended
}

// TestProtocol: a request's text and displays (with their metadata) reach the cell in the order they were sent, then
// its result; its error keeps its text; the socket is mode 0600 in a 0700 folder.
func TestProtocol(t *testing.T) {
	s := &Server{Handle: func(ctx context.Context, req *Request, out *Stream) ([]byte, error) {
		out.Write([]byte("step 1\n"))
		out.Display(&protocol.DisplayData{Data: map[protocol.MIMEType]any{protocol.MIMEImageSVG: "<svg/>", protocol.MIMEImagePNG: []byte{1, 2}}, DisplayID: "live",
			Metadata: map[string]any{string(protocol.MIMEImagePNG): map[string]any{"width": 680, "height": 265}}})
		out.Write([]byte("step 2\n"))
		if req.Op == "fail" {
			return []byte("partial"), errors.New("nb: it failed")
		}
		return append([]byte("done "), req.Payload...), nil
	}, WireError: func(err error) *Error { return &Error{Text: err.Error(), Kinds: []string{"kind"}} }}
	folder, _ := startServer(t, s)
	fi, err := os.Stat(SocketPath(folder))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	c := &Client{Folder: folder, Fingerprint: "fp"}
	var got []string
	each := func(m *Message) {
		switch m.Kind {
		case KindText:
			got = append(got, m.Text)
		case KindDisplay:
			got = append(got, m.Display.DisplayID+":"+m.Display.Data[protocol.MIMEImageSVG].(string))
			require.Equal(t, []byte{1, 2}, m.Display.Data[protocol.MIMEImagePNG])
			require.Equal(t, map[string]any{string(protocol.MIMEImagePNG): map[string]any{"width": 680, "height": 265}}, m.Display.Metadata,
				"the PNG's display size travels with it")
		}
	}
	res, err := c.Do(context.Background(), &Request{Op: "fit", Payload: []byte("x")}, each)
	require.NoError(t, err)
	require.Equal(t, "done x", string(res.Payload))
	require.Equal(t, []string{"step 1\n", "live:<svg/>", "step 2\n"}, got)

	res, err = c.Do(context.Background(), &Request{Op: "fail"}, func(*Message) {})
	var wire *Error
	require.ErrorAs(t, err, &wire)
	require.Equal(t, "nb: it failed", wire.Text)
	require.Equal(t, []string{"kind"}, wire.Kinds)
	require.Equal(t, "partial", string(res.Payload), "an interrupted run has a result and an error")
}

// TestCancel: the cell's interrupt (its context ending) cancels the request in the lab process,
// whose result still reaches the cell; a cell gone (its connection closed) cancels it too.
func TestCancel(t *testing.T) {
	started := make(chan struct{}, 2)
	cancelled := make(chan struct{}, 2)
	s := &Server{Handle: func(ctx context.Context, req *Request, out *Stream) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return []byte("saved"), errors.New("interrupted")
	}}
	folder, _ := startServer(t, s)
	c := &Client{Folder: folder, Fingerprint: "fp"}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := c.Do(ctx, &Request{Op: "fit"}, func(*Message) {})
	require.EqualError(t, err, "interrupted")
	require.Equal(t, "saved", string(res.Payload))
	<-cancelled

	conn, err := net.Dial("unix", SocketPath(folder))
	require.NoError(t, err)
	require.NoError(t, gobRequest(conn, &Request{Op: "fit", Fingerprint: "fp", Backend: BackendKey()}))
	<-started
	conn.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the connection did not cancel the request")
	}
}

// TestServerEnds: a cell of other library code, or of another backend, is refused and the
// lab process ends (its socket gone, for the new one); so it does when its kernel goes and when
// it is idle.
func TestServerEnds(t *testing.T) {
	handle := func(context.Context, *Request, *Stream) ([]byte, error) { return nil, nil }
	for _, tc := range []struct {
		name, fingerprint, backend, reason string
	}{
		{"other code", "other", BackendKey(), "the library code changed since it started"},
		{"other backend", "fp", "GOMLX_BACKEND=xla:cuda", "it runs another backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folder, ended := startServer(t, &Server{Handle: handle})
			conn, err := net.Dial("unix", SocketPath(folder))
			require.NoError(t, err)
			defer conn.Close()
			c := &Client{Folder: folder}
			_, refused, err := c.exchange(context.Background(), conn, &Request{Fingerprint: tc.fingerprint, Backend: tc.backend}, nil)
			require.NoError(t, err)
			require.Contains(t, refused, tc.reason)
			require.Contains(t, <-ended, tc.reason)
			_, err = os.Stat(SocketPath(folder))
			require.ErrorIs(t, err, os.ErrNotExist)
		})
	}
	t.Run("kernel gone", func(t *testing.T) {
		alive := true
		var mu = make(chan struct{}, 1)
		mu <- struct{}{}
		_, ended := startServer(t, &Server{Handle: handle, Alive: func() bool { <-mu; defer func() { mu <- struct{}{} }(); return alive }})
		<-mu
		alive = false
		mu <- struct{}{}
		select {
		case reason := <-ended:
			require.Equal(t, "the kernel is gone", reason)
		case <-time.After(5 * time.Second):
			t.Fatal("the lab process outlived its kernel")
		}
	})
	t.Run("idle", func(t *testing.T) {
		_, ended := startServer(t, &Server{Handle: handle, Idle: 1500 * time.Millisecond})
		select {
		case reason := <-ended:
			require.Equal(t, "idle for 1.5s", reason)
		case <-time.After(10 * time.Second):
			t.Fatal("the lab process outlived its idle time")
		}
	})
}

// gobRequest sends req on conn, as Client does.
func gobRequest(conn net.Conn, req *Request) error { return gob.NewEncoder(conn).Encode(req) }

// TestServerEndsOnSIGTERM: SIGTERM (the kernel supervisor's) cancels the request in flight, whose
// result still goes out, and ends the server.
func TestServerEndsOnSIGTERM(t *testing.T) {
	started := make(chan struct{}, 1)
	folder, ended := startServer(t, &Server{Handle: func(ctx context.Context, req *Request, out *Stream) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done()
		return []byte("saved"), errors.New("interrupted")
	}})
	done := make(chan error, 1)
	go func() {
		<-started
		done <- syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
	res, err := (&Client{Folder: folder, Fingerprint: "fp"}).Do(context.Background(), &Request{Op: "fit"}, func(*Message) {})
	require.NoError(t, <-done)
	require.EqualError(t, err, "interrupted")
	require.Equal(t, "saved", string(res.Payload))
	require.Equal(t, "signal: terminated", <-ended)
}
