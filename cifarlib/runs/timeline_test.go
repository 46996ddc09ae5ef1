package runs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestTimelineFormat(t *testing.T) {
	full := []Event{
		{Phase: PhaseStart, Duration: ms(500)},
		{Phase: PhaseBackend, Start: ms(500), Duration: ms(0)},
		{Phase: PhaseData, Start: ms(500), Duration: ms(100)},
		{Phase: PhaseCompile, Program: ProgramTrainStep, Start: ms(600), Duration: ms(3900)},
		{Phase: PhaseCompile, Program: ProgramInit, Start: ms(4500), Duration: ms(30)},
		{Phase: PhaseFirstStep, Start: ms(4530), Duration: ms(20)},
		{Phase: PhaseCompile, Program: ProgramEvaluation, For: "validation", Start: ms(4600), Duration: ms(400)},
		{Phase: PhaseValidation, Start: ms(5000), Duration: ms(150), Count: 500},
		{Phase: PhaseCheckpoint, Start: ms(5200), Duration: ms(10)},
		{Phase: PhaseValidation, Start: ms(6000), Duration: ms(150), Count: 500},
		{Phase: PhaseSteps, Start: ms(4550), Duration: ms(2480), Count: 299},
		{Phase: PhaseEval, Start: ms(7100), Duration: ms(100), Count: 1000},
		{Phase: PhaseCheckpoint, Start: ms(7300), Duration: ms(20)},
	}
	for _, tc := range []struct {
		name        string
		events      []Event
		short, long string
	}{
		{"empty", nil, "", ""},
		{"a whole run", full,
			"start 0.6 s · compile 4.3 s · 300 steps 2.5 s · eval 0.4 s · 2 checkpoints 0.03 s",
			"start 0.50 s · backend 0.00 s · data 0.10 s · compile train step 3.90 s · compile variable initialisation 0.03 s · " +
				"first step 0.02 s · compile evaluation (validation) 0.40 s · 2 validations 0.30 s · 2 checkpoints 0.03 s · " +
				"299 steps 2.48 s · eval 0.10 s"},
		{"one step, nothing else", []Event{{Phase: PhaseFirstStep, Duration: ms(40)}},
			"1 step 0.04 s", "first step 0.04 s"},
		{"an evaluation cell", []Event{{Phase: PhaseStart, Duration: ms(700)}, {Phase: PhaseCompile, Program: ProgramEvaluation, For: "eval", Duration: ms(1200)},
			{Phase: PhaseEval, Duration: ms(2500), Count: 10000}},
			"start 0.7 s · compile 1.2 s · eval 2.5 s",
			"start 0.70 s · compile evaluation (eval) 1.20 s · eval 2.50 s"},
		{"a new process on a warm compile cache", []Event{{Phase: PhaseStart, Duration: ms(20)},
			{Phase: PhaseBuild, Program: ProgramTrainStep, Start: ms(20), Duration: ms(300)},
			{Phase: PhaseLoad, Program: ProgramTrainStep, Start: ms(320), Duration: ms(40)},
			{Phase: PhaseBuild, Program: ProgramEvaluation, For: "validation", Start: ms(400), Duration: ms(10)},
			{Phase: PhaseCompile, Program: ProgramEvaluation, For: "validation", Start: ms(410), Duration: ms(900)},
			{Phase: PhaseFirstStep, Start: ms(1310), Duration: ms(20)}},
			"start 0.02 s · build 0.3 s · compile 0.9 s · loaded 0.04 s · 1 step 0.02 s",
			"start 0.02 s · build train step 0.30 s · loaded train step from the cache 0.04 s · build evaluation (validation) 0.01 s · " +
				"compile evaluation (validation) 0.90 s · first step 0.02 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &Timeline{Events: tc.events}
			require.Equal(t, tc.short, tl.Short())
			require.Equal(t, tc.long, tl.String())
		})
	}
	var none *Timeline
	require.Empty(t, none.Short())
	require.Empty(t, none.String())
}

func TestTimelineCounts(t *testing.T) {
	tl := &Timeline{Events: []Event{
		{Phase: PhaseCompile, Program: ProgramTrainStep, Duration: ms(10)},
		{Phase: PhaseCompile, Program: ProgramEvaluation, Duration: ms(20)},
		{Phase: PhaseSteps, Count: 9, Duration: ms(90)},
		{Phase: PhaseCompile, Program: ProgramEvaluation, Duration: ms(5)},
	}}
	require.Equal(t, 3, tl.Compiles(""))
	require.Equal(t, 2, tl.Compiles(ProgramEvaluation))
	require.Equal(t, 0, tl.Compiles(ProgramInit))
	tl.Events = append(tl.Events, Event{Phase: PhaseBuild, Program: ProgramInit}, Event{Phase: PhaseLoad, Program: ProgramInit})
	require.Equal(t, 3, tl.Compiles(""), "a load is not a compile")
	require.Equal(t, 1, tl.Loads(""))
	require.Equal(t, 4, tl.Programs(""))
	require.Equal(t, 1, tl.Programs(ProgramInit))
	d, n := tl.Total(PhaseSteps)
	require.Equal(t, ms(90), d)
	require.Equal(t, 9, n)
	d, n = tl.Total("")
	require.Equal(t, ms(125), d)
	require.Equal(t, 14, n)
}

func TestProcStart(t *testing.T) {
	now := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	stat := "24375 (a (b) c) R 24373 24373 9062 0 -1 4194304 122 0 0 0 0 0 0 0 20 0 1 0 58661 3133440 411"
	for _, tc := range []struct {
		name, stat, uptime string
		want               time.Time
		err                bool
	}{
		{"a process started 2.3 s ago", stat, "588.91 762.37\n", now.Add(-2300 * time.Millisecond), false},
		{"started this tick", stat, "586.61 1.0", now, false},
		{"no command name", "24375 R 1 2", "1 1", time.Time{}, true},
		{"too few fields", "1 (x) R 1 2 3", "1 1", time.Time{}, true},
		{"start not a number", "1 (x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20", "1 1", time.Time{}, true},
		{"empty uptime", stat, "", time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := procStart(tc.stat, tc.uptime, now)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.WithinDuration(t, tc.want, got, time.Millisecond)
		})
	}
	// A caller's origin.
	tl := NewTimeline(now)
	require.Equal(t, now, tl.Origin)
	require.Equal(t, CallerFrom, tl.OriginFrom)

	// This process: /proc says when it started, before this package's init.
	start, from := ProcessStart()
	require.False(t, start.After(initTime))
	if from == ProcStartFrom {
		require.Less(t, initTime.Sub(start), time.Minute)
	} else {
		require.Equal(t, InitStartFrom, from)
	}
}

// TestEventLabel: an event is named as the timeline lists it, a program's event by its phase
// and its program whatever the phase (a phase added later reads the same way).
func TestEventLabel(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Phase: PhaseCompile, Program: ProgramTrainStep, For: ProgramTrainStep, Duration: 3130 * time.Millisecond}, "compile train step 3.13 s"},
		{Event{Phase: PhaseCompile, Program: ProgramInit, For: ProgramTrainStep}, "compile variable initialisation (train step) 0.00 s"},
		{Event{Phase: PhaseCompile, Program: ProgramEvaluation, For: "eval", TTA: 2}, "compile evaluation (eval, TTA level 2) 0.00 s"},
		{Event{Phase: "build_graph", Program: ProgramTrainStep, Duration: 400 * time.Millisecond}, "build graph train step 0.40 s"},
		{Event{Phase: PhaseFirstStep, Duration: 15450 * time.Millisecond}, "first step 15.45 s"},
		{Event{Phase: PhaseSteps, Count: 299}, "299 steps 0.00 s"},
		{Event{Phase: PhaseEval, Count: 1000}, "eval 0.00 s"},
	} {
		require.Equal(t, c.want, c.e.String())
	}
}
