package optimizers

// The learning-rate schedules: a run's Schedule, built into its training graph.

import (
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Learning-rate schedules (Schedule.Name).
const (
	// ScheduleConstant keeps the learning rate fixed (training.Defaults).
	ScheduleConstant = "constant"
	// ScheduleCosine anneals the learning rate from the optimizer's to MinLearningRate along half
	// a cosine over the run's steps, after WarmupSteps of linear warm-up (GoMLX's cosineschedule).
	ScheduleCosine = "cosine"
	// ScheduleTriangle is airbench's triangle: the learning rate rises linearly from 0.2 to 1
	// times the optimizer's over the first 23% of the run's steps, then falls linearly to 0.07
	// times it at the last step (see triangle).
	ScheduleTriangle = "triangle"
)

// Schedule is the learning-rate schedule of a run (training.Settings.Schedule).
type Schedule struct {
	// Name is ScheduleConstant, ScheduleCosine or ScheduleTriangle.
	Name string `json:"name"`
	// WarmupSteps of linear warm-up before the cosine (cosine only).
	WarmupSteps int `json:"warmup_steps,omitempty"`
	// MinLearningRate is where the cosine ends (cosine only).
	MinLearningRate float64 `json:"min_learning_rate,omitempty"`
}

// SetLearningRate builds p's schedule into the training graph g of a model under scope: GoMLX's
// learning-rate variable is set to the rate of the step being taken, from o's learning rate, its
// numbers fed at run time (Scalar). The constant schedule leaves it at o's learning rate.
func (p Plan) SetLearningRate(o Optimizer, scope *model.Scope, g *graph.Graph) {
	switch p.Schedule.Name {
	case ScheduleTriangle:
		airbenchTriangle(p.Steps).setLearningRate(scope, g, learningRate(o))
	case ScheduleCosine:
		p.cosine(o).setLearningRate(scope, g)
	}
}
