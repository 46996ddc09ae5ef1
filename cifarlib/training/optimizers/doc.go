// Package optimizers holds a run's optimizers and learning-rate schedules: the typed settings of
// each algorithm (Adam, AdamW, Adamax, RMSProp, SGD, and airbench94's Nesterov SGD with its
// decoupled hyper-parameters and parameter groups), the schedules (constant, GoMLX's cosine,
// airbench's triangle), airbench's lookahead and a transferred run's backbone learning rate, as
// GoMLX optimizers of a training graph (Plan.Build, Plan.SetLearningRate), and the values their
// graphs are fed at run time rather than built in (Plan.Fed, Scalar, SetValues), so that one
// compiled train step serves every learning rate, momentum, schedule length and seed.
//
// It is a stage below package training (see internal/layers), which holds a run's Settings and
// builds its train step from them: it may import cifarlib and GoMLX, and knows nothing of a run
// but what Plan says.
package optimizers
