package runs

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// decodeRecord decodes run.json of any format: one of RecordFormat as it is, one of formats 1
// and 2 into this form (legacyRecord.upgrade), one of a newer format with its format only (the
// caller refuses it).
func decodeRecord(b []byte) (*Record, error) {
	var head struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, err
	}
	switch {
	case head.Format > RecordFormat:
		return &Record{Format: head.Format}, nil
	case head.Format == RecordFormat:
		rec := &Record{}
		return rec, json.Unmarshal(b, rec)
	}
	var old legacyRecord
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, err
	}
	return old.upgrade(), nil
}

// legacyRecord is run.json of formats 1 and 2: what was trained in fields of the record, the
// params it was given, and (format 2) training's Settings in JSON and every setting of the table
// with its words (Values). The record's fields are resolved (the head's width, the devices' count,
// the target step): they win over a value of the same name.
type legacyRecord struct {
	Record
	// Settings (format 2) are training.Settings in JSON, which Values say again.
	Settings   json.RawMessage    `json:"settings,omitempty"`
	Dataset    string             `json:"dataset"`
	Model      string             `json:"model"`
	Head       int                `json:"head"`
	Guarded    bool               `json:"guarded"`
	Devices    int                `json:"devices"`
	BatchSize  int                `json:"batch_size"`
	TargetStep int                `json:"target_step"`
	Precision  cifarlib.Precision `json:"precision,omitempty"`
	Recipe     string             `json:"recipe,omitempty"`
	From       string             `json:"from,omitempty"`
	Params     map[string]string  `json:"params,omitempty"`
	Values     []Setting          `json:"values,omitempty"`
}

// The settings of formats 1 and 2, which do not say which are bookkeeping: those that were
// (legacyBookkeeping; labels, which the dataset's id says, is not), and the flags of format 1's
// params that were no settings (legacyNotSettings). Both are closed with those formats: a record
// of format 3 says each setting's part itself.
var (
	legacyBookkeeping = []string{"checkpoint", "checkpoint-every", "checkpoint-keep", "log-every", "history-every", "eval-every",
		"eval-examples", "eval-batch", "data"}
	legacyNotSettings = []string{"json", "progress"}
)

// recordSettings are the settings of a record of formats 1 and 2 in its own fields, in its
// order: every record of those formats has them (one missing was not recorded, where a missing
// param is one the run was not given: its default).
var recordSettings = []string{"recipe", "dataset", "data", "train-images", "model", "head", "guard", "batch", "steps", "devices", "precision", "from"}

// upgrade is the record of RecordFormat that o says: its values (format 2; format 1 has its
// params only), its own fields winning, and its params as what it was given.
func (o *legacyRecord) upgrade() *Record {
	rec := o.Record
	s := &rec.Settings
	own := o.own()
	for _, name := range recordSettings { // format 1: the record's own fields first, in its order
		if v, ok := own[name]; ok && len(o.Values) == 0 {
			s.Set(name, v)
		}
	}
	s.Values = append(s.Values, o.Values...)
	for _, name := range slices.Sorted(maps.Keys(o.Params)) {
		if _, ok := s.Value(name); !ok && !slices.Contains(legacyNotSettings, name) {
			s.Set(name, o.Params[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(own)) {
		s.Set(name, own[name])
	}
	for i, v := range s.Values {
		s.Values[i].Bookkeeping = slices.Contains(legacyBookkeeping, v.Name)
	}
	if len(o.Params) > 0 {
		s.Given = maps.Clone(o.Params)
		for _, name := range legacyNotSettings {
			delete(s.Given, name)
		}
	}
	return &rec
}

// own are the settings of o's own fields, by name, those it recorded.
func (o *legacyRecord) own() map[string]string {
	own := map[string]string{"guard": strconv.FormatBool(o.Guarded), "precision": string(cmp.Or(o.Precision, cifarlib.PrecisionF32))}
	if spec, err := data.SpecByName(o.Dataset, ""); err == nil {
		own["dataset"], own["labels"] = spec.Name, spec.Labels.String()
	}
	for name, v := range map[string]string{"recipe": o.Recipe, "model": o.Model, "from": o.From, "head": itoa(o.Head),
		"devices": itoa(o.Devices), "batch": itoa(o.BatchSize), "steps": itoa(o.TargetStep)} {
		if v != "" {
			own[name] = v
		}
	}
	return own
}
