package tfevents

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of summary.proto's metadata and of the hparams plugin's
// tensorboard/plugins/hparams/plugin_data.proto, and google.protobuf.Value's.
const (
	valueMetadata protowire.Number = 9 // Summary.Value.metadata: SummaryMetadata

	metadataPluginData protowire.Number = 1 // SummaryMetadata.plugin_data: PluginData
	pluginName         protowire.Number = 1 // PluginData.plugin_name
	pluginContent      protowire.Number = 2 // PluginData.content

	hpVersion      protowire.Number = 1 // HParamsPluginData.version
	hpSessionStart protowire.Number = 3 // HParamsPluginData.session_start_info
	hpSessionEnd   protowire.Number = 4 // HParamsPluginData.session_end_info

	startHParams   protowire.Number = 1 // SessionStartInfo.hparams: map<string, Value>
	startTimeSecs  protowire.Number = 5 // SessionStartInfo.start_time_secs
	endStatus      protowire.Number = 1 // SessionEndInfo.status
	endTimeSecs    protowire.Number = 2 // SessionEndInfo.end_time_secs
	mapKey         protowire.Number = 1
	mapValue       protowire.Number = 2
	pbNumberValue  protowire.Number = 2 // google.protobuf.Value.number_value
	pbStringValue  protowire.Number = 3 // google.protobuf.Value.string_value
	pbBoolValue    protowire.Number = 4 // google.protobuf.Value.bool_value
	hparamsVersion                  = 0 // plugin_data.proto's PLUGIN_DATA_VERSION
)

// The tags and plugin name TensorBoard's hparams plugin reads (its metadata.py).
const (
	HParamsPlugin          = "hparams"
	HParamsSessionStartTag = "_hparams_/session_start_info"
	HParamsSessionEndTag   = "_hparams_/session_end_info"
)

// SessionStatus is the hparams plugin's Status of a session (a run) that ended.
type SessionStatus int

// The statuses of api.proto's Status enum.
const (
	StatusSuccess SessionStatus = 1
	StatusFailure SessionStatus = 2
	StatusRunning SessionStatus = 3
)

// HParams writes the run's hyperparameters for TensorBoard's HParams dashboard, as PyTorch's
// SummaryWriter.add_hparams and Lightning's log_hyperparams do: a summary tagged
// _hparams_/session_start_info whose metadata carries the hparams plugin's SessionStartInfo.
// A value that parses as a number is written as one (so the dashboard sorts and plots it),
// "true" and "false" as booleans, anything else as a string. The dashboard takes its metrics
// from the run's scalars.
func (w *Writer) HParams(params map[string]string, started time.Time) error {
	var info []byte
	for _, k := range slices.Sorted(maps.Keys(params)) {
		entry := appendBytesField(appendBytesField(nil, mapKey, []byte(k)), mapValue, protoValue(params[k]))
		info = appendBytesField(info, startHParams, entry)
	}
	info = protowire.AppendTag(info, startTimeSecs, protowire.Fixed64Type)
	info = protowire.AppendFixed64(info, math.Float64bits(float64(started.UnixNano())/1e9))
	return w.write(pluginEvent(time.Now(), HParamsSessionStartTag, hpSessionStart, info))
}

// HParamsEnd writes the hparams plugin's SessionEndInfo: how the run ended.
func (w *Writer) HParamsEnd(status SessionStatus, ended time.Time) error {
	var info []byte
	info = protowire.AppendTag(info, endStatus, protowire.VarintType)
	info = protowire.AppendVarint(info, uint64(status))
	info = protowire.AppendTag(info, endTimeSecs, protowire.Fixed64Type)
	info = protowire.AppendFixed64(info, math.Float64bits(float64(ended.UnixNano())/1e9))
	return w.write(pluginEvent(time.Now(), HParamsSessionEndTag, hpSessionEnd, info))
}

// protoValue encodes s as a google.protobuf.Value: a number, a bool or a string.
func protoValue(s string) []byte {
	var v []byte
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		v = protowire.AppendTag(v, pbNumberValue, protowire.Fixed64Type)
		return protowire.AppendFixed64(v, math.Float64bits(f))
	}
	if s == "true" || s == "false" {
		v = protowire.AppendTag(v, pbBoolValue, protowire.VarintType)
		return protowire.AppendVarint(v, protowire.EncodeBool(s == "true"))
	}
	return appendBytesField(v, pbStringValue, []byte(s))
}

// pluginEvent is an Event with one Summary value tagged tag, with no data, whose metadata is
// the hparams plugin's HParamsPluginData holding field as info.
func pluginEvent(wall time.Time, tag string, field protowire.Number, info []byte) []byte {
	content := protowire.AppendVarint(protowire.AppendTag(nil, hpVersion, protowire.VarintType), hparamsVersion)
	content = appendBytesField(content, field, info)
	plugin := appendBytesField(appendBytesField(nil, pluginName, []byte(HParamsPlugin)), pluginContent, content)
	value := appendBytesField(appendBytesField(nil, valueTag, []byte(tag)), valueMetadata, appendBytesField(nil, metadataPluginData, plugin))
	return appendBytesField(appendEventHeader(nil, wall, 0), eventSummary, appendBytesField(nil, summaryValue, value))
}

// appendBytesField appends field n holding v (a string, bytes or an embedded message).
func appendBytesField(b []byte, n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
}
