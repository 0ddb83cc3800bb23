#!/usr/bin/env python3
"""Machine-readable benchmark results: the files BENCHMARKS.md is generated from.

Every bench script ends by handing its rows to this helper, so updating BENCHMARKS.md is
`bench/report.py` after a run, never typing figures.

One file per benchmark and machine, `bench/results/<benchmark>-<machine>.json`:

    {"benchmark": "capture", "machine": "nvidia-h200",
     "machine_desc": "NVIDIA H200; 16 cores, Intel Xeon ...; platform NVIDIA CUDA",
     "date": "2026-11-28", "commit": "3f6b161", "command": "ROUNDS=3 ... bench/run.sh",
     "key": ["benchmark", "mode"], "note": "optional sentence shown under the table",
     "rows": [{"benchmark": "launch-storm", "mode": "hash", "ratio": 2.85, ...}, ...]}

A row may carry its own "date", "commit" and "command" when it was measured in another run
than the file's (the file's are those of its newest run). `put` replaces the file's rows, or
with `--merge` only the rows with the same `key` fields (a run of a subset of the benchmark:
the others stay, with their own date and commit); when a replaced row fed a headline figure
(`HEADLINES`), that figure moves to `bench/results/history.json`, which BENCHMARKS.md shows as
the history of each benchmark.

Usage:
    results.py machine [PLATFORM]        the machine name for this host and OpenCL platform
                                          (index or part of its name; BENCH_MACHINE overrides)
    results.py put BENCHMARK --key F1,F2 [--merge] [--platform P] [--command CMD] [--note TEXT] < ROWS
                                          ROWS: one JSON object per line; writes the results
                                          file (BENCH_RESULTS_DIR: another folder than
                                          bench/results, e.g. for a trial run)
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def results_dir():
    """Where results files live: bench/results, or BENCH_RESULTS_DIR for a trial run."""
    return os.environ.get("BENCH_RESULTS_DIR") or os.path.join(HERE, "results")


def _row(rows, **match):
    for r in rows:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def _ratio(rows, **match):
    r = _row(rows, **match)
    return (r.get("ratio"), r) if r and r.get("ratio") is not None else (None, None)


def _worst(rows, field):
    best = None
    for r in rows:
        v = r.get(field)
        if isinstance(v, (int, float)) and (best is None or v > best.get(field)):
            best = r
    return (best[field], best) if best else (None, None)


def _field(rows, field, **match):
    r = _row(rows, **match)
    return (r.get(field), r) if r and r.get(field) is not None else (None, None)


# The figures each benchmark's history keeps: label -> function(rows) -> (value, row).
HEADLINES = {
    "capture": {
        "launch-storm hash ×": lambda rows: _ratio(rows, benchmark="launch-storm", mode="hash"),
        "finish-small hash ×": lambda rows: _ratio(rows, benchmark="finish-small", mode="hash"),
        "buffer-heavy full ×": lambda rows: _ratio(rows, benchmark="buffer-heavy", mode="full"),
    },
    "store": {
        "partial-update full / base ×": lambda rows: _field(rows, "vs_base", benchmark="partial-update"),
    },
    "replay": {
        "replay / native ×": lambda rows: _worst(rows, "ratio"),
    },
    "check": {
        "worst instrumented / plain ×": lambda rows: _worst(rows, "instr_ratio"),
    },
    "mutate": {
        "matmul_tiled eval-phase ×": lambda rows: _field(rows, "eval_ratio", kernel="matmul_tiled"),
        "reduce_sum eval-phase ×": lambda rows: _field(rows, "eval_ratio", kernel="reduce_sum"),
    },
    "corpus": {
        "mean mutation score": lambda rows: _field(rows, "mutation", project="total"),
    },
    "memory": {
        "growth over 200 contexts": lambda rows: _field(rows, "growth", test="contexts.c", cycles=200, mode="hash"),
    },
}


def headlines(benchmark, doc):
    """The headline figures of one results file: (label, value, date, commit) each."""
    out = []
    for label, fn in HEADLINES.get(benchmark, {}).items():
        value, row = fn(doc.get("rows", []))
        if value is None:
            continue
        out.append((label, value, row.get("date", doc.get("date")),
                    row.get("commit", doc.get("commit"))))
    return out


def _clinfo_platforms():
    """[(name, version, [device names])] in the order the ICD loader lists them."""
    def run(*args):
        try:
            return subprocess.run(["clinfo", *args], capture_output=True, text=True,
                                  timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return ""
    plats = []
    for line in run("-l").splitlines():
        m = re.match(r"^Platform #\d+: (.*)$", line)
        if m:
            plats.append([m.group(1).strip(), "", []])
            continue
        m = re.match(r"^\s+.-- Device #\d+: (.*)$", line)
        if m and plats:
            plats[-1][2].append(m.group(1).strip())
    versions = re.findall(r"(?m)^  Platform Version\s+(.*)$", run())
    for plat, version in zip(plats, versions):
        plat[1] = version.strip()
    return plats


def _cpu():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}"


def machine(platform=None):
    """(name, description) of this host and OpenCL platform, e.g. ("nvidia-h200", "...")."""
    plats = _clinfo_platforms()
    chosen = None
    hint = platform if platform is not None else os.environ.get("BENCH_PLATFORM", "0")
    if plats:
        if str(hint).isdigit() and int(hint) < len(plats):
            chosen = plats[int(hint)]
        else:
            chosen = next((p for p in plats if str(hint).lower() in p[0].lower()), plats[0])
    name, desc = "unknown", _cpu()
    if chosen:
        pname, version, devices = chosen
        device = devices[0] if devices else pname
        desc = f"{device}; {_cpu()}; {pname} ({version.split('  ')[0]})"
        m = re.search(r"\b([A-Z]\d{2,4})\b", device)
        if "nvidia" in (pname + device).lower():
            name = "nvidia-" + (m.group(1).lower() if m else re.sub(r"\W+", "-", device.lower()))
        elif "portable computing language" in pname.lower():
            name = f"pocl-{os.cpu_count()}core"
        else:
            name = re.sub(r"\W+", "-", pname.lower()).strip("-")
    return os.environ.get("BENCH_MACHINE") or name, desc


def _git_commit():
    # BENCH_COMMIT: the commit of binaries measured where the checkout's git is not that
    # commit (the device machine's copy of the working tree).
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def load(path):
    with open(path) as f:
        return json.load(f)


def dump(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def put(benchmark, key, rows, platform=None, command=None, note=None, merge=False):
    """Writes `rows` as the benchmark's results for this machine; returns the file's path.

    With `merge`, rows of earlier runs whose key the new rows do not have stay (a run of a
    subset of the benchmark); otherwise the new rows replace the file's."""
    name, desc = machine(platform)
    folder = results_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{benchmark}-{name}.json")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    commit = _git_commit()
    old = load(path) if os.path.exists(path) else {"rows": []}
    before = headlines(benchmark, old)
    stamped = []
    for r in rows:
        r = {k: v for k, v in r.items() if k not in ("date", "commit", "command")}
        stamped.append(r)
    keyof = lambda r: tuple(r.get(k) for k in key)
    new_keys = {keyof(r) for r in stamped}
    kept = [r for r in old.get("rows", []) if merge and keyof(r) not in new_keys]
    # Rows kept from an earlier run keep that run's date, commit and command.
    for r in kept:
        for field in ("date", "commit", "command"):
            r.setdefault(field, old.get(field))
    doc = {"benchmark": benchmark, "machine": name, "machine_desc": desc, "date": date,
           "commit": commit, "command": command, "key": key}
    if note:
        doc["note"] = note
    doc["rows"] = kept + stamped
    after = {label: (value, c) for label, value, _, c in headlines(benchmark, doc)}
    hist_path = os.path.join(folder, "history.json")
    history = load(hist_path) if os.path.exists(hist_path) else []
    for label, value, d, c in before:
        if label in after and after[label] != (value, c):
            history.append({"benchmark": benchmark, "machine": name, "date": d, "commit": c,
                            "headline": label, "value": value})
    dump(path, doc)
    if history:
        dump(hist_path, history)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("machine")
    m.add_argument("platform", nargs="?")
    p = sub.add_parser("put")
    p.add_argument("benchmark")
    p.add_argument("--key", required=True)
    p.add_argument("--platform")
    p.add_argument("--command")
    p.add_argument("--note")
    p.add_argument("--merge", action="store_true",
                   help="keep the rows of earlier runs that this run did not measure")
    a = ap.parse_args()
    if a.cmd == "machine":
        name, desc = machine(a.platform)
        print(f"{name}\t{desc}")
        return
    rows = [json.loads(line) for line in sys.stdin if line.strip()]
    if not rows:
        print(f"results: no rows for {a.benchmark}; results file left as it was", file=sys.stderr)
        return
    path = put(a.benchmark, a.key.split(","), rows, a.platform, a.command, a.note, a.merge)
    shown = os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path
    print(f"results: {shown} ({len(rows)} rows); bench/report.py renders BENCHMARKS.md")


if __name__ == "__main__":
    main()
