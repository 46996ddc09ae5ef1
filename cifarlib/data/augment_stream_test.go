package data

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// contingency returns Pearson's chi-squared statistic of the table's independence of rows and
// columns, and its degrees of freedom ((rows-1)(cols-1)).
func contingency(table [][]float64) (stat float64, df int) {
	rows, cols := make([]float64, len(table)), make([]float64, len(table[0]))
	total := 0.0
	for i, row := range table {
		for j, v := range row {
			rows[i] += v
			cols[j] += v
			total += v
		}
	}
	for i, row := range table {
		for j, v := range row {
			if e := rows[i] * cols[j] / total; e > 0 {
				stat += (v - e) * (v - e) / e
			}
		}
	}
	return stat, (len(rows) - 1) * (len(cols) - 1)
}

// requireChance fails unless a chi-squared statistic with df degrees of freedom is at least as
// likely as 1e-6 under independence: with the dozens of tables below, a false failure has odds of
// about 1 in 10,000 for a fresh stream, and the streams are fixed by their seeds, so a pass is
// repeated exactly. A stream with a dependence the table sees (a shift that follows the shuffle,
// epochs that repeat each other, a partial shuffle) lies far beyond it.
func requireChance(t *testing.T, what string, stat float64, df int) {
	t.Helper()
	p := distuv.ChiSquared{K: float64(df)}.Survival(stat)
	require.GreaterOrEqual(t, p, 1e-6, "%s: chi-squared %.1f on %d degrees of freedom (p = %.2g): the draws depend on each other", what, stat, df, p)
}

// boolIndex is 1 for true, 0 for false: a table index.
func boolIndex(v bool) int {
	if v {
		return 1
	}
	return 0
}

func table(rows, cols int) [][]float64 {
	t := make([][]float64, rows)
	for i := range t {
		t[i] = make([]float64, cols)
	}
	return t
}

// altFlipStream draws the altflip-translate stream of recs for seed: each record's batch and
// shift (dy, dx as one of 25) in each epoch, and its pre-flip.
func altFlipStream(t *testing.T, recs *Records, seed int64, batch, epochs int) (batchOf, shiftOf [][]int, pre []bool) {
	n := recs.Len()
	ds, err := NewDataset("stream", recs, DatasetOptions{BatchSize: batch, Shuffle: true, Seed: seed, Epochs: epochs,
		DropRemainder: true, Augment: true, Augmentation: AugmentAltFlip})
	require.NoError(t, err)
	order := make([][]int, epochs)
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		order[hb.Epoch] = append(order[hb.Epoch], hb.Examples...)
	}
	batchOf, shiftOf = make([][]int, epochs), make([][]int, epochs)
	for e := range epochs {
		require.Len(t, order[e], n)
		batchOf[e], shiftOf[e] = make([]int, n), make([]int, n)
		for p, d := range newAugmenter(ds, e).draw(n) {
			ex := order[e][p]
			batchOf[e][ex] = p / batch
			shiftOf[e][ex] = (d.a+DefaultTranslate)*(2*DefaultTranslate+1) + d.b + DefaultTranslate
		}
	}
	return batchOf, shiftOf, ds.preflip
}

// checkEpochStream checks epoch e of a stream: its shifts uniform, and independent of the
// pre-flip; the batches independent of the record's index and of its pre-flip.
func checkEpochStream(t *testing.T, name func(string) string, e int, batchOf, shiftOf []int, pre []bool, batch, shifts int) {
	n := len(batchOf)
	uniform := table(1, shifts)
	for _, s := range shiftOf {
		uniform[0][s]++
	}
	stat, expected := 0.0, float64(n/shifts)
	for _, v := range uniform[0] {
		stat += (v - expected) * (v - expected) / expected
	}
	requireChance(t, name(fmt.Sprintf("epoch %d shifts against uniform", e)), stat, shifts-1)

	preShift, posIndex, preBatch := table(2, shifts), table(n/batch, 10), table(2, n/batch)
	for ex := range n {
		preShift[boolIndex(pre[ex])][shiftOf[ex]]++
		posIndex[batchOf[ex]][ex*10/n]++ // a partial shuffle keeps records near their index
		preBatch[boolIndex(pre[ex])][batchOf[ex]]++
	}
	stat, df := contingency(preShift)
	requireChance(t, name(fmt.Sprintf("epoch %d pre-flip against shift", e)), stat, df)
	stat, df = contingency(posIndex)
	requireChance(t, name(fmt.Sprintf("epoch %d batch against record index", e)), stat, df)
	stat, df = contingency(preBatch)
	requireChance(t, name(fmt.Sprintf("epoch %d pre-flip against batch", e)), stat, df)
}

// TestAltFlipStreamIsRandom checks AugmentAltFlip's stream as a whole, where
// TestDatasetAltFlip checks single views: the pre-flip, each epoch's shuffle and each epoch's
// shifts come from generators seeded from the same Seed (salted) and the epoch, and must
// behave as independent uniform draws. The lab's airbench94 runs once trailed airbench's by a
// point, and its stream was suspected; these are the checks that cleared it
// (research/airbench94-parity/findings-cpu.md), kept so that a change of seeding cannot bring such a dependence in.
func TestAltFlipStreamIsRandom(t *testing.T) {
	const n, batch, epochs, shifts = 5000, 500, 2, 25
	recs := testRecords(CIFAR10(), n)
	var preflipsBySeed [][]bool
	for _, seed := range []int64{0, 1, 7} {
		batchOf, shiftOf, pre := altFlipStream(t, recs, seed, batch, epochs)
		preflipsBySeed = append(preflipsBySeed, pre)
		name := func(s string) string { return fmt.Sprintf("seed %d: %s", seed, s) }

		for e := range epochs {
			checkEpochStream(t, name, e, batchOf[e], shiftOf[e], pre, batch, shifts)
		}
		shiftShift, batchBatch, preLabel := table(shifts, shifts), table(n/batch, n/batch), table(2, 10)
		for ex := range n {
			shiftShift[shiftOf[0][ex]][shiftOf[1][ex]]++
			batchBatch[batchOf[0][ex]][batchOf[1][ex]]++
			preLabel[boolIndex(pre[ex])][recs.Label(ex)]++
		}
		stat, df := contingency(shiftShift)
		requireChance(t, name("shift in epoch 0 against shift in epoch 1"), stat, df)
		stat, df = contingency(batchBatch)
		requireChance(t, name("batch in epoch 0 against batch in epoch 1"), stat, df)
		stat, df = contingency(preLabel)
		requireChance(t, name("pre-flip against label"), stat, df)
	}
	for i := range preflipsBySeed {
		for j := i + 1; j < len(preflipsBySeed); j++ {
			agree := table(2, 2)
			for ex := range n {
				agree[boolIndex(preflipsBySeed[i][ex])][boolIndex(preflipsBySeed[j][ex])]++
			}
			stat, df := contingency(agree)
			requireChance(t, fmt.Sprintf("pre-flips of seeds %d and %d", i, j), stat, df)
		}
	}
}
