// Command logits writes the logits of a lab run on raw images, for bench/interop/verify.py to
// compare with PyTorch's:
//
//	go run ./bench/interop/logits --run RUN_DIR --images FILE --out FILE [--backend auto]
//
// --images holds N images of 3072 bytes, channel-planar like CIFAR's records; they are
// normalised with the run's dataset statistics by Records.Batch, as the lab's data pipeline does. --out
// receives N x head float32 values, little-endian.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

func main() {
	runDir := flag.String("run", "", "run folder")
	images := flag.String("images", "", "raw uint8 images, 3072 bytes each")
	out := flag.String("out", "", "output file of float32 logits")
	backendName := flag.String("backend", backends.Auto, "backend")
	flag.Parse()
	if err := run(*runDir, *images, *out, *backendName); err != nil {
		fmt.Fprintln(os.Stderr, "logits:", err)
		os.Exit(1)
	}
}

func run(runDir, imagesPath, out, backendName string) error {
	raw, err := os.ReadFile(imagesPath)
	if err != nil {
		return err
	}
	if len(raw) == 0 || len(raw)%data.ImageBytes != 0 {
		return fmt.Errorf("%s: %d bytes is not a whole number of %d-byte images", imagesPath, len(raw), data.ImageBytes)
	}
	backend, err := backends.New(backendName)
	if err != nil {
		return err
	}
	ck, err := training.LoadCheckpoint(runDir, backend)
	if err != nil {
		return err
	}
	n := len(raw) / data.ImageBytes
	recs := data.NewRecords(ck.Model.Spec, imagesPath, n)
	copy(recs.Pixels, raw)
	var buf []byte
	const batch = 100
	for first := 0; first < n; first += batch {
		b, err := recs.Batch(first, min(batch, n-first))
		if err != nil {
			return err
		}
		logits, err := ck.Logits(b.Images)
		if err != nil {
			return err
		}
		for _, v := range tensors.MustCopyFlatData[float32](logits) {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	return os.WriteFile(out, buf, 0o644)
}
