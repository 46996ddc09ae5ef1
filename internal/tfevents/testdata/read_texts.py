"""Reads the text summaries of TensorBoard event files with TensorBoard's own reader, as JSON.

Usage: read_texts.py RUN_DIR

The output is {"tag": [[step, "text"], ...]} for each tag of TensorBoard's text plugin, as its
EventAccumulator loads them (every event kept). Used by the Go tests (tbtest.ReadTexts).
"""

import json
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util


def main(argv):
    acc = event_accumulator.EventAccumulator(argv[1], size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    out = {}
    for tag in acc.PluginTagToContent("text"):
        out[tag] = [[e.step, tensor_util.make_ndarray(e.tensor_proto).item().decode()] for e in acc.Tensors(tag)]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
