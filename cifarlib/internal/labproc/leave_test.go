package labproc

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInterruptedCellLeavesInTime: a cell interrupted while the lab process is in a long step
// (longer than GoNB gives a cell between the interrupt and the kill) stops waiting after Grace
// with what the lab process said it does (its KindStopping message), which the cell can print
// before it is killed; the lab process goes on to the end of its step and saves, and a cell of
// the next request meanwhile is told what it waits for and then served.
func TestInterruptedCellLeavesInTime(t *testing.T) {
	release := make(chan struct{})
	var saved sync.WaitGroup
	saved.Add(1)
	s := &Server{Handle: func(ctx context.Context, req *Request, out *Stream) ([]byte, error) {
		if req.Op == "next" {
			return []byte("next done"), nil
		}
		<-ctx.Done()
		_ = out.Send(&Message{Kind: KindStopping, Text: "saves after step 3", Payload: []byte{3}})
		<-release // the long step goes on
		saved.Done()
		return []byte("saved"), errors.New("interrupted")
	}, Waiting: func() string { return "still saving step 3; waiting" }}
	folder, _ := startServer(t, s)

	c := &Client{Folder: folder, Fingerprint: "fp", Grace: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	began := time.Now()
	res, err := c.Do(ctx, &Request{Op: "fit"}, func(*Message) {})
	require.Nil(t, res)
	var left *LeftError
	require.ErrorAs(t, err, &left)
	require.NotNil(t, left.Stopping)
	require.Equal(t, "saves after step 3", left.Stopping.Text)
	require.Equal(t, []byte{3}, left.Stopping.Payload)
	require.Less(t, time.Since(began), 3*time.Second, "the cell left within its grace")

	var texts []string
	next := make(chan error, 1)
	go func() {
		res, err := c.Do(context.Background(), &Request{Op: "next"}, func(m *Message) { texts = append(texts, m.Text) })
		if err == nil && string(res.Payload) != "next done" {
			err = errors.New("wrong result " + string(res.Payload))
		}
		next <- err
	}()
	time.Sleep(200 * time.Millisecond)
	close(release)
	saved.Wait()
	require.NoError(t, <-next)
	require.Equal(t, []string{"still saving step 3; waiting\n"}, texts)

	// Without a KindStopping message in time, the cell still leaves.
	s.Handle = func(ctx context.Context, req *Request, out *Stream) ([]byte, error) {
		<-ctx.Done()
		time.Sleep(time.Second)
		return nil, errors.New("interrupted")
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.Do(ctx, &Request{Op: "fit"}, func(*Message) {})
	require.ErrorAs(t, err, &left)
	require.Nil(t, left.Stopping)
}

// TestLockNote: the holder of a lock says what it does in it; Holder and a refused Lock read
// it, and a free lock (or none) has no holder.
func TestLockNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".run.lock")
	require.Nil(t, Holder(path), "no lock file")
	unlock, err := Lock(path)
	require.NoError(t, err)
	require.NoError(t, WriteNote(path, "saving step 3 of 10"))
	h := Holder(path)
	require.NotNil(t, h)
	require.Equal(t, "saving step 3 of 10", h.Note)
	_, err = Lock(path)
	var locked *LockedError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, "saving step 3 of 10", locked.Note)
	unlock()
	require.Nil(t, Holder(path))
}

// TestRest: without a request, the server rests once per level (Release after ReleaseAfter,
// Drop after TrimAfter), and a request starts it over.
func TestRest(t *testing.T) {
	var mu sync.Mutex
	var rests []RestLevel
	s := &Server{Handle: func(context.Context, *Request, *Stream) ([]byte, error) { return nil, nil },
		TrimAfter: ReleaseAfter + 2*time.Second,
		Rest: func(l RestLevel) {
			mu.Lock()
			rests = append(rests, l)
			mu.Unlock()
		}}
	folder, _ := startServer(t, s)
	got := func() []RestLevel {
		mu.Lock()
		defer mu.Unlock()
		return append([]RestLevel(nil), rests...)
	}
	require.Eventually(t, func() bool { return len(got()) == 2 }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, []RestLevel{Release, Drop}, got())
	time.Sleep(2 * time.Second)
	require.Len(t, got(), 2, "once per level")
	_, err := (&Client{Folder: folder, Fingerprint: "fp"}).Do(context.Background(), &Request{Op: "fit"}, func(*Message) {})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(got()) == 3 }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, Release, got()[2])
}
