#!/usr/bin/env python3
"""Execute cifarlab notebooks with a real Jupyter kernel and check what they print.

Usage:
    nbcheck.py [--kernel NAME] [--timeout SECONDS] [--max-seconds SECONDS]
               [--write | --output-dir DIR] [--report FILE] [--require-real]
               [--check-only [--form] [--data-dir DIR]] [--reformat]
               NOTEBOOK.ipynb [...]

Each notebook is executed top to bottom through nbclient (the library behind
`jupyter nbconvert --execute`) with a per-cell timeout, in the notebook's own
folder (so GoNB's GONB_DIR is notebooks/). Then every cell is checked:

* A cell without the `raises-exception` tag must not produce an error output.
  nbclient stops at the first such cell (it honours the tag itself); the check
  below repeats it so that the report names the cell and quotes the error.
* A cell tagged `raises-exception` MUST produce an error output: a cell that is
  meant to show a failure and no longer fails is a broken story.
* The expectations in the cell's metadata under "cifarlab" must hold:

      "cifarlab": {
        "expect": [
          "a substring that must appear in the cell's outputs",
          {"regex": "accuracy ([0-9.]+)%", "min": 40.0},
          {"regex": "zero-loss examples: (\\d+) of (\\d+)", "equal_groups": [1, 2]},
          {"mime": "image/png", "count_min": 1}
        ],
        "forbid": ["text that must not appear"]
      }

  Text is matched against everything the cell printed: stdout and stderr
  streams, text/plain and text/html (tags stripped, entities decoded) of
  display data, and the error's name, value and traceback (ANSI colours
  stripped). A regex entry may bound the number in its first group (`group`
  picks another) with `min`/`max`, require two groups to be equal
  (`equal_groups`), or require at least `count_min` matches. A `mime` entry
  counts outputs carrying that MIME type.
* No expectation checks a printed number to more digits than it holds across CPUs: a decimal
  number with more than 2 significant digits in an expected text, or written literally in a
  regex, is refused (XLA CPU rounds differently on an AVX-512 Intel and an AVX2 AMD machine,
  and a loss or an accuracy moves in its later digits). Bound such a number with a regex group
  and min/max instead. A text that is the same on every CPU (a count, a constant) is written
  {"text": "...", "exact": "why it does not depend on rounding"}.
* Outputs carry nothing of the machine that ran them (committed notebooks are read on others):
  no ANSI escape codes, no path of the checkout, no /root, /home, /tmp or /Users path, no venv
  path, no absolute Go source position (file.go:NN), and no GoNB temporary main.go:NN. After a
  run, and before the checks, outputs are cleaned of what the kernel itself adds (portable()):
  ANSI codes are stripped, the checkout's path is made relative (cifarlib/loss.go:139), GOROOT
  and GOMODCACHE are written $GOROOT and $GOMODCACHE, consecutive streams are merged as JupyterLab
  shows them, and GoNB's temporary main.go path in a panic's stack trace is dropped (the trace, or
  GoNB's HTML rendering of it where GoNB read the path in pieces and left it unmapped, names the
  cell and line). Anything left is
  a problem of the cell: the library must print a name or a $CIFARLAB_DATA path instead.
* Notebook metadata "cifarlab": {"max_seconds": N} (or --max-seconds) bounds the
  whole run; it is only enforced when --max-seconds is given or
  NBCHECK_ENFORCE_TIME=1, because wall time on a shared machine is noisy.

With --write the executed notebook replaces the input file (only when every
check passed), which is how notebooks/regenerate.sh refreshes the committed
outputs. With --output-dir the executed notebook is written there instead
(always, so a failing run can be inspected). Either is written in the form
JupyterLab saves (labform.py), with the data it ran on named in its metadata
(nbdata.py); --reformat rewrites notebooks in that form without running them.

Exit status: 0 when every check passed, 1 when a check failed, 2 on usage or
set-up errors (missing kernel, unreadable notebook).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

try:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    import labform
    import nbdata
except ImportError as exc:  # pragma: no cover - set-up problem, reported clearly
    sys.stderr.write(
        f"nbcheck: {exc}. Run it with the project's venv: .venv/bin/python notebooks/nbcheck.py "
        "(kernel/setup.sh creates .venv with jupyterlab and nbclient).\n"
    )
    sys.exit(2)

RAISES_TAG = "raises-exception"
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # notebooks/..
META_KEY = "cifarlab"
DEFAULT_KERNEL = "cifarlab-cpu"
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TAG_RE = re.compile(r"<[^>]+>")


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text)


def html_to_text(markup: str) -> str:
    markup = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", markup)
    markup = re.sub(r"(?i)<br\s*/?>|</(p|div|tr|li|h[1-6]|pre|table)>", "\n", markup)
    markup = re.sub(r"(?i)</t[dh]>", "\t", markup)
    return html.unescape(TAG_RE.sub("", markup))


def as_text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(value)
    return value if isinstance(value, str) else ""


def cell_text(cell: Any) -> str:
    """Everything a cell printed, as plain text, in output order. Consecutive chunks of the same
    stream are joined as the notebook shows them (a program's output arrives in pieces)."""
    parts: list[str] = []
    last_stream = None
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = strip_ansi(as_text(out.get("text")))
            if last_stream == out.get("name") and parts:
                parts[-1] += text
            else:
                parts.append(text)
            last_stream = out.get("name")
            continue
        last_stream = None
        if kind in ("display_data", "execute_result"):
            data = out.get("data", {})
            if "text/plain" in data:
                parts.append(strip_ansi(as_text(data["text/plain"])))
            if "text/html" in data:
                parts.append(html_to_text(as_text(data["text/html"])))
            if "text/markdown" in data:
                parts.append(as_text(data["text/markdown"]))
        elif kind == "error":
            parts.append(strip_ansi(f"{out.get('ename', '')}: {out.get('evalue', '')}"))
            parts.append(strip_ansi("\n".join(out.get("traceback", []))))
    return "\n".join(parts)


# What a committed output must not carry: (pattern, what it is). The checkout's own path is
# added by machine_problems. A path is absolute when it follows no word, path or URL character.
ABS = r"(?<![\w.$~:/@-])/"
MACHINE_PATTERNS = [
    (re.compile(r"\x1b\["), "an ANSI escape code"),
    (re.compile(ABS + r"(?:root|home|tmp|Users)(?:/[^\s\"'<>()]*)?"), "a home or temporary folder's path"),
    (re.compile(ABS + r"[^\s\"'<>()]*/\.venv/[^\s\"'<>()]*"), "a venv's path"),
    (re.compile(ABS + r"[^\s\"'<>():]+\.go:\d+"), "an absolute Go source position"),
    (re.compile(r"gonb_[0-9a-f]+/main\.go|\bmain\.go:\d+"), "GoNB's temporary main.go"),
]
GONB_MAIN_RE = re.compile(ABS + r"[^\s\"'<>()]*gonb_[0-9a-f]+/main\.go:\d+")


def output_strings(out: Any) -> list[str]:
    """The texts of one output, as committed: stream text, every MIME's data, error fields."""
    texts = [as_text(out.get("text")), as_text(out.get("ename")), as_text(out.get("evalue"))]
    texts += [as_text(v) for v in out.get("data", {}).values() if isinstance(v, (str, list))]
    texts += [as_text(t) for t in out.get("traceback", [])]
    return [t for t in texts if t]


def machine_problems(cell: Any, checkout: str) -> list[str]:
    """What a cell's outputs carry of the machine that ran them (see MACHINE_PATTERNS)."""
    found: dict[str, str] = {}
    roots = {p for p in (checkout, os.path.realpath(checkout)) if p and p != "/"}
    for out in cell.get("outputs", []):
        for text in output_strings(out):
            for root in roots:
                m = re.search(re.escape(root) + r"/[^\s\"'<>()]*", text)
                if m:
                    found.setdefault("the checkout's path " + root, m.group(0)[:80])
            for rx, what in MACHINE_PATTERNS:
                m = rx.search(text)
                if m:
                    found.setdefault(what, m.group(0)[:80])
    return [
        f"output carries {what} ({snippet!r}): committed outputs must show nothing of the machine or terminal "
        "that ran them; print a name, a relative or a $CIFARLAB_DATA path, and no colours"
        for what, snippet in found.items()
    ]


def go_env(name: str) -> str:
    try:
        import subprocess

        return subprocess.run(["go", "env", name], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def portable(nb: Any, checkout: str) -> None:
    """Cleans executed outputs of what the kernel adds of this machine (see the module doc)."""
    prefixes = [(p.rstrip("/") + "/", "") for p in {checkout, os.path.realpath(checkout)} if p and p != "/"]
    for name in ("GOMODCACHE", "GOROOT"):
        value = go_env(name)
        if value and value != "/":
            prefixes.append((value.rstrip("/") + "/", "$" + name + "/"))

    def clean(text: str) -> str:
        text = GONB_MAIN_RE.sub("", strip_ansi(text))
        for prefix, repl in sorted(prefixes, key=lambda p: -len(p[0])):
            text = text.replace(prefix, repl)
        return text

    def clean_value(value: Any) -> Any:
        if isinstance(value, list):
            return [clean(v) if isinstance(v, str) else v for v in value]
        return clean(value) if isinstance(value, str) else value

    for cell in nb.cells:
        if cell.get("cell_type") == "code" and "outputs" in cell:
            # One stream as JupyterLab shows it: GoNB maps main.go:NN to the cell's line in each
            # piece it reads, so a path the Go runtime wrote in pieces arrives split and unmapped.
            cell["outputs"] = labform.merge_streams(list(cell["outputs"]))
        for out in cell.get("outputs", []):
            for key in ("text", "evalue", "traceback"):
                if key in out:
                    out[key] = clean_value(out[key])
            data = out.get("data", {})
            for mime in list(data):
                if mime.startswith("text/"):
                    data[mime] = clean_value(data[mime])


def error_outputs(cell: Any) -> list[Any]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def mime_count(cell: Any, mime: str) -> int:
    return sum(
        1
        for o in cell.get("outputs", [])
        if o.get("output_type") in ("display_data", "execute_result") and mime in o.get("data", {})
    )


def short(text: str, limit: int = 600) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit // 2] + "\n   [...]\n" + text[-limit // 2 :]


# A decimal number (not part of a version like 0.11.2), as printed or as written in a regex.
PRINTED_DECIMAL_RE = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?![\d.])")
REGEX_DECIMAL_RE = re.compile(r"(?<![\d.\\])(\d+)\\\.(\d+)(?![\d\\])")
MAX_EXACT_DIGITS = 2


def significant_digits(whole: str, fraction: str) -> int:
    return len((whole + fraction).lstrip("0")) or 1


def precision_problem(exp: Any) -> str | None:
    """Returns a message when exp checks a number to more digits than it holds across CPUs."""
    if isinstance(exp, dict) and "text" in exp and exp.get("exact"):
        return None
    if isinstance(exp, str):
        found = PRINTED_DECIMAL_RE.findall(exp)
    elif isinstance(exp, dict) and "regex" in exp:
        found = REGEX_DECIMAL_RE.findall(exp["regex"])
    else:
        return None
    for whole, fraction in found:
        if significant_digits(whole, fraction) > MAX_EXACT_DIGITS:
            return (
                f"expectation {exp!r} checks {whole}.{fraction} to {significant_digits(whole, fraction)} digits, "
                f"more than a float holds across CPUs: match it with a regex group and bound it with min/max, "
                f'or write {{"text": ..., "exact": "why"}} if it does not depend on rounding'
            )
    return None


def check_expectation(exp: Any, cell: Any, text: str) -> str | None:
    """Returns None when the expectation holds, else a message saying what is wrong."""
    problem = precision_problem(exp)
    if problem:
        return problem
    if isinstance(exp, str):
        return None if exp in text else f"expected text not found: {exp!r}"
    if isinstance(exp, dict) and "text" in exp:
        return None if exp["text"] in text else f"expected text not found: {exp['text']!r}"
    if not isinstance(exp, dict):
        return f"bad expectation (want a string or an object): {exp!r}"
    if "mime" in exp:
        n = mime_count(cell, exp["mime"])
        want = int(exp.get("count_min", 1))
        return None if n >= want else f"expected at least {want} output(s) of type {exp['mime']}, found {n}"
    if "regex" in exp:
        try:
            rx = re.compile(exp["regex"], re.MULTILINE)
        except re.error as err:
            return f"bad regex {exp['regex']!r}: {err}"
        matches = list(rx.finditer(text))
        want = int(exp.get("count_min", 1))
        if len(matches) < want:
            return f"expected at least {want} match(es) of /{exp['regex']}/, found {len(matches)}"
        if not matches:
            return None
        m = matches[0]
        if "equal_groups" in exp:
            a, b = exp["equal_groups"]
            if m.group(a) != m.group(b):
                return f"/{exp['regex']}/ matched {m.group(0)!r} but group {a} ({m.group(a)}) != group {b} ({m.group(b)})"
        if "min" in exp or "max" in exp:
            g = int(exp.get("group", 1))
            try:
                value = float(m.group(g))
            except (IndexError, ValueError):
                return f"/{exp['regex']}/ matched {m.group(0)!r} but group {g} is not a number"
            if "min" in exp and value < float(exp["min"]):
                return f"{m.group(0)!r}: {value} is below the floor {exp['min']}"
            if "max" in exp and value > float(exp["max"]):
                return f"{m.group(0)!r}: {value} is above the ceiling {exp['max']}"
        return None
    return f"bad expectation (no text, regex or mime): {exp!r}"


@dataclass
class CellReport:
    index: int
    kind: str
    tags: list[str]
    seconds: float | None
    problems: list[str] = field(default_factory=list)


@dataclass
class NotebookReport:
    path: str
    kernel: str
    seconds: float
    cells: list[CellReport]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems and all(not c.problems for c in self.cells)


def check_cells(
    nb: Any,
    executed_upto: int | None,
    seconds: dict[int, float],
    cell_problems: dict[int, str] | None = None,
    checkout: str = "",
    kinds: dict[str, str] | None = None,
) -> list[CellReport]:
    """Checks every executed code cell; cells after a stopping failure are reported as not run.
    cell_problems adds a problem found while running (a timeout) to a cell; checkout is the
    checkout's path, which no output may carry; kinds is the kind of each dataset the outputs
    come from (nbdata), which decides the expectations that depend on the data (default: the
    data the notebook's metadata names, for a caller that ran it on the same data, as
    docker/hub/loadtest.py runs the committed notebooks on the image's synthetic data)."""
    if kinds is None:
        kinds = nbdata.kinds_of(nb)
    reports: list[CellReport] = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = list(cell.get("metadata", {}).get("tags", []))
        rep = CellReport(i, "code", tags, seconds.get(i))
        reports.append(rep)
        if cell_problems and i in cell_problems:
            rep.problems.append(cell_problems[i])
        if executed_upto is not None and i > executed_upto:
            rep.problems.append("not executed (an earlier cell stopped the run)")
            continue
        if cell.source.strip() and cell.get("execution_count") is None and not cell.get("outputs"):
            rep.problems.append("not executed (no execution count and no outputs)")
            continue
        errors = error_outputs(cell)
        text = cell_text(cell)
        if RAISES_TAG in tags:
            if not errors:
                rep.problems.append(
                    f"tagged {RAISES_TAG!r} but produced no error output; it printed:\n{short(text)}"
                )
        elif errors:
            e = errors[0]
            rep.problems.append(
                "unexpected error output: "
                + short(strip_ansi(f"{e.get('ename')}: {e.get('evalue')}\n" + "\n".join(e.get("traceback", []))))
                + ("\n   cell printed:\n" + short(text) if text.strip() else "")
            )
        meta = cell.get("metadata", {}).get(META_KEY, {})
        for exp in meta.get("expect", []):
            holds, problem = nbdata.applies(exp, kinds)
            if problem:
                rep.problems.append(problem)
            if not holds:
                continue
            msg = check_expectation(exp, cell, text)
            if msg:
                rep.problems.append(msg)
        for bad in meta.get("forbid", []):
            if bad in text:
                rep.problems.append(f"forbidden text present: {bad!r}")
        rep.problems.extend(machine_problems(cell, checkout))
        if rep.problems and not any(p.startswith("unexpected error") for p in rep.problems):
            rep.problems.append("cell output was:\n" + short(text, 1500))
    return reports


@dataclass
class Run:
    """What executing a notebook produced, besides the notebook itself."""

    seconds: float
    problems: list[str]
    stopped_at: int | None  # index of the cell the run stopped at, None when it completed
    cell_seconds: dict[int, float]
    cell_problems: dict[int, str]


def run_notebook(path: str, kernel: str, timeout: int, startup_timeout: int, kernel_log: str) -> tuple[Any, Run]:
    nb = nbformat.read(path, as_version=4)
    workdir = os.path.dirname(os.path.abspath(path))
    started: dict[int, float] = {}
    seconds: dict[int, float] = {}

    def on_start(cell: Any, cell_index: int, **_: Any) -> None:
        started[cell_index] = time.monotonic()

    def on_done(cell: Any, cell_index: int, **_: Any) -> None:
        if cell_index in started:
            seconds[cell_index] = time.monotonic() - started[cell_index]
    client = NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=timeout,
        startup_timeout=startup_timeout,
        allow_errors=False,  # nbclient itself honours the raises-exception tag
        record_timing=False,
        resources={"metadata": {"path": workdir}},
        on_cell_start=on_start,
        on_cell_executed=on_done,
    )
    problems: list[str] = []
    cell_problems: dict[int, str] = {}
    stopped_at: int | None = None
    start = time.monotonic()

    def last_started() -> int | None:
        return max(started) if started else current_cell_index(nb)

    log = open(kernel_log, "wb")  # the kernel's own log (GoNB is chatty on stderr)
    try:
        client.execute(stdout=log, stderr=log)
    except CellTimeoutError as err:
        stopped_at = last_started()
        problems.append(f"a cell ran past the per-cell timeout of {timeout}s (cell {stopped_at}); the run stopped there")
        if stopped_at is not None:
            cell_problems[stopped_at] = f"ran past the per-cell timeout of {timeout}s: {short(str(err), 300)}"
    except CellExecutionError:
        stopped_at = last_started()  # the cell's own check quotes the error
    except DeadKernelError as err:
        problems.append(f"the kernel died: {err}")
        stopped_at = last_started()
    except Exception as err:  # noqa: BLE001 - kernel start-up problems land here
        name = type(err).__name__
        if "NoSuchKernel" in name:
            raise SystemExit(
                f"nbcheck: no kernelspec named {kernel!r}. Install the kernels with `.bin/cifarlab kernel install` "
                f"(kernel/setup.sh does it) or pass --kernel; `jupyter kernelspec list` shows what exists."
            )
        problems.append(f"execution failed: {name}: {err}")
        stopped_at = last_started()
    finally:
        log.close()
    return nb, Run(time.monotonic() - start, problems, stopped_at, seconds, cell_problems)


def current_cell_index(nb: Any) -> int | None:
    """The last code cell that has outputs or an execution count: where the run stopped."""
    last = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.get("execution_count") or cell.get("outputs")):
            last = i
    return last


def strip_timing(nb: Any) -> None:
    """Removes per-run timestamps so regenerated notebooks only differ where outputs differ."""
    for cell in nb.cells:
        md = cell.get("metadata", {})
        md.pop("execution", None)


def write_atomic(nb: Any, path: str) -> None:
    """Writes nb to path in the form JupyterLab saves it (labform), atomically: a notebook opened
    and saved in JupyterLab stays byte for byte the same."""
    folder = os.path.dirname(os.path.abspath(path))
    content = labform.jupyterlab_bytes(nb)
    fd, tmp = tempfile.mkstemp(prefix=".nbcheck-", suffix=".ipynb", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def print_report(rep: NotebookReport, out: Any) -> None:
    status = "PASS" if rep.ok else "FAIL"
    how = "outputs checked, not executed" if rep.kernel == "" else f"kernel {rep.kernel}, {rep.seconds:.1f}s"
    print(f"{status} {rep.path} ({how})", file=out)
    for p in rep.problems:
        print(f"  notebook: {p}", file=out)
    for c in rep.cells:
        secs = f"{c.seconds:6.1f}s" if c.seconds is not None else "     - "
        tag = " [raises-exception]" if RAISES_TAG in c.tags else ""
        mark = "ok " if not c.problems else "BAD"
        print(f"  {mark} cell {c.index:2d} {secs}{tag}", file=out)
        for p in c.problems:
            print("      " + p.replace("\n", "\n      "), file=out)


def describe_data(nb: Any, data_dir: str | None = None) -> list[str]:
    """The lines that name what the data folder (data_dir, else $CIFARLAB_DATA) holds for each
    dataset the notebook's metadata says it reads (nbdata)."""
    return [s["line"] for s in nbdata.data_status(CHECKOUT, nbdata.datasets_of(nb), data_dir)]


def not_real(nb: Any) -> str | None:
    """Why nb cannot run on real data only: a dataset it reads that the data folder
    ($CIFARLAB_DATA) does not hold real; None when every one is real."""
    datasets = nbdata.datasets_of(nb)
    if not datasets:
        return 'its metadata names no datasets ("cifarlab": {"datasets": [...]}), so it cannot be said to run on real data'
    missing = [s["line"] for s in nbdata.data_status(CHECKOUT, datasets) if s["kind"] not in nbdata.REAL_KINDS]
    if not missing:
        return None
    folder = os.environ.get("NBCHECK_DATA_NAME") or os.environ.get("CIFARLAB_DATA") or "the default data folder"
    return (f"not run, nothing written: it reads {', '.join(datasets)}, and {folder} holds no real "
            f"{' or '.join(m.split(':')[0] for m in missing)} ({'; '.join(missing)}); point it at a folder with real data, "
            "or ask for synthetic data where there is none (notebooks/regenerate.sh --synthetic)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--kernel", default=os.environ.get("NBCHECK_KERNEL", DEFAULT_KERNEL),
                    help="kernelspec name (default: $NBCHECK_KERNEL or %(default)s)")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("NBCHECK_CELL_TIMEOUT", "600")),
                    help="per-cell timeout in seconds (default %(default)s)")
    ap.add_argument("--startup-timeout", type=int, default=120, help="kernel start-up timeout in seconds")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="fail when a whole notebook takes longer (default: notebook metadata, enforced only "
                         "with NBCHECK_ENFORCE_TIME=1)")
    grp = ap.add_mutually_exclusive_group()  # --write and --output-dir
    grp.add_argument("--write", action="store_true", help="write the executed notebook in place when it passes")
    grp.add_argument("--output-dir", help="write each executed notebook into this folder")
    ap.add_argument("--report", help="write a JSON report here")
    ap.add_argument("--check-only", action="store_true",
                    help="do not execute: check the outputs already in the notebook (e.g. one saved by the "
                         "browser test)")
    ap.add_argument("--form", action="store_true",
                    help="with --check-only: the file must also be in the form JupyterLab saves (labform.py), as a "
                         "committed notebook must, so that opening it changes nothing")
    ap.add_argument("--data-dir",
                    help="with --check-only: the outputs come from a run on this data folder (what it holds decides "
                         "the expectations that depend on the data), not from the data the notebook's metadata names")
    ap.add_argument("--require-real", action="store_true",
                    help="run only notebooks whose every dataset is real in the data folder ($CIFARLAB_DATA); refuse "
                         "the others before running anything (notebooks/regenerate.sh --data DIR)")
    ap.add_argument("--reformat", action="store_true",
                    help="do not execute or check: rewrite each notebook in the form JupyterLab saves, outputs unchanged")
    args = ap.parse_args(argv)
    if args.reformat:
        for path in args.notebooks:
            write_atomic(nbformat.read(path, as_version=nbformat.NO_CONVERT), path)
            print(f"nbcheck: {path}: written in the form JupyterLab saves")
        return 0

    reports: list[NotebookReport] = []
    for path in args.notebooks:
        if not os.path.isfile(path):
            print(f"nbcheck: {path}: no such notebook", file=sys.stderr)
            return 2
        try:
            if args.check_only:
                nb, run = nbformat.read(path, as_version=4), Run(0.0, [], None, {}, {})
                if not any(c.get("execution_count") for c in nb.cells if c.cell_type == "code"):
                    run.problems.append("no code cell was executed (no execution counts in the notebook)")
                kinds = nbdata.kinds_of(nb)
                if args.data_dir:
                    kinds = nbdata.kinds_from_lines(describe_data(nb, args.data_dir))
                form = args.form and labform.form_problem(path)
                if form:
                    run.problems.append(form)
            else:
                refused = args.require_real and not_real(nbformat.read(path, as_version=4))
                if refused:
                    rep = NotebookReport(path, args.kernel, 0.0, [], [refused])
                    reports.append(rep)
                    print_report(rep, sys.stdout)
                    continue
                log_dir = args.output_dir or tempfile.gettempdir()
                os.makedirs(log_dir, exist_ok=True)
                kernel_log = os.path.join(log_dir, os.path.basename(path).replace(".ipynb", ".kernel.log"))
                nb, run = run_notebook(path, args.kernel, args.timeout, args.startup_timeout, kernel_log)
                print(f"kernel log: {kernel_log}")
                portable(nb, CHECKOUT)
                kinds = None
                if nbdata.datasets_of(nb):
                    lines = describe_data(nb)
                    nb.metadata.setdefault(META_KEY, {})["data"] = lines
                    kinds = nbdata.kinds_from_lines(lines)
        except RuntimeError as err:  # the cifarlab command is missing or failed
            print(f"nbcheck: {path}: {err}", file=sys.stderr)
            return 2
        seconds, problems = run.seconds, run.problems
        cells = check_cells(nb, run.stopped_at, run.cell_seconds, run.cell_problems, CHECKOUT, kinds)
        budget = args.max_seconds
        enforce = budget is not None or os.environ.get("NBCHECK_ENFORCE_TIME") == "1"
        if budget is None:
            budget = nb.metadata.get(META_KEY, {}).get("max_seconds")
        if enforce and budget is not None and seconds > float(budget):
            problems.append(f"took {seconds:.1f}s, over the budget of {budget}s")
        rep = NotebookReport(path, "" if args.check_only else args.kernel, seconds, cells, problems)
        reports.append(rep)
        print_report(rep, sys.stdout)
        sys.stdout.flush()
        if args.output_dir:
            os.makedirs(args.output_dir, exist_ok=True)
            write_atomic(nb, os.path.join(args.output_dir, os.path.basename(path)))
        if args.write and rep.ok:
            strip_timing(nb)
            write_atomic(nb, path)
            print(f"  wrote outputs to {path}")

    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(
                [
                    {
                        "notebook": r.path,
                        "kernel": r.kernel,
                        "ok": r.ok,
                        "seconds": round(r.seconds, 2),
                        "problems": r.problems,
                        "cells": [
                            {"index": c.index, "tags": c.tags, "seconds": c.seconds, "problems": c.problems}
                            for c in r.cells
                        ],
                    }
                    for r in reports
                ],
                f,
                indent=2,
            )
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
