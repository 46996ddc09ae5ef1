package sweep

import (
	"fmt"
	"html"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// Group is the tasks of a sweep that share every setting but those averaged over (the seeds):
// one row of Table.
type Group struct {
	// Settings are the group's values of the other grid settings.
	Settings []Setting `json:"settings"`
	// Runs are its run folders' names, Done how many of them are done.
	Runs []string `json:"runs"`
	Done int      `json:"done"`
	// Accuracy and AccuracySpread are the mean and the sample standard deviation of the final
	// test accuracy over the done runs that have one (spread 0 with one run); Tested counts them.
	Accuracy       float64 `json:"accuracy"`
	AccuracySpread float64 `json:"accuracy_spread"`
	Tested         int     `json:"tested"`
	// Loss and LossSpread are the same for the last training loss of the done runs.
	Loss       float64 `json:"loss"`
	LossSpread float64 `json:"loss_spread"`
	// Best is the run with the highest test accuracy of the group ("" when none has one).
	Best string `json:"best,omitempty"`
}

// Table is a sweep's runs grouped by hyperparameter, best mean test accuracy first: what a
// notebook shows to compare the settings of a sweep over several seeds.
type Table struct {
	Sweep string `json:"sweep"`
	// Over are the settings averaged over.
	Over   []string `json:"over"`
	Groups []Group  `json:"groups"`
}

// Table groups the sweep's runs by their settings other than over (default: "seed") and gives
// each group the mean and spread of its runs' final test accuracy and training loss, read
// from their run folders.
func (s *Sweep) Table(over ...string) *Table {
	if len(over) == 0 {
		over = []string{"seed"}
	}
	t := &Table{Sweep: s.Name, Over: over}
	index := map[string]int{}
	acc := map[int][]float64{}
	loss := map[int][]float64{}
	best := map[int]float64{}
	for i, task := range s.Tasks {
		var key []Setting
		for _, st := range task.Settings {
			if !slices.Contains(over, st.Field) {
				key = append(key, st)
			}
		}
		k := fmt.Sprint(key)
		g, ok := index[k]
		if !ok {
			g = len(t.Groups)
			index[k] = g
			t.Groups = append(t.Groups, Group{Settings: key})
		}
		grp := &t.Groups[g]
		grp.Runs = append(grp.Runs, task.Name)
		run := runs.Read(s.RunDir(i))
		if run.Status != runs.RunDone {
			continue
		}
		grp.Done++
		loss[g] = append(loss[g], run.Loss)
		if run.HasTest {
			acc[g] = append(acc[g], run.TestAccuracy)
			if b, seen := best[g]; !seen || run.TestAccuracy > b {
				best[g], grp.Best = run.TestAccuracy, task.Name
			}
		}
	}
	for g := range t.Groups {
		grp := &t.Groups[g]
		grp.Accuracy, grp.AccuracySpread = meanSpread(acc[g])
		grp.Loss, grp.LossSpread = meanSpread(loss[g])
		grp.Tested = len(acc[g])
	}
	sort.SliceStable(t.Groups, func(i, j int) bool {
		a, b := t.Groups[i], t.Groups[j]
		if (a.Tested > 0) != (b.Tested > 0) {
			return a.Tested > 0
		}
		return a.Accuracy > b.Accuracy
	})
	return t
}

// Best are the best runs of the n best groups (at most n names), for nb.Compare.
func (t *Table) Best(n int) []string {
	var out []string
	for _, g := range t.Groups {
		if len(out) == n {
			break
		}
		if g.Best != "" {
			out = append(out, g.Best)
		}
	}
	return out
}

// meanSpread is the mean and the sample standard deviation of xs (0, 0 for none; spread 0
// for one).
func meanSpread(xs []float64) (mean, spread float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) == 1 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// cells are the row of group g as text: settings, runs done, accuracy in percent ± its spread in
// percentage points (pp), loss ± spread.
func (g Group) cells() []string {
	var kv []string
	for _, st := range g.Settings {
		kv = append(kv, st.Field+"="+st.Value)
	}
	settings := strings.Join(kv, " ")
	if settings == "" {
		settings = "(all)"
	}
	accuracy, loss := "-", "-"
	if g.Tested > 0 {
		accuracy = fmt.Sprintf("%.2f%% ± %.2f pp (%d)", 100*g.Accuracy, 100*g.AccuracySpread, g.Tested)
	}
	if g.Done > 0 {
		loss = fmt.Sprintf("%.4f ± %.4f", g.Loss, g.LossSpread)
	}
	best := g.Best
	if best == "" {
		best = "-"
	}
	return []string{settings, fmt.Sprintf("%d/%d", g.Done, len(g.Runs)), accuracy, loss, best}
}

// tableColumns are the headers of Table's text and HTML forms.
var tableColumns = []string{"settings", "done", "test acc (mean ± spread, runs)", "loss", "best run"}

// String is the table as aligned text.
func (t *Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep %s, averaged over %s\n", t.Sweep, strings.Join(t.Over, ", "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableColumns, "\t"))
	for _, g := range t.Groups {
		fmt.Fprintln(tw, strings.Join(g.cells(), "\t"))
	}
	_ = tw.Flush()
	return b.String()
}

// HTML is the table as an HTML table, for a notebook.
func (t *Table) HTML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<p>sweep <b>%s</b>, averaged over %s</p><table><tr>", html.EscapeString(t.Sweep), html.EscapeString(strings.Join(t.Over, ", ")))
	for _, c := range tableColumns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c))
	}
	b.WriteString("</tr>")
	for _, g := range t.Groups {
		b.WriteString("<tr>")
		for i, c := range g.cells() {
			align := ""
			if i > 0 && i < 4 {
				align = ` style="text-align:right"`
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", align, html.EscapeString(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	return b.String()
}
