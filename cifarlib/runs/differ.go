package runs

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// A comparison of runs names each run by what differs between them, e.g. "label smoothing
// 0.2" against "label smoothing 0.1": the charts of nb.Compare, their titles, and the columns
// of the runs table. A run's settings (Info.Settings) are its run.json's (Record.Settings):
// every setting of the table the run was trained with, resolved, each with its name in words,
// but its bookkeeping, and what its data held (Record.Data).

// recordWords are the names in words of the settings of a run that its record says in fields of
// its own, and no setting of the table: what its data held.
var recordWords = map[string]string{"data": "data", "train-images": "training images"}

// settingsOf returns the settings rec records, by setting name: every setting of its table but
// its bookkeeping (RunSettings.Values), the dataset by its id (which says its labels), and what
// its data held (data, train-images); a setting without a value (no recipe, no transfer source)
// is left out.
func settingsOf(rec *Record) map[string]string {
	s := map[string]string{}
	for _, v := range rec.Settings.Values {
		if !v.Bookkeeping {
			s[v.Name] = v.Value
		}
	}
	if spec, err := data.SpecByName(s["dataset"], s["labels"]); err == nil {
		s["dataset"] = spec.ID()
	}
	delete(s, "labels")
	if rec.Data != nil {
		s["data"], s["train-images"] = rec.Data.Kind, itoa(rec.Data.TrainImages)
	}
	for name, value := range s {
		if value == "" {
			delete(s, name)
		}
	}
	return s
}

// itoa formats n, "" for 0 (not recorded); atoi reads it back.
func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Differing returns the names of the settings whose values differ between the runs of list,
// in the order a comparison names them (the settings table's), none when they agree or list
// has fewer than two runs with a record. A setting one run recorded and another did not (a
// param given to one run only) differs. Runs without a run.json (Info.Settings nil: foreign,
// broken, killed before they started) are left out. The steps are left out when the epochs
// differ (they follow from them).
func Differing(list ...Info) []string {
	var recorded []Info
	for _, r := range list {
		if r.Settings != nil {
			recorded = append(recorded, r)
		}
	}
	if len(recorded) < 2 {
		return nil
	}
	names := map[string]bool{}
	for _, r := range recorded {
		for name := range r.Settings {
			_, own := recordWords[name]                       // what the data held, not the data folder's setting
			names[name] = own || !bookkeeping(recorded, name) // an Info made by hand may hold them
		}
	}
	var differ []string
	for _, name := range settingOrder(recorded, slices.Collect(maps.Keys(names))) {
		if !names[name] {
			continue
		}
		for _, r := range recorded[1:] {
			if v, ok := r.Settings[name]; v != recorded[0].Settings[name] || ok != hasSetting(recorded[0], name) {
				differ = append(differ, name)
				break
			}
		}
	}
	if slices.Contains(differ, "epochs") {
		differ = slices.DeleteFunc(differ, func(name string) bool { return name == "steps" })
	}
	return differ
}

func hasSetting(r Info, name string) bool { _, ok := r.Settings[name]; return ok }

// bookkeeping reports whether a run of list recorded the setting called name as bookkeeping
// (Setting.Bookkeeping).
func bookkeeping(list []Info, name string) bool {
	for _, r := range list {
		for _, v := range r.Values {
			if v.Name == name {
				return v.Bookkeeping
			}
		}
	}
	return false
}

// settingOrder sorts names as a comparison of list names them: in the order of the table of
// settings the runs recorded (RunSettings.Values: the recipe, the data, the model, the
// optimizer, the schedule, the length of the run, transfer, evaluation, compute; a record of
// format 1 has the fields of the record first, in its order), the record's own data settings
// after the dataset; then by name. Infos without values (made by hand) name the settings of
// the records of format 1 first (recordSettings).
func settingOrder(list []Info, names []string) []string {
	var order []string
	for _, r := range list {
		for _, v := range r.Values {
			if !slices.Contains(order, v.Name) {
				order = append(order, v.Name)
			}
			if v.Name == "dataset" {
				order = append(order, "data", "train-images")
			}
		}
	}
	if len(order) == 0 {
		order = recordSettings
	}
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names
}

// SettingWords returns the name in words of the setting called name, as the runs of list
// recorded it (RunSettings.Values), e.g. "learning rate" for "lr" and "label smoothing" for
// "label-smoothing": the header of its column in the runs table. A setting no run recorded in
// words (a run.json of format 1) is its name with spaces.
func SettingWords(list []Info, name string) string {
	if w, ok := recordWords[name]; ok {
		return w
	}
	for _, r := range list {
		for _, v := range r.Values {
			if v.Name == name && v.Words != "" {
				return v.Words
			}
		}
	}
	return strings.ReplaceAll(name, "-", " ")
}

// Value returns run r's value of the setting called name as the runs table shows it: "default"
// when the run was not given it (a param), "not recorded" when its run.json does not say (an
// older one), "" for a run without a record. A transfer source is the run's name when it is in
// the same runs folder.
func (r Info) Value(name string) string {
	if r.Settings == nil {
		return ""
	}
	v, ok := r.Settings[name]
	switch {
	case name == "from" && !ok:
		return "scratch"
	case name == "recipe" && !ok:
		return "none"
	case !ok && slices.Contains(recordSettings, name):
		return "not recorded"
	case !ok:
		return "default"
	case name == "from" && filepath.Clean(filepath.Dir(v)) == filepath.Dir(r.Dir):
		return filepath.Base(v)
	case name == "guard":
		return map[bool]string{true: "guarded", false: "UNGUARDED"}[v == "true"]
	}
	return v
}

// Describe says run r's values of the settings names, in words, e.g. "label smoothing 0.2,
// seed 2" or "4 devices"; "" for no names.
func (r Info) Describe(names ...string) string {
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, r.phrase(name))
	}
	return strings.Join(parts, ", ")
}

// phrase is r's value of the setting name, in words.
func (r Info) phrase(name string) string {
	v := r.Value(name)
	switch {
	case v == "" || v == "default" || v == "not recorded":
		return SettingWords([]Info{r}, name) + " " + cmp.Or(v, "not recorded")
	case name == "devices" || name == "steps" || name == "epochs":
		return v + " " + strings.TrimSuffix(name, "s") + map[bool]string{true: "", false: "s"}[v == "1"]
	case name == "train-images":
		n, _ := strconv.Atoi(v)
		return cifarlib.FormatCount(n) + " training images"
	case name == "guard":
		return strings.ToLower(v)
	case name == "from" && v == "scratch":
		return "from scratch"
	case name == "from":
		return "transferred from " + v
	case name == "data":
		return strings.ReplaceAll(v, ", ", " ") + " data" // e.g. "real verified data"
	case name == "recipe" && v == "none":
		return "no recipe"
	case name == "recipe":
		return v + " recipe"
	}
	return SettingWords([]Info{r}, name) + " " + v
}

// Labels names each run of list by what differs between them (Differing, Describe), for the
// legend of a comparison: e.g. "label smoothing 0.2" and "label smoothing 0.1". A run is named
// by its folder when nothing recorded tells it apart (the same settings, no record), the
// folder's name then following what differs, e.g. "seed 1 (b)", when that alone is not unique.
func Labels(list ...Info) []string {
	differ := Differing(list...)
	labels := make([]string, len(list))
	count := map[string]int{}
	for i, r := range list {
		if r.Settings != nil {
			labels[i] = r.Describe(differ...)
		}
		count[labels[i]]++
	}
	for i, r := range list {
		switch {
		case labels[i] == "":
			labels[i] = r.Name
		case count[labels[i]] > 1:
			labels[i] = fmt.Sprintf("%s (%s)", labels[i], r.Name)
		}
	}
	return labels
}

// Departures names the runs of list for a legend that stays short however many runs it holds
// (2 to 10, or more): of each setting the runs differ in (Differing), the value that more than
// half of them share, when there are three runs or more, is said once, in shared (e.g. "learning
// rate 11.5"), and each run's label says only its values that depart from those, in Describe's
// words, e.g. "seed 2, 3 epochs"; a run with all the shared values is "the shared values". Runs
// named alike have their folder's name after it, e.g. "seed 1 (d)", as Labels names them; when a
// run has no record, labels are Labels'.
func Departures(list ...Info) (shared, labels []string) {
	differ := Differing(list...)
	if len(differ) == 0 {
		return nil, Labels(list...)
	}
	common := map[string]string{} // setting -> the value most runs share, when more than half do
	for _, name := range differ {
		count := map[string]int{}
		for _, r := range list {
			if r.Settings != nil {
				count[r.Value(name)]++
			}
		}
		for v, n := range count {
			if len(list) >= 3 && 2*n > len(list) {
				common[name] = v
			}
		}
	}
	labels = make([]string, len(list))
	count := map[string]int{}
	for i, r := range list {
		if r.Settings == nil {
			return nil, Labels(list...)
		}
		var own []string
		for _, name := range differ {
			if v, ok := common[name]; !ok || r.Value(name) != v {
				own = append(own, name)
			}
		}
		labels[i] = cmp.Or(r.Describe(own...), "the shared values")
		count[labels[i]]++
	}
	for i, r := range list { // runs alike in their settings: by their folders too
		if count[labels[i]] > 1 {
			labels[i] = fmt.Sprintf("%s (%s)", labels[i], r.Name)
		}
	}
	for _, name := range differ {
		if v, ok := common[name]; ok {
			i := slices.IndexFunc(list, func(r Info) bool { return r.Settings != nil && r.Value(name) == v })
			shared = append(shared, list[i].phrase(name))
		}
	}
	return shared, labels
}

// Compared says, for a chart's title, which settings the runs of list differ in, e.g. "label
// smoothing" or "learning rate and seed"; "run" when they differ in none.
func Compared(list ...Info) string {
	differ := Differing(list...)
	if len(differ) == 0 {
		return "run"
	}
	words := make([]string, len(differ))
	for i, name := range differ {
		words[i] = SettingWords(list, name)
	}
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
