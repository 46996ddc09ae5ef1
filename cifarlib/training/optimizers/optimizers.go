package optimizers

import (
	"fmt"
	"reflect"
	"strings"
)

// Optimizer is a run's optimiser (training.Settings.Optimizer): one typed value per algorithm,
// holding that algorithm's settings, as GoMLX's optimizers own theirs
// (optimizer.Adam().LearningRate(v)): Adam, AdamW, Adamax, RMSProp, SGD or Nesterov. New gives
// each with its defaults.
type Optimizer interface {
	// Algorithm names it: "adam", "adamw", "adamax", "rmsprop", "sgd" or "nesterov" (Algorithms).
	Algorithm() string
	// optimizer seals the set: the algorithms are this package's (they travel by name).
	optimizer()
}

// Adam is GoMLX's Adam (the default optimizer).
type Adam struct {
	// LearningRate is the peak learning rate (New's: 0.001).
	LearningRate float64 `json:"learning_rate"`
}

// AdamW is GoMLX's Adam with decoupled weight decay.
type AdamW struct {
	LearningRate float64 `json:"learning_rate"`
	// WeightDecay is the decoupled weight decay (New's: 0.004).
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
	// LearningRate (New's: 0.1).
	LearningRate float64 `json:"learning_rate"`
}

// Nesterov is airbench94's Nesterov SGD with decoupled hyper-parameters (see
// nesterovOptimizer); its defaults (New's) are airbench94's.
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
	algoAdam     = "adam"
	algoAdamW    = "adamw"
	algoAdamax   = "adamax"
	algoRMSProp  = "rmsprop"
	algoSGD      = "sgd"
	algoNesterov = "nesterov"
)

func (Adam) Algorithm() string     { return algoAdam }
func (AdamW) Algorithm() string    { return algoAdamW }
func (Adamax) Algorithm() string   { return algoAdamax }
func (RMSProp) Algorithm() string  { return algoRMSProp }
func (SGD) Algorithm() string      { return algoSGD }
func (Nesterov) Algorithm() string { return algoNesterov }

func (Adam) optimizer()     {}
func (AdamW) optimizer()    {}
func (Adamax) optimizer()   {}
func (RMSProp) optimizer()  {}
func (SGD) optimizer()      {}
func (Nesterov) optimizer() {}

// The optimizers' default settings: the learning rate of the Adam family and RMSProp, that of
// plain SGD, and AdamW's decoupled weight decay.
const (
	defaultLearningRate     = 0.001
	defaultSGDLearningRate  = 0.1
	defaultAdamWWeightDecay = 0.004
)

// defaults are the algorithms, in the order errors list them, each with its defaults:
// airbench94's for nesterov (lib_airbench94.py's hyp.opt).
var defaults = []Optimizer{
	Adam{LearningRate: defaultLearningRate},
	AdamW{LearningRate: defaultLearningRate, WeightDecay: defaultAdamWWeightDecay},
	Adamax{LearningRate: defaultLearningRate},
	RMSProp{LearningRate: defaultLearningRate},
	SGD{LearningRate: defaultSGDLearningRate},
	Nesterov{LearningRate: 11.5, Momentum: 0.85, WeightDecay: 0.0153, BiasScaler: 64},
}

// Algorithms lists the algorithms' names.
func Algorithms() []string {
	names := make([]string, len(defaults))
	for i, o := range defaults {
		names[i] = o.Algorithm()
	}
	return names
}

// New returns the optimizer named algorithm (any case, spaces around it ignored) with its
// default settings, or an error that names the algorithms.
func New(algorithm string) (Optimizer, error) {
	name := strings.ToLower(strings.TrimSpace(algorithm))
	for _, o := range defaults {
		if o.Algorithm() == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("optimizers: unknown optimizer %q: use one of %s", algorithm, strings.Join(Algorithms(), ", "))
}

// Default is Adam with its defaults: the optimizer of training.Defaults.
func Default() Optimizer { return defaults[0] }

// Param reads o's setting of the Go field name (e.g. "Momentum") as a float64; ok is false
// when o's algorithm has no such setting.
func Param(o Optimizer, name string) (value float64, ok bool) {
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

// WithParam returns o with its setting name set to value; ok is false when o's algorithm has no
// such setting.
func WithParam(o Optimizer, name string, value float64) (Optimizer, bool) {
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

// learningRate is o's learning rate (every algorithm has one; 0 for none).
func learningRate(o Optimizer) float64 {
	switch o := o.(type) {
	case Adam:
		return o.LearningRate
	case AdamW:
		return o.LearningRate
	case Adamax:
		return o.LearningRate
	case RMSProp:
		return o.LearningRate
	case SGD:
		return o.LearningRate
	case Nesterov:
		return o.LearningRate
	}
	return 0
}
