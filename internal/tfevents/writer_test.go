package tfevents

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/tfevents/tbtest"
	"github.com/stretchr/testify/require"
)

func TestMaskedCRC(t *testing.T) {
	// CRC-32C's check value (RFC 3720, B.4) and the mask of TFRecord's record_writer.cc.
	c := crc32.Checksum([]byte("123456789"), castagnoli)
	require.Equal(t, uint32(0xe3069283), c)
	require.Equal(t, (c>>15|c<<17)+0xa282ead8, maskedCRC([]byte("123456789")))
}

func TestAppendRecordFraming(t *testing.T) {
	rec := appendRecord(nil, []byte("hello"))
	require.Len(t, rec, 8+4+5+4)
	require.Equal(t, uint64(5), binary.LittleEndian.Uint64(rec[:8]))
	require.Equal(t, maskedCRC(rec[:8]), binary.LittleEndian.Uint32(rec[8:12]))
	require.Equal(t, "hello", string(rec[12:17]))
	require.Equal(t, maskedCRC([]byte("hello")), binary.LittleEndian.Uint32(rec[17:]))
}

// TestTensorBoardReadsIt writes scalars, a resume that goes back to an earlier step, and a torn
// last record, then reads the folder with TensorBoard's own reader.
func TestTensorBoardReadsIt(t *testing.T) {
	logdir := t.TempDir()
	run := filepath.Join(logdir, "run-a")
	require.NoError(t, os.Mkdir(run, 0o755))

	w, err := Create(run)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(w.Path()), FilePrefix))
	require.NoError(t, w.Start(1))
	values := []float32{2.302585, 1.5, 0.1, 1e-7, 3.4028235e38}
	for i, v := range values {
		require.NoError(t, w.Scalars(int64(i+1), Scalar{"train/loss", v}, Scalar{"lr", 0.001}))
	}
	require.NoError(t, w.Close())
	require.Error(t, w.Scalars(9, Scalar{"train/loss", 1}), "a closed writer refuses points")

	// A resume from the checkpoint of step 3 trains steps 4 and 5 again, into a new file: its
	// START at step 4 supersedes the first file's steps 4 and 5.
	w2, err := Create(run)
	require.NoError(t, err)
	require.Greater(t, filepath.Base(w2.Path()), filepath.Base(w.Path()), "files are read in name order")
	require.NoError(t, w2.Start(4))
	require.NoError(t, w2.Scalars(4, Scalar{"train/loss", 0.25}, Scalar{"lr", 0.001}))
	require.NoError(t, w2.Scalars(5, Scalar{"train/loss", 0.125}, Scalar{"lr", 0.001}))
	require.NoError(t, w2.Scalars(6, Scalar{"train/loss", 0.0625}, Scalar{"lr", 0.001}))
	require.NoError(t, w2.Close())
	// A crash in the middle of the last record: TensorBoard keeps every whole record before it.
	fi, err := os.Stat(w2.Path())
	require.NoError(t, err)
	require.NoError(t, os.Truncate(w2.Path(), fi.Size()-7))

	got := tbtest.ReadScalars(t, logdir)
	p := func(step int64, v float32) tbtest.Point { return tbtest.Point{Step: step, Value: v} }
	require.Equal(t, map[string]map[string][]tbtest.Point{"run-a": {
		"train/loss": {p(1, 2.302585), p(2, 1.5), p(3, 0.1), p(4, 0.25), p(5, 0.125)},
		"lr":         {p(1, 0.001), p(2, 0.001), p(3, 0.001), p(4, 0.001), p(5, 0.001)},
	}}, got)
}

func TestCreateNeedsTheFolder(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "tfevents: creating the TensorBoard event file")
	require.ErrorIs(t, err, os.ErrNotExist)
}
