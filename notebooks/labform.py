"""The form in which JupyterLab saves a notebook, so that a committed notebook opened, trusted
and saved (or autosaved) in JupyterLab comes back byte for byte: nothing to commit, nothing
dirty.

JupyterLab keeps a notebook in its own model and sends that model's JSON to the server, which
writes it with nbformat (jupyter_server's FileContentsManager: nbformat.write, with nbformat's
key order, indent and line splitting, and a trailing newline). What the model changes is
therefore the whole difference between a notebook nbclient wrote and the same notebook saved by
JupyterLab (measured with JupyterLab 4.6: notebooks/browser-test/run.mjs checks it):

* consecutive stream outputs of the same name are one output (OutputAreaModel._add), their
  text processed for carriage returns and backspaces as JupyterLab's Private.processText does.
  (JupyterLab 4.6 merges them when it loads a notebook, but its shared model keeps the
  originals, so that its save writes the merged output followed by the originals: text twice.
  A notebook whose streams are merged already is saved as it was read.)
* numbers are JavaScript numbers: JSON.stringify writes a float with an integral value without
  its fraction (20.0 becomes 20), which the server then reads as an int.

Everything else (metadata, cell ids, nbformat 4.5, the outputs' other fields) JupyterLab writes
back as it read it. `jupyterlab_form` applies both changes; `jupyterlab_bytes` is the file
JupyterLab would save.
"""

from __future__ import annotations

import decimal
import re
from typing import Any

import nbformat

_CONTROL_RE = re.compile(r"[\n\b\r]")


def process_text(index: int, text: str, buffer: str = "") -> tuple[str, int]:
    """JupyterLab's Private.processText (outputarea/src/model.ts): writes text into buffer at
    index, where "\\r" goes back to the start of the line, "\\b" deletes the character before,
    and "\\n" ends the line; returns the buffer and the index to write at next. (Indices are
    Python characters where JavaScript counts UTF-16 units: they differ only around characters
    outside the BMP in a line overwritten by "\\r" or "\\b".)"""
    if not _CONTROL_RE.search(text):
        return buffer[:index] + text + buffer[index + len(text):], index + len(text)
    r, o = index, 0
    while True:
        m = _CONTROL_RE.search(text, o)
        s = m.start() if m else -1
        chunk = text[o:] if s == -1 else text[o:s]
        buffer = buffer[:r] + chunk + buffer[r + len(chunk):]
        o, r = s + 1, r + len(chunk)
        if s == -1:
            return buffer, r
        ch = text[s]
        if ch == "\b":
            if r > 0 and buffer[r - 1] != "\n":
                buffer = buffer[: r - 1] + buffer[r + 1:]
                r -= 1
        elif ch == "\r":
            while not (r == 0 or buffer[r - 1] == "\n"):
                r -= 1
        else:  # "\n"
            buffer += "\n"
            r = len(buffer)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else value


def merge_streams(outputs: list[Any]) -> list[Any]:
    """The outputs as JupyterLab's OutputAreaModel holds them: each run of stream outputs of the
    same name merged into the first, every stream's text processed (process_text)."""
    merged: list[Any] = []
    last_name, index = None, 0
    for out in outputs:
        if out.get("output_type") != "stream":
            merged.append(out)
            last_name = None
            continue
        text = _text(out.get("text", ""))
        if out.get("name") == last_name and merged:
            prev = merged[-1]
            prev["text"], index = process_text(index, text, _text(prev["text"]))
            continue
        out["text"], index = process_text(0, text)
        merged.append(out)
        last_name = out.get("name")
    return merged


def js_number(value: Any) -> Any:
    """value as JSON.stringify writes it and the server reads it back: a float with an integral
    value (below 1e21, where JavaScript starts writing exponents) becomes the int of its shortest
    decimal form; -0.0 becomes 0; an int beyond 2**53 is rounded to a double as JavaScript
    parses it; anything else is itself. Lists and dicts are converted throughout."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) >= 2**53:  # beyond a double's exact integers
        value = float(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return int(decimal.Decimal(repr(value)))
        return value
    if isinstance(value, list):
        return [js_number(v) for v in value]
    if isinstance(value, dict):
        return type(value)((k, js_number(v)) for k, v in value.items())
    return value


def jupyterlab_form(nb: Any) -> Any:
    """Returns nb (a NotebookNode) as JupyterLab saves it: streams merged, numbers as
    JavaScript writes them. It changes nb in place."""
    for cell in nb.cells:
        if cell.get("cell_type") == "code" and "outputs" in cell:
            cell["outputs"] = merge_streams(list(cell["outputs"]))
    return nbformat.from_dict(js_number(nb))


def jupyterlab_bytes(nb: Any) -> bytes:
    """The file JupyterLab saves for nb: its form written by nbformat as jupyter_server writes
    it, with a trailing newline."""
    text = nbformat.writes(jupyterlab_form(nb), version=nbformat.NO_CONVERT)
    if not text.endswith("\n"):
        text += "\n"
    return text.encode("utf-8")


def form_problem(path: str) -> str | None:
    """Says how the file at path differs from what JupyterLab would save for it, None when it
    does not: a committed notebook must not change when a reader opens and saves it."""
    with open(path, "rb") as f:
        raw = f.read()
    nb = nbformat.reads(raw.decode("utf-8"), as_version=nbformat.NO_CONVERT)
    want = jupyterlab_bytes(nb)
    if raw == want:
        return None
    have_lines, want_lines = raw.decode("utf-8").splitlines(), want.decode("utf-8").splitlines()
    for i, (a, b) in enumerate(zip(have_lines, want_lines)):
        if a != b:
            where = f"line {i + 1}: {a.strip()[:80]!r}, JupyterLab writes {b.strip()[:80]!r}"
            break
    else:
        where = f"{len(have_lines)} lines, JupyterLab writes {len(want_lines)}"
    return (
        f"not in the form JupyterLab saves (opening it in JupyterLab would rewrite it; {where}): "
        "write it with nbcheck.py --write or --reformat"
    )
