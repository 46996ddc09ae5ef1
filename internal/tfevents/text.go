package tfevents

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of summary.proto and tensor.proto for a text summary: a Summary.Value with a
// scalar string tensor and the "text" plugin's metadata, what TensorBoard's TEXT tab shows (and
// tf.summary.text writes).
const (
	valueTensor     protowire.Number = 8 // Summary.Value.tensor: TensorProto
	tensorDType     protowire.Number = 1 // TensorProto.dtype: DataType
	tensorShape     protowire.Number = 2 // TensorProto.tensor_shape (empty: a scalar)
	tensorStringVal protowire.Number = 8 // TensorProto.string_val: repeated bytes
	dtString                         = 7 // DataType.DT_STRING

	// TextPlugin is the plugin name of text summaries.
	TextPlugin = "text"
)

// textEvent is an Event with one text summary (a scalar string tensor) tagged tag at step.
func textEvent(wall time.Time, step int64, tag, text string) []byte {
	tensor := protowire.AppendVarint(protowire.AppendTag(nil, tensorDType, protowire.VarintType), dtString)
	tensor = appendBytesField(appendBytesField(tensor, tensorShape, nil), tensorStringVal, []byte(text))
	metadata := appendBytesField(nil, metadataPluginData, appendBytesField(nil, pluginName, []byte(TextPlugin)))
	value := appendBytesField(appendBytesField(appendBytesField(nil, valueTag, []byte(tag)), valueTensor, tensor), valueMetadata, metadata)
	b := appendEventHeader(nil, wall, step)
	return appendBytesField(b, eventSummary, appendBytesField(nil, summaryValue, value))
}

// Text writes one event at step with a text summary under tag (Markdown, shown in
// TensorBoard's TEXT tab), stamped with the current time.
func (w *Writer) Text(step int64, tag, text string) error {
	return w.write(textEvent(time.Now(), step, tag, text))
}
