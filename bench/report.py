#!/usr/bin/env python3
"""Regenerates BENCHMARKS.md (and its plot) from the results files in bench/results/.

Usage: bench/report.py            writes BENCHMARKS.md and bench/results/capture-overhead.svg
       bench/report.py --check    exits 1 when BENCHMARKS.md is not what the results give
       BENCH_RESULTS_DIR=DIR BENCH_REPORT=FILE bench/report.py   (a trial run's results, and
                                  the page written from them, elsewhere; the plot goes to DIR)

The prose of each section is in bench/BENCHMARKS.template.md; its markers are replaced:
`<!-- results: NAME -->` by one table per machine from bench/results/NAME-*.json,
`<!-- plot: capture -->` by the capture-overhead bar chart (SVG, drawn with matplotlib), and
`<!-- history -->` by the headline figures of earlier builds (bench/results/history.json)
followed by today's. The results files are written by the bench scripts through
bench/results.py; nothing here is typed by hand.
"""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import results  # noqa: E402

RESULTS = results.results_dir()
TEMPLATE = os.path.join(HERE, "BENCHMARKS.template.md")
OUTPUT = os.environ.get("BENCH_REPORT") or os.path.join(ROOT, "BENCHMARKS.md")
PLOT = os.path.join(RESULTS, "capture-overhead.svg")

MACHINE_ORDER = ["nvidia-h200-x4", "nvidia-h200-x2", "nvidia-h200", "nvidia-h100", "pocl-16core", "pocl-2core"]
MODE_ORDER = ["off", "hash", "full", "hash-hand", "full-hand"]
MODE_HEADER = {"off": "`--capture off`", "hash": "`hash`", "full": "`full`",
               "hash-hand": "`hash`, `--at-finish hand`", "full-hand": "`full`, `--at-finish hand`"}
APP_ORDER = ["launch-storm", "finish-small", "finish-large", "buffer-heavy"]

# Per benchmark: the columns of its table, (field, header).
COLUMNS = {
    "store": [("benchmark", "benchmark"), ("native_s", "native s"), ("full_s", "`full` s"),
              ("base_s", "base s"), ("vs_base", "`full` / base"), ("on_disk", "on disk"),
              ("base_on_disk", "base on disk"), ("disk_vs_changed", "on disk / changed"),
              ("log_b_per_launch", "log B/launch"), ("replayable", "replayable"),
              ("replayed", "replayed")],
    "spool": [("app", "application"), ("native_s", "native s"), ("off", "off"),
              ("hash", "`hash`"), ("base_hash", "`hash`, baseline shim (BASELINE_SHIM)"),
              ("full", "`full`"), ("base_full", "`full`, baseline shim (BASELINE_SHIM)"),
              ("admit_pct", "admit %"), ("spooled_mb", "spooled MB"),
              ("compact_mb_s", "compaction MB/s"), ("spool_peak_mb", "spool peak MB"),
              ("stored_mb", "stored MB"), ("replay_s", "replay s"),
              ("replay_launches_per_s", "replayed launches/s"), ("replay_x", "replay / native")],
    # Third-party programs (`APPS="clpeak:…" bench/spool.py`), the same columns.
    "spool-apps": None,
    "replay": [("gauss_n", "gauss N"), ("launches", "launches"), ("native_s", "native s"),
               ("capture_s", "capture s"), ("stored_mb", "stored MB"), ("replay_s", "replay s"),
               ("launches_per_s", "launches/s"), ("ratio", "replay / native")],
    "check": [("kernel", "kernel"), ("items", "items"), ("plain_ms", "plain ms"),
              ("instr_ms", "instr ms"), ("instr_ratio", "instr / plain"), ("replay_s", "replay s"),
              ("native_s", "check s"), ("oclgrind_s", "Oclgrind s"), ("ocl_ratio", "Oclgrind / check"),
              ("native_finds", "findings"), ("ocl_finds", "Oclgrind findings"), ("agree", "agree")],
    "analyses": [("measure", "measure"), ("value", "value")],
    "fuzz": [("kernel", "suite/kernel"), ("compile_ms", "compile ms"),
             ("sat_excl_ms", "saturate ms"), ("sat_incl_ms", "incl. compile ms"),
             ("execs", "execs"), ("exec_per_s", "exec/s"), ("solve_ms", "solve ms"),
             ("solved", "solved"), ("ms_per_branch_mean", "ms/branch mean"),
             ("ms_per_branch_max", "ms/branch max"), ("findings", "findings")],
    "fuzz-reduced": [("campaign", "campaign"), ("reduced_eps", "reduced exec/s"),
                     ("full_eps", "whole exec/s"), ("ratio", "ratio"), ("execs_r", "execs r"),
                     ("execs_f", "execs w"), ("confirm_runs", "confirming runs"),
                     ("confirm_s", "confirm s"), ("builds_r", "builds r"), ("builds_f", "builds w"),
                     ("findings_r", "findings r"), ("findings_f", "findings w"),
                     ("slots_r", "slots r"), ("slots_f", "slots w")],
    "campaign": [("analysis", "analysis"), ("launches", "launches"), ("devices", "devices"),
                 ("workers", "workers"), ("wall_s", "wall s"), ("speedup", "speed-up"),
                 ("units_s", "units s"), ("units_speedup", "units speed-up"),
                 ("idle", "workers idle"), ("same", "same report")],
    "mutate": [("kernel", "kernel"), ("mutants", "mutants"),
               ("schema_eval_rate", "schema eval mutants/s"),
               ("per_mutant_eval_rate", "per-mutant eval mutants/s"), ("eval_ratio", "eval phase ×"),
               ("schema_rate", "schema end-to-end mutants/s"),
               ("per_mutant_rate", "per-mutant end-to-end mutants/s"),
               ("end_to_end_ratio", "end-to-end ×")],
    "corpus": [("project", "project"), ("kernels", "kernels"), ("built", "built"), ("ran", "ran"),
               ("cases", "cases"), ("sides", "sides covered"), ("dead", "dead"),
               ("unsupported", "unsupported"), ("open", "open"),
               ("full_mean", "full / mean coverage"), ("with_sides", "kernels with sides: full / mean"),
               ("findings", "findings"), ("median_total_s", "median / total s"),
               ("crash_panic_hang", "crash, panic, hang"), ("fuzz_eq_cover", "fuzz == cover"),
               ("mutation", "mutation score (suites)")],
    "parsers": [("target", "target"), ("ran", "ran"), ("execs", "execs"), ("corpus", "queue"),
                ("edges", "edges"), ("crashes", "crashes"), ("hangs", "hangs")],
    "memory": [("test", "test"), ("mode", "mode"), ("cycles", "cycles"),
               ("rss_kb", "VmRSS kB"), ("growth", "growth"), ("gpu_mib", "GPU MiB of the process"),
               ("destroyed", "contexts destroyed"), ("exit", "exit")],
    "digest-threshold": [("buffer", "buffer"), ("read_back_s", "read back, loop s"),
                         ("digested_s", "digested on the device, loop s")],
    "read-storm": [("variant", "variant"), ("loop_s", "loop s")],
}


COLUMNS["spool-apps"] = COLUMNS["spool"]


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        # As recorded: the shortest spelling of the value, with at least one decimal.
        s = f"{v:.6g}"
        return s if ("." in s or "e" in s) else s + ".0"
    if isinstance(v, int):
        return f"{v:,}".replace(",", " ")
    return str(v).replace("|", "\\|")


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def load_all():
    docs = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        if os.path.basename(path) == "history.json":
            continue
        doc = results.load(path)
        docs.setdefault(doc["benchmark"], []).append(doc)
    for bench in docs:
        docs[bench].sort(key=lambda d: (MACHINE_ORDER.index(d["machine"])
                                        if d["machine"] in MACHINE_ORDER else 99, d["machine"]))
    return docs


def when(row, doc):
    """`commit`, date of a row (the file's unless the row was measured in another run)."""
    commit = row.get("commit", doc.get("commit"))
    date = row.get("date", doc.get("date"))
    c = f"`{commit}`" if commit else "commit not recorded"
    return f"{c}, {date}" if date else f"{c}, date not recorded"


def caption(doc):
    return (f"**{doc['machine']}** — {doc['machine_desc']}. Measured {when({}, doc)}: "
            f"`{doc.get('command') or 'see above'}`")


def commands_of_other_runs(doc):
    seen = []
    for r in doc["rows"]:
        cmd = r.get("command")
        if cmd and cmd != doc.get("command") and cmd not in seen:
            seen.append(cmd)
    return seen


def render_capture(doc):
    rows = doc["rows"]
    apps = sorted({r["benchmark"] for r in rows},
                  key=lambda a: APP_ORDER.index(a) if a in APP_ORDER else 99)
    modes = [m for m in MODE_ORDER if any(r["mode"] == m for r in rows)]
    multi = len({(r.get("commit", doc["commit"]), r.get("date", doc["date"])) for r in rows}) > 1
    headers = ["application (launches)"] + [MODE_HEADER[m] for m in modes]
    if multi:
        headers.append("measured")
    body = []
    for app in apps:
        cells = [f"{app} ({fmt(next(r['n'] for r in rows if r['benchmark'] == app))})"]
        runs = []
        for m in modes:
            r = next((r for r in rows if r["benchmark"] == app and r["mode"] == m), None)
            if r is None:
                cells.append("")
                continue
            cell = f"{fmt(r['ratio'])}×"
            if r.get("round_min") is not None:
                cell += f" [{fmt(r['round_min'])}–{fmt(r['round_max'])}]"
            cells.append(cell)
            w = when(r, doc)
            if w not in runs:
                runs.append(w)
        if multi:
            cells.append("; ".join(runs))
        body.append(cells)
    return table(headers, body)


def render_generic(bench, doc):
    cols = [(f, h) for f, h in COLUMNS[bench] if any(r.get(f) is not None for r in doc["rows"])]
    multi = len({(r.get("commit", doc["commit"]), r.get("date", doc["date"]))
                 for r in doc["rows"]}) > 1
    headers = [h for _, h in cols] + (["measured"] if multi else [])
    body = [[fmt(r.get(f)) for f, _ in cols] + ([when(r, doc)] if multi else [])
            for r in doc["rows"]]
    return table(headers, body)


def render_results(bench, docs):
    parts = []
    for doc in docs.get(bench, []):
        body = render_capture(doc) if bench == "capture" else render_generic(bench, doc)
        part = caption(doc) + "\n"
        others = commands_of_other_runs(doc)
        if others:
            part += "\nRows of other runs: " + "; ".join(f"`{c}`" for c in others) + "\n"
        part += "\n" + body
        if doc.get("note"):
            part += "\n\n" + doc["note"]
        parts.append(part)
    if not parts:
        return f"*(no results in bench/results/{bench}-*.json)*"
    return "\n\n".join(parts)


def render_history(docs):
    try:
        history = results.load(os.path.join(RESULTS, "history.json"))
    except FileNotFoundError:
        history = []
    entries = [dict(h, current=False) for h in history]
    for bench, ds in docs.items():
        for doc in ds:
            for label, value, date, commit in results.headlines(bench, doc):
                entries.append(dict(benchmark=bench, machine=doc["machine"], date=date,
                                    commit=commit, headline=label, value=value, current=True))
    out = []
    for bench in results.HEADLINES:
        es = [e for e in entries if e["benchmark"] == bench]
        if not es:
            continue
        labels = [label for label in results.HEADLINES[bench]
                  if any(e["headline"] == label for e in es)]
        keys = []
        for e in sorted(es, key=lambda e: (MACHINE_ORDER.index(e["machine"])
                                           if e["machine"] in MACHINE_ORDER else 99,
                                           e["date"] or "", e["current"])):
            k = (e["machine"], e["date"], e["commit"])
            if k not in keys:
                keys.append(k)
        body = []
        for machine, date, commit in keys:
            cells = [machine, date or "not recorded", f"`{commit}`" if commit else "not recorded"]
            current = False
            for label in labels:
                e = next((e for e in es if (e["machine"], e["date"], e["commit"]) ==
                          (machine, date, commit) and e["headline"] == label), None)
                cells.append(fmt(e["value"]) if e else "")
                current = current or (e is not None and e["current"])
            if current:
                cells[2] += " (current)"
            body.append(cells)
        out.append(f"**{bench}**\n\n" + table(["machine", "date", "commit"] + labels, body))
    return "\n\n".join(out)


def plot_capture(docs):
    """The capture-overhead bar chart: ratio to native per application, mode and machine."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "cltrap-bench"
    import matplotlib.pyplot as plt

    series = []
    for doc in docs.get("capture", []):
        for mode in ("hash", "full"):
            vals = {r["benchmark"]: r["ratio"] for r in doc["rows"] if r["mode"] == mode}
            if vals:
                series.append((f"{doc['machine']} {mode}", vals))
    apps = [a for a in APP_ORDER if any(a in v for _, v in series)]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / max(len(series), 1)
    for i, (label, vals) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, a in enumerate(apps) if a in vals]
        ys = [vals[a] for a in apps if a in vals]
        bars = ax.bar(xs, ys, width, label=label)
        ax.bar_label(bars, labels=[f"{y:.3g}" for y in ys], fontsize=6, padding=1)
    ax.set_yscale("log")
    ticks = [1, 2, 5, 10, 20, 50, 100]
    top = max((max(v.values()) for _, v in series), default=1)
    ax.set_yticks([t for t in ticks if t <= top * 1.5], [str(t) for t in ticks if t <= top * 1.5])
    ax.minorticks_off()
    ax.set_xticks(range(len(apps)), apps)
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_ylabel("loop time / native (log scale)")
    ax.set_title("Capture overhead per application and mode (bench/run.sh)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(PLOT, format="svg", metadata={"Date": None, "Creator": "bench/report.py"})
    plt.close(fig)


def render(docs):
    with open(TEMPLATE) as f:
        text = f.read()
    text = re.sub(r"<!-- results: ([\w-]+) -->", lambda m: render_results(m.group(1), docs), text)
    text = text.replace("<!-- plot: capture -->",
                        f"![capture overhead per application and mode]"
                        f"({os.path.relpath(PLOT, os.path.dirname(OUTPUT))})")
    text = text.replace("<!-- history -->", render_history(docs))
    return ("<!-- Generated by bench/report.py from bench/results/*.json and "
            "bench/BENCHMARKS.template.md: edit those, then run bench/report.py. -->\n" + text)


def need_matplotlib():
    """Makes sure matplotlib imports: Debian's python3-matplotlib lives in the system Python,
    which a pyenv or venv `python3` first on PATH does not see, so re-run under it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system):
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
        sys.exit("bench/report.py: matplotlib is missing (apt-get install python3-matplotlib)")


def main():
    if "--check" not in sys.argv[1:]:
        need_matplotlib()
    docs = load_all()
    text = render(docs)
    if "--check" in sys.argv[1:]:
        with open(OUTPUT) as f:
            if f.read() != text:
                sys.exit("BENCHMARKS.md is not what bench/results/ gives: run bench/report.py")
        return
    plot_capture(docs)
    with open(OUTPUT, "w") as f:
        f.write(text)
    print(f"wrote {OUTPUT} and {PLOT}")


if __name__ == "__main__":
    main()
