package tfevents

import "testing"

// BenchmarkScalars measures one training point as the trainer writes it: an event of 7 scalars
// (train loss, accuracy, top-5, learning rate, test loss, accuracy, top-5), one write(2).
func BenchmarkScalars(b *testing.B) {
	w, err := Create(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	values := []Scalar{{"train/loss", 2.3}, {"train/accuracy", 0.1}, {"train/top5", 0.5}, {"train/learning_rate", 0.001},
		{"test/loss", 2.2}, {"test/accuracy", 0.12}, {"test/top5", 0.52}}
	for i := 0; b.Loop(); i++ {
		if err := w.Scalars(int64(i), values...); err != nil {
			b.Fatal(err)
		}
	}
}
