package training

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Optimizer is a run's optimiser (Settings.Optimizer): one typed value per algorithm, holding
// that algorithm's settings, as GoMLX's optimizers own theirs (optimizer.Adam().LearningRate(v)):
// Adam, AdamW, Adamax, RMSProp, SGD or Nesterov. NewOptimizer gives each with its defaults.
type Optimizer interface {
	// Algorithm names it: "adam", "adamw", "adamax", "rmsprop", "sgd" or "nesterov".
	Algorithm() string
	// optimizer seals the set: the algorithms are this package's (they travel by name).
	optimizer()
}

// Adam is GoMLX's Adam (the default optimizer).
type Adam struct {
	// LearningRate is the peak learning rate (Defaults: DefaultLearningRate).
	LearningRate float64 `json:"learning_rate"`
}

// AdamW is GoMLX's Adam with decoupled weight decay.
type AdamW struct {
	LearningRate float64 `json:"learning_rate"`
	// WeightDecay is the decoupled weight decay (Defaults: DefaultAdamWWeightDecay).
	WeightDecay float64 `json:"weight_decay"`
}

// Adamax is GoMLX's Adamax.
type Adamax struct {
	LearningRate float64 `json:"learning_rate"`
}

// RMSProp is GoMLX's RMSProp.
type RMSProp struct {
	LearningRate float64 `json:"learning_rate"`
}

// SGD is GoMLX's plain stochastic gradient descent, without decay.
type SGD struct {
	// LearningRate (Defaults: DefaultSGDLearningRate).
	LearningRate float64 `json:"learning_rate"`
}

// Nesterov is airbench94's Nesterov SGD with decoupled hyper-parameters (see
// nesterovOptimizer); its defaults are airbench94's.
type Nesterov struct {
	// LearningRate is the rate per 1024 examples (airbench94: 11.5).
	LearningRate float64 `json:"learning_rate"`
	// Momentum is in [0, 1) (airbench94: 0.85).
	Momentum float64 `json:"momentum"`
	// WeightDecay is the decay per 1024 examples (airbench94: 0.0153).
	WeightDecay float64 `json:"weight_decay"`
	// BiasScaler multiplies the learning rate (not the weight decay) of the batch-norm biases
	// (airbench94: 64).
	BiasScaler float64 `json:"bias_scaler"`
	// WhitenBiasEpochs trains airbench94's whitening bias for that many epochs, then freezes it
	// (the airbench94 model only; the recipe's 3). 0: it trains throughout.
	WhitenBiasEpochs int `json:"whiten_bias_epochs,omitempty"`
}

// The optimizer algorithms' names.
const (
	OptimizerAdam     = "adam"
	OptimizerAdamW    = "adamw"
	OptimizerAdamax   = "adamax"
	OptimizerRMSProp  = "rmsprop"
	OptimizerSGD      = "sgd"
	OptimizerNesterov = "nesterov"
)

func (Adam) Algorithm() string     { return OptimizerAdam }
func (AdamW) Algorithm() string    { return OptimizerAdamW }
func (Adamax) Algorithm() string   { return OptimizerAdamax }
func (RMSProp) Algorithm() string  { return OptimizerRMSProp }
func (SGD) Algorithm() string      { return OptimizerSGD }
func (Nesterov) Algorithm() string { return OptimizerNesterov }

func (Adam) optimizer()     {}
func (AdamW) optimizer()    {}
func (Adamax) optimizer()   {}
func (RMSProp) optimizer()  {}
func (SGD) optimizer()      {}
func (Nesterov) optimizer() {}

// The optimizers' default settings.
const (
	// DefaultLearningRate is the learning rate of the Adam family and RMSProp;
	// DefaultSGDLearningRate that of plain SGD.
	DefaultLearningRate    = 0.001
	DefaultSGDLearningRate = 0.1
	// DefaultAdamWWeightDecay is AdamW's decoupled weight decay.
	DefaultAdamWWeightDecay = 0.004
)

// optimizerDefaults are the algorithms, in the order errors list them, each with its defaults:
// airbench94's for nesterov (lib_airbench94.py's hyp.opt).
var optimizerDefaults = []Optimizer{
	Adam{LearningRate: DefaultLearningRate},
	AdamW{LearningRate: DefaultLearningRate, WeightDecay: DefaultAdamWWeightDecay},
	Adamax{LearningRate: DefaultLearningRate},
	RMSProp{LearningRate: DefaultLearningRate},
	SGD{LearningRate: DefaultSGDLearningRate},
	Nesterov{LearningRate: 11.5, Momentum: 0.85, WeightDecay: 0.0153, BiasScaler: 64},
}

// OptimizerAlgorithms lists the algorithms' names.
func OptimizerAlgorithms() []string {
	names := make([]string, len(optimizerDefaults))
	for i, o := range optimizerDefaults {
		names[i] = o.Algorithm()
	}
	return names
}

// NewOptimizer returns the optimizer named algorithm (any case, spaces around it
// ignored) with its default settings; an unknown name is a *ConfigError of Optimizer.
func NewOptimizer(algorithm string) (Optimizer, error) {
	name := strings.ToLower(strings.TrimSpace(algorithm))
	for _, o := range optimizerDefaults {
		if o.Algorithm() == name {
			return o, nil
		}
	}
	return nil, &ConfigError{Field: "Optimizer", Value: fmt.Sprintf("%q", algorithm), Reason: "use one of " + strings.Join(OptimizerAlgorithms(), ", ")}
}

// DefaultAdam is Adam with its defaults: the optimizer of Defaults.
func DefaultAdam() Optimizer { return optimizerDefaults[0] }

// optimizerParam reads o's setting of the Go field name (e.g. "Momentum") as a float64; ok is
// false when o's algorithm has no such setting.
func optimizerParam(o Optimizer, name string) (value float64, ok bool) {
	if o == nil {
		return 0, false
	}
	f := reflect.ValueOf(o).FieldByName(name)
	switch {
	case !f.IsValid():
		return 0, false
	case f.CanFloat():
		return f.Float(), true
	}
	return float64(f.Int()), true
}

// withOptimizerParam returns o with its setting name set to value; ok is false when o's
// algorithm has no such setting.
func withOptimizerParam(o Optimizer, name string, value float64) (Optimizer, bool) {
	if o == nil {
		return o, false
	}
	v := reflect.New(reflect.TypeOf(o)).Elem()
	v.Set(reflect.ValueOf(o))
	f := v.FieldByName(name)
	switch {
	case !f.IsValid():
		return o, false
	case f.CanFloat():
		f.SetFloat(value)
	default:
		f.SetInt(int64(value))
	}
	return v.Interface().(Optimizer), true
}

// learningRate is o's learning rate (every algorithm has one).
func learningRate(o Optimizer) float64 {
	lr, _ := optimizerParam(o, "LearningRate")
	return lr
}

// optimizerJSON is an Optimizer in JSON: its settings and its algorithm's name.
type optimizerJSON struct{ Optimizer }

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
	def, err := NewOptimizer(*head.Algorithm)
	if err != nil {
		return err
	}
	v := reflect.New(reflect.TypeOf(def))
	if err := json.Unmarshal(b, v.Interface()); err != nil {
		return err
	}
	o.Optimizer = v.Elem().Interface().(Optimizer)
	return nil
}
