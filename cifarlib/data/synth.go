package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/cifarlab/cifarlab/internal/atomicfile"
)

// Default sizes of synthetic splits, used when SynthOptions leaves them at zero. They are
// small on purpose: CPU backends train slowly, and tests and workshops need quick runs.
const (
	DefaultSynthTrainSize = 5000
	DefaultSynthTestSize  = 1000
	// MaxSynthSize bounds each synthetic split (3 GiB of pixels), to catch typos in sizes.
	MaxSynthSize = 1_000_000
)

// SyntheticMarker is the file, inside spec.Dir, that marks data written by Synthesize and
// records how it was made (JSON of SynthInfo).
const SyntheticMarker = "cifarlab-synthetic.json"

// synthGenerator names the version of the generator; bump it whenever the images change.
const synthGenerator = "cifarlab-synth-v1"

// SynthOptions controls Synthesize.
type SynthOptions struct {
	// Seed makes the data deterministic: the same Seed and sizes give byte-identical files.
	Seed int64
	// TrainSize and TestSize are the number of records per split; 0 selects
	// DefaultSynthTrainSize and DefaultSynthTestSize.
	TrainSize, TestSize int
	// LabelNoise is the fraction, in [0, 1), of training records whose label is replaced by a
	// different, random class (the image stays that of its true class). The test split stays clean.
	LabelNoise float64
}

// WithDefaults returns the options with zero sizes replaced by the defaults.
func (o SynthOptions) WithDefaults() SynthOptions {
	if o.TrainSize == 0 {
		o.TrainSize = DefaultSynthTrainSize
	}
	if o.TestSize == 0 {
		o.TestSize = DefaultSynthTestSize
	}
	return o
}

// validate checks the options (after WithDefaults) against a spec.
func (o SynthOptions) validate(spec Spec) error {
	if o.TrainSize < len(spec.TrainFiles) || o.TrainSize > MaxSynthSize {
		return fmt.Errorf("data: synthetic %s train size %d must be in [%d, %d] (one record per file at least)",
			spec.Name, o.TrainSize, len(spec.TrainFiles), MaxSynthSize)
	}
	if o.TestSize < len(spec.TestFiles) || o.TestSize > MaxSynthSize {
		return fmt.Errorf("data: synthetic %s test size %d must be in [%d, %d]",
			spec.Name, o.TestSize, len(spec.TestFiles), MaxSynthSize)
	}
	if !(o.LabelNoise >= 0 && o.LabelNoise < 1) {
		return fmt.Errorf("data: label noise %v must be in [0, 1)", o.LabelNoise)
	}
	return nil
}

// SynthInfo is the content of the SyntheticMarker file.
type SynthInfo struct {
	Generator  string  `json:"generator"`
	Dataset    string  `json:"dataset"`
	Seed       int64   `json:"seed"`
	TrainSize  int     `json:"train_size"`
	TestSize   int     `json:"test_size"`
	LabelNoise float64 `json:"label_noise"`
}

// Synthesize writes a synthetic dataset in the real binary format to root/spec.Dir, with the
// official file names, so that LoadSplit(root, spec, ...) reads it like the real data. The
// images are class dependent and learnable: each fine class has its own mean colour (for
// CIFAR-100 the coarse class sets red and blue, the fine class within it sets green) and its
// own sinusoidal stripe pattern (orientation, frequency, colour), and every image adds a
// random shift, brightness jitter and pixel noise. It is deterministic for a given Seed and
// sizes. Files are written atomically, and the SyntheticMarker last. It refuses to overwrite
// verified real data.
func Synthesize(root string, spec Spec, opts SynthOptions) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	opts = opts.WithDefaults()
	if err := opts.validate(spec); err != nil {
		return err
	}
	dir := filepath.Join(root, spec.Dir)
	if _, err := os.Stat(filepath.Join(dir, VerifiedMarker)); err == nil {
		return fmt.Errorf("data: %s holds verified real %s data: refusing to overwrite it with synthetic data; choose another folder",
			dir, spec.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, SyntheticMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("data: %w", err)
	}
	for _, split := range []Split{SplitTrain, SplitTest} {
		recs, err := SynthesizeRecords(spec, split, opts)
		if err != nil {
			return err
		}
		files := split.Files(spec)
		n := recs.Len()
		for k, name := range files {
			lo, hi := k*n/len(files), (k+1)*n/len(files)
			part := &Records{Spec: spec, Source: filepath.Join(dir, name),
				Pixels:    recs.Pixels[lo*ImageBytes : hi*ImageBytes],
				RawLabels: recs.RawLabels[lo*spec.LabelBytes : hi*spec.LabelBytes]}
			if err := writeFile(part.Source, part); err != nil {
				return err
			}
		}
	}
	info := SynthInfo{Generator: synthGenerator, Dataset: spec.Name, Seed: opts.Seed,
		TrainSize: opts.TrainSize, TestSize: opts.TestSize, LabelNoise: opts.LabelNoise}
	return writeJSONAtomic(filepath.Join(dir, SyntheticMarker), info)
}

// ReadSynthInfo returns the SynthInfo of synthetic data in root/spec.Dir, or an error
// wrapping os.ErrNotExist if the folder holds no synthetic data.
func ReadSynthInfo(root string, spec Spec) (SynthInfo, error) {
	var info SynthInfo
	data, err := os.ReadFile(filepath.Join(root, spec.Dir, SyntheticMarker))
	if err != nil {
		return info, fmt.Errorf("data: %w", err)
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("data: reading %s: %w", filepath.Join(root, spec.Dir, SyntheticMarker), err)
	}
	return info, nil
}

// writeJSONAtomic writes v as indented JSON to path atomically.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// SynthesizeRecords generates one synthetic split in memory; Synthesize writes the same
// records to disk. Zero sizes in opts select the defaults.
func SynthesizeRecords(spec Spec, split Split, opts SynthOptions) (*Records, error) {
	recs, _, err := synthesizeRecords(spec, split, opts)
	return recs, err
}

// Salts that separate the random streams of the splits and of the label choices.
const (
	synthSaltTrain  = 0x7472_6169_6e00_0001
	synthSaltTest   = 0x7465_7374_0000_0002
	synthSaltLabels = 0x6c61_6265_6c73_0003
)

// synthesizeRecords also returns the true fine class of each record (before label noise).
func synthesizeRecords(spec Spec, split Split, opts SynthOptions) (*Records, []int, error) {
	if err := checkSpec(spec); err != nil {
		return nil, nil, err
	}
	opts = opts.WithDefaults()
	if err := opts.validate(spec); err != nil {
		return nil, nil, err
	}
	n, salt, noise := opts.TrainSize, uint64(synthSaltTrain), opts.LabelNoise
	if split == SplitTest {
		n, salt, noise = opts.TestSize, synthSaltTest, 0
	}
	numFine := spec.MaxLabels[spec.LabelBytes-1]
	protos := synthPrototypes(spec.Name, numFine)

	// Balanced classes in a seeded random order, then exactly round(noise*n) wrong labels.
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), salt^synthSaltLabels))
	truth := make([]int, n)
	for i := range truth {
		truth[i] = i % numFine
	}
	rng.Shuffle(n, func(i, j int) { truth[i], truth[j] = truth[j], truth[i] })
	stored := append([]int(nil), truth...)
	noisy := int(math.Round(noise * float64(n)))
	for _, i := range rng.Perm(n)[:noisy] {
		stored[i] = (truth[i] + 1 + rng.IntN(numFine-1)) % numFine
	}

	recs := NewRecords(spec, fmt.Sprintf("synthetic %s %s (seed %d)", spec.Name, split, opts.Seed), n)
	recs.Kind = KindSynthetic
	lb := spec.LabelBytes
	for i, fine := range stored {
		recs.RawLabels[i*lb+lb-1] = byte(fine)
		if lb == 2 {
			recs.RawLabels[i*lb] = byte(CIFAR100CoarseOf(fine))
		}
	}
	// Images: each from its own random stream, so the result does not depend on the workers.
	workers := min(runtime.GOMAXPROCS(0), max(1, n/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * n / workers; i < (w+1)*n/workers; i++ {
				r := rand.New(rand.NewPCG(uint64(opts.Seed)^salt, uint64(i)))
				protos[truth[i]].render(r, recs.Image(i))
			}
		}()
	}
	wg.Wait()
	return recs, truth, nil
}

// synthShift is the largest random translation, in pixels, of a synthetic image's pattern.
const synthShift = 3

// synthPrototype is the recipe for the images of one fine class.
type synthPrototype struct {
	// base is the mean colour (0..255 per channel).
	base [ImageChannels]float32
	// amp is the stripe amplitude per channel (signed: the stripes' colour).
	amp [ImageChannels]float32
	// wave holds sin() of the class's stripe pattern over a (32+2*synthShift)^2 window.
	wave []float32
}

// synthPrototypes returns the recipes of the numFine classes of a dataset.
func synthPrototypes(name string, numFine int) []synthPrototype {
	// Stripe colour directions, cycled over the classes.
	dirs := [][ImageChannels]float32{{1, 1, 1}, {1, -1, 0}, {0, 1, -1}, {-1, 0, 1}, {1, 1, -1}, {-1, 1, 1}}
	const side = ImageWidth + 2*synthShift
	protos := make([]synthPrototype, numFine)
	for k := range protos {
		p := &protos[k]
		if name == "cifar100" && numFine == 100 {
			// Coarse class -> red and blue levels, rank within the superclass -> green level,
			// so both the 100 fine and the 20 coarse classes are separable by colour.
			initSuperclasses()
			c, s := fineToCoarse[k], fineRank[k]
			p.base = [3]float32{40 + 43.75*float32(c%5), 40 + 43.75*float32(s), 50 + 50*float32(c/5)}
		} else {
			// Evenly spaced hues.
			p.base = hueColour(float64(k)/float64(numFine), 0.65, 0.8)
		}
		d := dirs[k%len(dirs)]
		for c := range p.amp {
			p.amp[c] = 28 * d[c]
		}
		theta := math.Pi * float64((k*3)%8) / 8
		freq := 1.5 + float64((k*7)%5) // cycles per image width
		phase := 2 * math.Pi * math.Mod(float64(k)*0.6180339887, 1)
		p.wave = make([]float32, side*side)
		for y := range side {
			for x := range side {
				u := (float64(x)*math.Cos(theta) + float64(y)*math.Sin(theta)) / ImageWidth
				p.wave[y*side+x] = float32(math.Sin(2*math.Pi*freq*u + phase))
			}
		}
	}
	return protos
}

// hueColour converts a hue in [0, 1) with saturation and value to 0..255 RGB.
func hueColour(h, s, v float64) [3]float32 {
	h6 := h * 6
	sector := int(h6) % 6
	f := h6 - math.Floor(h6)
	p, q, t := v*(1-s), v*(1-s*f), v*(1-s*(1-f))
	var r, g, b float64
	switch sector {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return [3]float32{float32(r * 255), float32(g * 255), float32(b * 255)}
}

// render draws one image of the class into planar (ImageBytes) with randomness from r.
func (p *synthPrototype) render(r *rand.Rand, planar []byte) {
	const side = ImageWidth + 2*synthShift
	dx, dy := r.IntN(2*synthShift+1), r.IntN(2*synthShift+1)
	jitter := float32(r.IntN(21) - 10)
	var bits uint64
	left := 0
	for c := range ImageChannels {
		base, amp := p.base[c]+jitter, p.amp[c]
		plane := planar[c*ImageHeight*ImageWidth : (c+1)*ImageHeight*ImageWidth]
		for y := range ImageHeight {
			row := p.wave[(y+dy)*side+dx : (y+dy)*side+dx+ImageWidth]
			out := plane[y*ImageWidth : (y+1)*ImageWidth]
			for x, w := range row {
				if left == 0 {
					bits, left = r.Uint64(), 4
				}
				// Triangular noise in about [-36, 36] (std ~15) from two random bytes.
				noise := float32(int(bits&0xff)+int(bits>>8&0xff)-255) * 0.14
				bits >>= 16
				left--
				v := base + amp*w + noise
				out[x] = byte(min(max(v+0.5, 0), 255))
			}
		}
	}
}
