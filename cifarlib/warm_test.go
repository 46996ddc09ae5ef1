package cifarlib
import (
 _ "github.com/gomlx/compute/gobackend"
 _ "github.com/gomlx/go-xla/compute/xla"
 _ "github.com/gomlx/gomlx/ml/train"
 _ "github.com/gomlx/gomlx/ml/train/loss"
 _ "github.com/gomlx/gomlx/ml/train/optimizer"
 _ "github.com/gomlx/gomlx/ml/train/metric"
 _ "github.com/gomlx/gomlx/ml/layers"
 _ "github.com/gomlx/gomlx/ml/layers/norm"
 _ "github.com/gomlx/gomlx/ml/layers/activation"
 _ "github.com/gomlx/gomlx/ml/model/checkpoint"
 _ "github.com/gomlx/gomlx/ui/commandline"
 _ "github.com/gomlx/gomlx/ui/gonb/plotly"
 _ "github.com/stretchr/testify/require"
 _ "github.com/schollz/progressbar/v3"
)
