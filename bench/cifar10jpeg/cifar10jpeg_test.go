// Package cifar10jpeg holds the test of bench/cifar10jpeg/cifar10jpeg.py, the converter of
// CIFAR-10's JPEG files into the official binary layout (the tool is Python: see its header for
// why). The test writes a tiny JPEG tree of its own, so it needs neither the mirror nor the data.
package cifar10jpeg

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// The tiny tree: trainPer and testPer images of each class (10*trainPer training images split
// into 5 files).
const (
	trainPer = 2
	testPer  = 1
)

// jpegTolerance bounds how far a decoded pixel of a flat-colour image, encoded at quality 100, is
// from its colour: the YCbCr rounding of the encoder and of the decoder (half a level each way on
// each of Y, Cb and Cr), times the largest coefficient of the YCbCr-to-RGB matrix (1.772), is
// below 3 levels, and a flat 8x8 block has only a DC coefficient, quantised by 1 at quality 100.
const jpegTolerance = 3

// colourOf is the flat colour of image k (0 .. 10*(trainPer+testPer)-1): 16 levels apart on some
// channel from every other image's, so a decoded image names its source beyond doubt.
func colourOf(k int) color.RGBA {
	return color.RGBA{R: uint8(16 * (k % 8)), G: uint8(16 * ((k / 8) % 8)), B: uint8(40 + 16*(k/64)), A: 255}
}

func writeJPEG(t *testing.T, path string, w, h int, c color.RGBA) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// tree writes the tiny JPEG tree into a new folder: split/class/NNNN.jpg, image k of colourOf(k);
// want maps each colour to its class, per split.
func tree(t *testing.T) (dir string, want map[string]map[color.RGBA]int) {
	dir = t.TempDir()
	want = map[string]map[color.RGBA]int{"train": {}, "test": {}}
	k := 0
	for _, split := range []string{"train", "test"} {
		per := map[string]int{"train": trainPer, "test": testPer}[split]
		for label, class := range data.CIFAR10().ClassNames {
			for i := 0; i < per; i++ {
				c := colourOf(k)
				writeJPEG(t, filepath.Join(dir, split, class, fmt.Sprintf("%04d.jpg", i)), 32, 32, c)
				want[split][c] = label
				k++
			}
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# a mirror's readme\n"), 0o644))
	return dir, want
}

// convert runs the converter on src into out with the tiny tree's counts; it returns the
// combined output and whether it succeeded.
func convert(t *testing.T, src, out string, extra ...string) (string, bool) {
	t.Helper()
	args := append([]string{"cifar10jpeg.py", "--src", src, "--out", out,
		"--train-per-class", fmt.Sprint(trainPer), "--test-per-class", fmt.Sprint(testPer)}, extra...)
	cmd := exec.Command(testenv.Python(t, "numpy", "PIL"), args...)
	b, err := cmd.CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("running the converter: %v", err)
	}
	return string(b), err == nil
}

// requireConverted loads out with cifarlib's own reader and checks every record against the
// tree: each image is the flat colour of exactly one source image of its split, within
// jpegTolerance, with that image's class as its label, and every source image is there once.
func requireConverted(t *testing.T, out string, want map[string]map[color.RGBA]int) {
	t.Helper()
	spec := data.CIFAR10()
	for split, name := range map[data.Split]string{data.SplitTrain: "train", data.SplitTest: "test"} {
		recs, err := data.LoadSplit(out, spec, split)
		require.NoError(t, err)
		require.Equal(t, len(want[name]), recs.Len(), "%s images", name)
		seen := map[color.RGBA]bool{}
		for i := 0; i < recs.Len(); i++ {
			img := recs.Image(i)
			var match []color.RGBA
			for c := range want[name] {
				if flatWithin(img, c, jpegTolerance) {
					match = append(match, c)
				}
			}
			require.Len(t, match, 1, "%s record %d matches one source image", name, i)
			require.False(t, seen[match[0]], "%s record %d: its source image is in the split once", name, i)
			seen[match[0]] = true
			require.Equal(t, want[name][match[0]], recs.Label(i), "%s record %d: the label of its source's class folder", name, i)
		}
	}
	meta, err := os.ReadFile(filepath.Join(out, spec.Dir, "batches.meta.txt"))
	require.NoError(t, err)
	require.Equal(t, strings.Join(spec.ClassNames, "\n")+"\n", string(meta), "CIFAR-10's classes in its order")
	for _, f := range spec.TrainFiles {
		fi, err := os.Stat(filepath.Join(out, spec.Dir, f))
		require.NoError(t, err)
		require.EqualValues(t, 10*trainPer/len(spec.TrainFiles)*spec.RecordBytes(), fi.Size(), "%s: a fifth of the training images", f)
	}
}

// flatWithin reports whether every pixel of img (R, G, B planes) is within tol of c.
func flatWithin(img []byte, c color.RGBA, tol int) bool {
	plane := len(img) / 3
	for ch, v := range []uint8{c.R, c.G, c.B} {
		for _, p := range img[ch*plane : (ch+1)*plane] {
			if d := int(p) - int(v); d > tol || d < -tol {
				return false
			}
		}
	}
	return true
}

// labels returns the label bytes of a binary batch file, in order.
func labels(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	rec := data.CIFAR10().RecordBytes()
	var l []byte
	for i := 0; i+rec <= len(raw); i += rec {
		l = append(l, raw[i])
	}
	return l
}

// TestConvertTree converts a folder tree and a git repository of it: every image lands once,
// with its class's label, shuffled across the five training files; the same seed gives the same
// bytes and another seed another order.
func TestConvertTree(t *testing.T) {
	src, want := tree(t)
	out := t.TempDir()
	msg, ok := convert(t, src, out)
	require.True(t, ok, msg)
	require.Contains(t, msg, fmt.Sprintf("%d training images in 5 files, %d test images, seed 0", 10*trainPer, 10*testPer))
	requireConverted(t, out, want)
	bin := filepath.Join(out, "cifar-10-batches-bin")
	var train []byte
	for i := 1; i <= 5; i++ {
		train = append(train, labels(t, filepath.Join(bin, fmt.Sprintf("data_batch_%d.bin", i)))...)
	}
	sorted := bytes.Clone(train)
	for i := range sorted {
		sorted[i] = byte(i / trainPer) // the class order, before the shuffle
	}
	require.NotEqual(t, sorted, train, "the training images are shuffled")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only cifar-10-batches-bin/ in the output folder (no temporary left)")

	// The same tree as a git repository, read through `git archive` (as the JPEG mirror is).
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", src, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %s: %s", args, b)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "tree")
	again := t.TempDir()
	msg, ok = convert(t, filepath.Join(src, ".git"), again)
	require.True(t, ok, msg)
	for _, f := range []string{"data_batch_1.bin", "data_batch_5.bin", "test_batch.bin"} {
		a, err := os.ReadFile(filepath.Join(bin, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(again, "cifar-10-batches-bin", f))
		require.NoError(t, err)
		require.Equal(t, a, b, "%s: the same bytes from the repository and the same seed", f)
	}
	source, err := os.ReadFile(filepath.Join(again, "cifar-10-batches-bin", "SOURCE.json"))
	require.NoError(t, err)
	require.Contains(t, string(source), `"git_commit"`, "the source's commit is recorded")

	other := t.TempDir()
	msg, ok = convert(t, src, other, "--seed", "1")
	require.True(t, ok, msg)
	requireConverted(t, other, want)
	var otherTrain []byte
	for i := 1; i <= 5; i++ {
		otherTrain = append(otherTrain, labels(t, filepath.Join(other, "cifar-10-batches-bin", fmt.Sprintf("data_batch_%d.bin", i)))...)
	}
	require.NotEqual(t, train, otherTrain, "another seed, another order")
}

// TestConvertRefuses: an incomplete or mixed tree, an image of the wrong size, a file that is not
// a JPEG, and an existing output are refused in one line naming what and where, and nothing is
// written into the output folder.
func TestConvertRefuses(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, src string)
		want  string
	}{
		{"a class short", func(t *testing.T, src string) {
			require.NoError(t, os.Remove(filepath.Join(src, "train", "cat", "0001.jpg")))
		}, fmt.Sprintf("train/: incomplete or mixed: %d images per class expected, found cat %d", trainPer, trainPer-1)},
		{"a class too many", func(t *testing.T, src string) {
			writeJPEG(t, filepath.Join(src, "test", "ship", "9999.jpg"), 32, 32, colourOf(0))
		}, fmt.Sprintf("test/: incomplete or mixed: %d images per class expected, found ship %d", testPer, testPer+1)},
		{"a class missing", func(t *testing.T, src string) {
			require.NoError(t, os.RemoveAll(filepath.Join(src, "test", "truck")))
		}, "found truck 0"},
		{"a class that is not CIFAR-10's", func(t *testing.T, src string) {
			writeJPEG(t, filepath.Join(src, "train", "apple", "0000.jpg"), 32, 32, colourOf(0))
		}, "train/apple/: not a CIFAR-10 class"},
		{"a wrong size", func(t *testing.T, src string) {
			writeJPEG(t, filepath.Join(src, "train", "dog", "0000.jpg"), 32, 31, colourOf(0))
		}, "train/dog/0000.jpg: 32x31 pixels, CIFAR-10 images are 32x32"},
		{"not a JPEG", func(t *testing.T, src string) {
			require.NoError(t, os.WriteFile(filepath.Join(src, "test", "frog", "0000.jpg"), []byte("GIF89a"), 0o644))
		}, "test/frog/0000.jpg: not a readable JPEG"},
		{"a file beside the classes", func(t *testing.T, src string) {
			require.NoError(t, os.WriteFile(filepath.Join(src, "train", "list.txt"), nil, 0o644))
		}, "train/list.txt: not train/<class>/<name>.jpg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, _ := tree(t)
			c.spoil(t, src)
			out := t.TempDir()
			msg, ok := convert(t, src, out)
			require.False(t, ok, msg)
			require.Contains(t, msg, c.want)
			require.Contains(t, msg, "nothing was written")
			require.Equal(t, 1, strings.Count(strings.TrimSpace(msg), "\n")+1, "one line: %s", msg)
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing written into the output folder")
		})
	}
	t.Run("an existing output", func(t *testing.T) {
		src, _ := tree(t)
		out := t.TempDir()
		bin := filepath.Join(out, "cifar-10-batches-bin")
		require.NoError(t, os.Mkdir(bin, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(bin, "data_batch_1.bin"), []byte("keep"), 0o644))
		msg, ok := convert(t, src, out)
		require.False(t, ok, msg)
		require.Contains(t, msg, bin+" exists: remove it first")
		kept, err := os.ReadFile(filepath.Join(bin, "data_batch_1.bin"))
		require.NoError(t, err)
		require.Equal(t, "keep", string(kept), "the existing output is not replaced")
		entries, err := os.ReadDir(out)
		require.NoError(t, err)
		require.Len(t, entries, 1, "no temporary left beside it")
	})
}
