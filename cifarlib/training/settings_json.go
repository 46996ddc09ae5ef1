package training

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
)

// settingsFormat is the format of Settings in JSON (run.json, a checkpoint, the lab process,
// a sweep): format 1 is that of the runs written before Settings (commit 4805295 and earlier),
// whose checkpoints hold one parameter per setting (checkpoint_v1.go).
const settingsFormat = 2

// settingsJSON is Settings in JSON: its format, its fields, and its optimizer with the
// algorithm's name.
type settingsJSON struct {
	Format int `json:"format"`
	settingsFields
	Optimizer optimizerJSON `json:"optimizer"`
}

// settingsFields are Settings' fields, without its methods.
type settingsFields Settings

// MarshalJSON implements json.Marshaler.
func (s Settings) MarshalJSON() ([]byte, error) {
	return json.Marshal(settingsJSON{Format: settingsFormat, settingsFields: settingsFields(s), Optimizer: optimizerJSON{s.Optimizer}})
}

// UnmarshalJSON implements json.Unmarshaler. Settings of a format newer than settingsFormat
// are a *runs.FormatError.
func (s *Settings) UnmarshalJSON(b []byte) error {
	var j settingsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Format > settingsFormat {
		return &runs.FormatError{What: "settings", Format: j.Format, Lab: settingsFormat}
	}
	*s = Settings(j.settingsFields)
	s.Optimizer = j.Optimizer.Optimizer
	return nil
}

// GobEncode implements gob.GobEncoder: the settings travel as JSON (the lab process).
func (s Settings) GobEncode() ([]byte, error) { return s.MarshalJSON() }

// GobDecode implements gob.GobDecoder.
func (s *Settings) GobDecode(b []byte) error { return s.UnmarshalJSON(b) }

// String writes the settings as JSON, for logs and errors.
func (s Settings) String() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("(settings: %v)", err)
	}
	return string(b)
}

// runSettings are the settings s as run.json records them (runs.Record.Settings), once: every
// row of the table, in its order, with its Label, value and part (Bookkeeping), and what was
// given (Record.Params, the one field of Settings no row has).
func runSettings(s *Settings) runs.RunSettings {
	values := make([]runs.Setting, 0, len(fields))
	for _, f := range fields {
		values = append(values, runs.Setting{Name: f.Name, Words: f.Label, Value: f.Get(s), Bookkeeping: f.Bookkeeping})
	}
	return runs.RunSettings{Values: values, Given: s.Record.Params}
}

// optimizerJSON is an Optimizer in JSON: its settings and its algorithm's name.
type optimizerJSON struct{ optimizers.Optimizer }

// MarshalJSON writes {"algorithm": NAME, SETTINGS...}.
func (o optimizerJSON) MarshalJSON() ([]byte, error) {
	if o.Optimizer == nil {
		return []byte("null"), nil
	}
	fields, err := json.Marshal(o.Optimizer)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(fields, &m); err != nil {
		return nil, err
	}
	m["algorithm"], _ = json.Marshal(o.Algorithm())
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *optimizerJSON) UnmarshalJSON(b []byte) error {
	var head struct {
		Algorithm *string `json:"algorithm"`
	}
	if err := json.Unmarshal(b, &head); err != nil || head.Algorithm == nil {
		o.Optimizer = nil
		return err
	}
	def, err := optimizers.New(*head.Algorithm)
	if err != nil {
		return err
	}
	v := reflect.New(reflect.TypeOf(def))
	if err := json.Unmarshal(b, v.Interface()); err != nil {
		return err
	}
	o.Optimizer = v.Elem().Interface().(optimizers.Optimizer)
	return nil
}
