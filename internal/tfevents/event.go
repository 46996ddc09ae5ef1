package tfevents

import (
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of tensorboard/compat/proto/event.proto and summary.proto.
const (
	eventWallTime    protowire.Number = 1 // double
	eventStep        protowire.Number = 2 // int64
	eventFileVersion protowire.Number = 3 // string
	eventSummary     protowire.Number = 5 // Summary
	eventSessionLog  protowire.Number = 7 // SessionLog

	summaryValue protowire.Number = 1 // repeated Summary.Value

	valueTag         protowire.Number = 1 // string
	valueSimpleValue protowire.Number = 2 // float

	sessionLogStatus protowire.Number = 1 // SessionLog.SessionStatus
	sessionLogStart                   = 1 // SessionLog.START
)

// FileVersion is the file_version of the first event of every file: version 2 makes
// TensorBoard drop the points a SessionLog START supersedes (see Writer.Start).
const FileVersion = "brain.Event:2"

// Scalar is one value of a summary: a tag (TensorBoard's chart name, "train/loss") and its
// value, which TensorBoard stores as a float32.
type Scalar struct {
	Tag   string
	Value float32
}

// appendEventHeader appends an Event's wall_time (seconds since the Unix epoch) and step.
func appendEventHeader(b []byte, wall time.Time, step int64) []byte {
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(float64(wall.UnixNano())/1e9))
	if step != 0 {
		b = protowire.AppendTag(b, eventStep, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(step))
	}
	return b
}

// fileVersionEvent is the Event that opens a file.
func fileVersionEvent(wall time.Time) []byte {
	b := appendEventHeader(nil, wall, 0)
	b = protowire.AppendTag(b, eventFileVersion, protowire.BytesType)
	return protowire.AppendString(b, FileVersion)
}

// summaryEvent is an Event with a Summary of simple_value scalars.
func summaryEvent(wall time.Time, step int64, values []Scalar) []byte {
	var summary []byte
	for _, v := range values {
		var value []byte
		value = protowire.AppendTag(value, valueTag, protowire.BytesType)
		value = protowire.AppendString(value, v.Tag)
		value = protowire.AppendTag(value, valueSimpleValue, protowire.Fixed32Type)
		value = protowire.AppendFixed32(value, math.Float32bits(v.Value))
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, value)
	}
	b := appendEventHeader(nil, wall, step)
	b = protowire.AppendTag(b, eventSummary, protowire.BytesType)
	return protowire.AppendBytes(b, summary)
}

// sessionStartEvent is an Event with SessionLog{status: START} at step.
func sessionStartEvent(wall time.Time, step int64) []byte {
	var log []byte
	log = protowire.AppendTag(log, sessionLogStatus, protowire.VarintType)
	log = protowire.AppendVarint(log, sessionLogStart)
	b := appendEventHeader(nil, wall, step)
	b = protowire.AppendTag(b, eventSessionLog, protowire.BytesType)
	return protowire.AppendBytes(b, log)
}
