package training

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/cifarlab/cifarlab/internal/tfevents/tbtest"
	"github.com/stretchr/testify/require"
)

// TestHParamsDashboard: runs with Params show on TensorBoard's HParams dashboard, read through
// the hparams plugin's own HTTP API (the calls its page makes): each run's hyperparameters,
// typed, and its final metrics from the run's scalars.
func TestHParamsDashboard(t *testing.T) {
	runsDir := t.TempDir()
	for _, r := range []struct {
		name string
		lr   float64
		lrS  string
	}{{"hp-a", 0.01, "0.01"}, {"hp-b", 0.001, "0.001"}} {
		_, err := trainRun(t, runsDir, r.name, func(c *testRun) {
			c.Optimizer = optimizers.Adam{LearningRate: r.lr}
			c.Record.Params = map[string]string{"lr": r.lrS, "model": "linear", "augment": "false"}
		})
		require.NoError(t, err)
	}
	url := tbtest.Serve(t, runsDir)
	tbtest.Runs(t, url, 2)

	post := hparamsPost(t, url)
	var exp struct {
		HParamInfos []struct {
			Name, Type string
		} `json:"hparamInfos"`
		MetricInfos []struct {
			Name struct{ Group, Tag string } `json:"name"`
		} `json:"metricInfos"`
	}
	require.Eventually(t, func() bool {
		post("experiment", `{"experimentName": ""}`, &exp)
		return len(exp.HParamInfos) == 3
	}, time.Minute, 500*time.Millisecond, "the hparams plugin found no hyperparameters")
	types := map[string]string{}
	for _, h := range exp.HParamInfos {
		types[h.Name] = h.Type
	}
	require.Equal(t, map[string]string{"lr": "DATA_TYPE_FLOAT64", "model": "DATA_TYPE_STRING", "augment": "DATA_TYPE_BOOL"}, types)
	var tags []string
	for _, m := range exp.MetricInfos {
		tags = append(tags, m.Name.Tag)
	}
	require.Contains(t, tags, tagFinalAccuracy)

	got := hparamsFinalAccuracies(t, post)
	for _, name := range []string{"hp-a", "hp-b"} {
		rec, err := runs.ReadRecord(runsDir + "/" + name)
		require.NoError(t, err)
		var res Result
		require.NoError(t, json.Unmarshal(rec.Result, &res))
		require.NoError(t, err)
		lr := map[string]float64{"hp-a": 0.01, "hp-b": 0.001}[name]
		require.InDelta(t, float32(res.Eval.Accuracy), got[lr], 0, "TensorBoard's final/test_accuracy of %s is the float32 of run.json's", name)
	}
}

// hparamsPost returns a function that posts body to the hparams plugin's route of the
// TensorBoard at url and decodes its answer into out.
func hparamsPost(t *testing.T, url string) func(route, body string, out any) {
	return func(route, body string, out any) {
		t.Helper()
		resp, err := http.Post(url+"/data/plugin/hparams/"+route, "application/json", bytes.NewBufferString(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, route)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
}

// hparamsFinalAccuracies reads the session groups of the dashboard: each run's status and
// hyperparameters, and its final test accuracy by learning rate.
func hparamsFinalAccuracies(t *testing.T, post func(route, body string, out any)) map[float64]float64 {
	var groups struct {
		SessionGroups []struct {
			Name    string         `json:"name"`
			HParams map[string]any `json:"hparams"`
			Metric  []struct {
				Name  struct{ Tag string } `json:"name"`
				Value float64              `json:"value"`
			} `json:"metricValues"`
			Sessions []struct {
				Status string `json:"status"`
			} `json:"sessions"`
		} `json:"sessionGroups"`
	}
	post("session_groups", `{"experimentName": "", "startIndex": 0, "sliceSize": 10, "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"], "colParams": [{"metric": {"tag": "`+tagFinalAccuracy+`"}}]}`, &groups)
	require.Len(t, groups.SessionGroups, 2)
	got := map[float64]float64{}
	for _, g := range groups.SessionGroups {
		require.Equal(t, "STATUS_SUCCESS", g.Sessions[0].Status)
		require.Equal(t, "linear", g.HParams["model"])
		require.Equal(t, false, g.HParams["augment"])
		for _, m := range g.Metric {
			if m.Name.Tag == tagFinalAccuracy {
				got[g.HParams["lr"].(float64)] = m.Value
			}
		}
	}
	return got
}
