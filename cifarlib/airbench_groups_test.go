package cifarlib

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAirbenchGroup puts each kind of airbench94 variable in airbench's parameter groups, and
// everything else out of them.
func TestAirbenchGroup(t *testing.T) {
	for _, c := range []struct {
		path string
		want AirbenchParamGroup
	}{
		{"/airbench94/whiten/conv/weights", AirbenchNotTrained},
		{"/airbench94/whiten/conv/biases", AirbenchWhitenBias},
		{"/airbench94/block1/conv1/conv/weights", AirbenchOther},
		{"/airbench94/block3/conv2/conv/weights", AirbenchOther},
		{"/airbench94/block2/norm1/batch_normalization/offset", AirbenchNormBias},
		{"/airbench94/block3/norm2/batch_normalization/offset", AirbenchNormBias},
		{"/airbench94/block1/norm1/batch_normalization/scale", AirbenchNotTrained},
		{"/airbench94/block1/norm2/batch_normalization/mean", AirbenchNotTrained},
		{"/airbench94/block2/norm2/batch_normalization/variance", AirbenchNotTrained},
		{"/airbench94/block3/norm1/batch_normalization/avg_weight", AirbenchNotTrained},
		{"/airbench94/head/dense/weights", AirbenchOther},
		{"/airbench94/head/dense/biases", AirbenchNotTrained}, // airbench's head has no bias
		{"/airbench94/block4/conv1/conv/weights", AirbenchNotTrained},
		{"/resnet20/head/dense/weights", AirbenchNotTrained},
		{"/SGDOptimizer/airbench94/head/dense/weights_velocity", AirbenchNotTrained},
		{"/guard/bad_count", AirbenchNotTrained},
		{"airbench94/head/dense/weights", AirbenchNotTrained},
		{"", AirbenchNotTrained},
	} {
		require.Equal(t, c.want, AirbenchGroup(c.path), "%s", c.path)
	}
	require.Equal(t, "norm-bias", AirbenchNormBias.String())
	require.Equal(t, "whiten-bias", AirbenchWhitenBias.String())
	require.Equal(t, "other", AirbenchOther.String())
	require.Equal(t, "not-trained", AirbenchNotTrained.String())
}
