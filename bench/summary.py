#!/usr/bin/env python3
"""Medians and ratios of bench/run.sh's raw results (a TSV, one row per run); with --rows,
the same as results rows for bench/results.py (one JSON object per line).

Columns: bench mode round loop_s wall_s maxrss_kb stats_json
Prints, per benchmark, one row per mode: median loop time (first enqueue to clFinish, measured
by the program) and its ratio to native's median, the median and range of the per-round ratios
(each run divided by the native run of the same round: robust against slow drift of the
machine), median whole-process wall time and its ratio, peak RSS, and for capture modes the bytes
written versus the unique contents and the capture throughput.
"""
import json
import statistics
import sys

MODES = ["native", "off", "hash", "hash-hand", "full", "full-hand", "base-hash", "base-full"]
LABEL = {"native": "native", "off": "shim, capture off", "hash": "capture --buffers hash",
         "full": "capture --buffers full", "base-hash": "baseline shim, hash",
         "base-full": "baseline shim, full",
         "hash-hand": "hash, --at-finish hand", "full-hand": "full, --at-finish hand"}


def mb(n):
    return n / 1e6


def size(n):
    """Bytes in the unit that keeps them readable (decimal: 1 MB = 10^6 bytes)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def main(path):
    rows = {}
    timeouts = {}
    with open(path) as f:
        for line in f:
            bench, mode, rnd, loop_s, wall_s, rss, stats = line.rstrip("\n").split("\t")
            rows.setdefault(bench, {}).setdefault(mode, [])
            if loop_s == "timeout":
                timeouts.setdefault(bench, {}).setdefault(mode, []).append((int(rnd), wall_s))
                continue
            rows[bench][mode].append(
                (float(loop_s), float(wall_s), int(rss), json.loads(stats), int(rnd)))
    for bench, modes in rows.items():
        n = max(len(runs) for runs in modes.values())
        print(f"\n{bench}  (median of {n} alternating rounds)")
        print(f"  {'mode':24} {'loop s':>9} {'x native':>9} {'per-round x native':>22}"
              f" {'wall s':>8} {'x native':>9} {'max RSS MB':>11}")
        base = modes.get("native")
        base_loop = statistics.median(r[0] for r in base) if base else None
        base_wall = statistics.median(r[1] for r in base) if base else None
        for mode in MODES:
            runs = modes.get(mode)
            if not runs:
                continue
            loop = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            rss = statistics.median(r[2] for r in runs) / 1024
            rl = f"{loop / base_loop:.3f}" if base_loop else "-"
            rw = f"{wall / base_wall:.3f}" if base_wall else "-"
            native_by_round = {r[4]: r[0] for r in base} if base else {}
            paired = [r[0] / native_by_round[r[4]] for r in runs if native_by_round.get(r[4])]
            pr = (f"{statistics.median(paired):.3f} [{min(paired):.2f}-{max(paired):.2f}]"
                  if paired else "-")
            print(f"  {LABEL[mode]:24} {loop:9.3f} {rl:>9} {pr:>22} {wall:8.3f} {rw:>9}"
                  f" {rss:11.1f}")
        for mode, lost in timeouts.get(bench, {}).items():
            done = len(modes.get(mode, []))
            print(f"  {mode}: {len(lost)} of {len(lost) + done} runs TIMED OUT (killed after "
                  f"{lost[0][1]} s, rounds {', '.join(str(r) for r, _ in lost)}); medians use "
                  f"the {done} that finished")
        for mode in ("hash", "full"):
            runs = modes.get(mode)
            if not runs or not runs[-1][3]:
                continue
            s = runs[-1][3]
            wall = statistics.median(r[1] for r in runs)
            print(f"  {mode}: {s['launches']} launches captured; buffer contents seen "
                  f"{size(s['content_total'])} (unique {size(s['content_unique'])}); written: "
                  f"content blobs {size(s['content_on_disk'])}, other blobs "
                  f"{size(s['other_on_disk'])}, launch log {size(s['log_bytes'])}, "
                  f"total {size(s['written'])}")
            if mode == "full":
                verdict = "yes" if s["content_on_disk"] <= s["content_unique"] else "NO"
                print(f"  full: writes no more content bytes than the unique contents: {verdict}; "
                      f"{mb(s['content_total']) / wall:.0f} MB/s of contents captured, "
                      f"{mb(s['written']) / wall:.0f} MB/s written (per wall second)")


def rows(path, sizes):
    """The results rows (bench/results.py) of a run: per benchmark and mode measured against
    native in the same rounds, the ratio of medians and the range of per-round ratios.
    `sizes`: benchmark -> its number of launches. Baseline-shim modes are left out (they
    compare two builds, not the capture with native)."""
    runs = {}
    with open(path) as f:
        for line in f:
            bench, mode, rnd, loop_s, wall_s, rss, _ = line.rstrip("\n").split("\t")
            if loop_s != "timeout":
                runs.setdefault(bench, {}).setdefault(mode, []).append(
                    (float(loop_s), float(wall_s), int(rss), int(rnd)))
    for bench, modes in runs.items():
        base = modes.get("native")
        if not base:
            continue
        native = statistics.median(r[0] for r in base)
        native_wall = statistics.median(r[1] for r in base)
        by_round = {r[3]: r[0] for r in base}
        for mode in MODES:
            if mode == "native" or mode.startswith("base-") or not modes.get(mode):
                continue
            rs = modes[mode]
            loop = statistics.median(r[0] for r in rs)
            paired = [r[0] / by_round[r[3]] for r in rs if by_round.get(r[3])]
            row = {"benchmark": bench, "n": sizes.get(bench), "mode": mode,
                   "native_s": round(native, 3), "loop_s": round(loop, 3),
                   "ratio": round(loop / native, 2) if native else None,
                   "wall_ratio": round(statistics.median(r[1] for r in rs) / native_wall, 2)
                   if native_wall else None,
                   "rss_mb": round(statistics.median(r[2] for r in rs) / 1024, 1),
                   "rounds": len(rs)}
            if paired:
                row["round_min"] = round(min(paired), 2)
                row["round_max"] = round(max(paired), 2)
            print(json.dumps(row))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--rows":
        rows(sys.argv[2], {k: int(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])})
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: summary.py RESULTS.tsv | summary.py --rows RESULTS.tsv [BENCH=LAUNCHES...]")
