#!/usr/bin/env python3
"""Real-application patterns under every capture mode, side by side in one run.

Runs each application natively, under `cltrap run --capture off`, `--buffers hash` and
`--buffers full` (the modes alternate within each round, the order rotating, so machine drift
hits every mode alike), and prints per application the median whole-process wall time of each
mode as a ratio to native, plus, for `full`: the application's `admit` wait as a share of its
run, the time it waited for compaction (`spool.wait_ns`, back-pressure), the compaction's
throughput and the spool's peak size (from `cltrap run`'s compaction line), and the bytes
stored after compaction. The last round's `full` capture of each application is then replayed
in order (`cltrap replay`, REPLAY=0 to skip): launches replayed per second and the replay's
wall time as a ratio to the native run (target: <= 10x).

Usage: bench/spool.py                       (ROUNDS=3; binaries in target/bench, cltrap and
                                             libcltrap.so in target/release or $BENCH_BIN)
       APPS="stencil1d wavefront" bench/spool.py
       BENCH_PLATFORM=1 bench/spool.py      (OpenCL platform index or part of its name)
       BASELINE_SHIM=old/libcltrap.so MODES="native hash full base-hash base-full" bench/spool.py
                                            (base-hash, base-full: `hash`, `full` with another
                                             build of the shim, side by side in the same rounds)
       BENCH_SIZE=gpu bench/spool.py        (the issue's sizes: 20 000-step stencil over 4 MB,
                                             16 MB wavefront, 4 MB Gaussian elimination, FDTD
                                             over 3 x 4 MB; default `light`, for a shared CPU)
       APPS="clpeak:compute-sp clpeak:global-bandwidth" bench/spool.py
                                            (third-party programs: Debian's clpeak, one test
                                             each (`--compute-sp`, ...), on platform
                                             BENCH_PLATFORM (a number; default 0), device 0;
                                             `clpeak` on PATH or BENCH_CLPEAK; their rows go to
                                             bench/results/spool-apps-<machine>.json)
Build the C programs first: scripts/build-c.sh bench.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BENCH_BIN", os.path.join(ROOT, "target", "release"))
APPS_DIR = os.environ.get("BENCH_APPS", os.path.join(ROOT, "target", "bench"))
CLTRAP = os.path.join(BIN, "cltrap")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
MODES = os.environ.get("MODES", "native off hash full").split()
REPLAY = os.environ.get("REPLAY", "1") != "0"
REPLAY_TIMEOUT = float(os.environ.get("REPLAY_TIMEOUT", "300"))

SIZES = {
    # Application -> arguments. `light`: seconds on a shared CPU with PoCL.
    "light": {
        "stencil1d": ["1000", "262144"],
        "wavefront": ["1023"],
        "gauss": ["512"],
        "fdtd": ["200", "256", "256"],
        "buffer-heavy": ["50"],
    },
    # The sizes.
    "gpu": {
        "stencil1d": ["20000", "1048576"],
        "wavefront": ["2047"],
        "gauss": ["1024"],
        "fdtd": ["500", "1024", "1024"],
        "buffer-heavy": ["200"],
    },
}


# The host references of the new patterns take longer than the device's run: skipped unless
# BENCH_CHECK=1 (gauss and buffer-heavy always check).
os.environ.setdefault("BENCH_CHECK", "0")


def third_party(app):
    """The command line of third-party application `app` (`clpeak:TEST`), or None when `app`
    is one of this project's patterns. Exits when the program is not installed."""
    if not app.startswith("clpeak:"):
        return None
    exe = os.environ.get("BENCH_CLPEAK") or shutil.which("clpeak")
    if not exe:
        sys.exit("bench: clpeak is not installed (apt-get install clpeak, or set BENCH_CLPEAK)")
    platform = os.environ.get("BENCH_PLATFORM", "0")
    platform = platform if platform.isdigit() else "0"
    return [exe, "-p", platform, "-d", "0", "--" + app.removeprefix("clpeak:")]


def run(app, args, mode, cap, stats):
    exe = os.path.join(APPS_DIR, app)
    theirs = third_party(app)
    if theirs:
        exe, args = theirs[0], theirs[1:]
    if mode == "native":
        cmd = [exe] + args
    elif mode == "off":
        cmd = [CLTRAP, "run", "--out", cap, "--capture", "off", "--", exe] + args
    elif mode in ("base-hash", "base-full"):
        buffers = mode.removeprefix("base-")
        # With --stats like `hash` and `full`: timing the phases costs the shim a little, and
        # both builds pay it.
        cmd = [CLTRAP, "run", "--shim", os.environ["BASELINE_SHIM"], "--out", cap, "--buffers", buffers, "--stats", stats, "--", exe] + args
    else:
        cmd = [CLTRAP, "run", "--out", cap, "--buffers", mode, "--stats", stats, "--", exe] + args
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    # A third-party program says nothing of its results to check: its exit status must be 0.
    checked = theirs or "check=ok" in p.stdout or "check=skipped" in p.stdout
    if p.returncode != 0 or not checked:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return wall, p.stderr


def replay(cap):
    """Replays capture `cap` in order: (wall seconds, launches replayed, summary line)."""
    start = time.monotonic()
    try:
        p = subprocess.run([CLTRAP, "replay", cap], capture_output=True, text=True, timeout=REPLAY_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        done = sum(1 for line in out.splitlines() if line.startswith("launch "))
        return REPLAY_TIMEOUT, done, f"stopped after {REPLAY_TIMEOUT:.0f} s (REPLAY_TIMEOUT) with {done} launches replayed"
    wall = time.monotonic() - start
    lines = p.stdout.splitlines()
    launches = sum(1 for line in lines if line.startswith("launch "))
    summary = lines[-1] if lines else f"no output (exit {p.returncode}): {p.stderr.strip()[-200:]}"
    return wall, launches, summary


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total


def main():
    sizes = SIZES[os.environ.get("BENCH_SIZE", "light")]
    apps = os.environ.get("APPS", " ".join(sizes)).split()
    work = tempfile.mkdtemp(prefix="cltrap-spool-bench-", dir=os.environ.get("BENCH_TMP"))
    walls = {(a, m): [] for a in apps for m in MODES}
    extra = {a: [] for a in apps}
    replays = {}
    try:
        for r in range(ROUNDS):
            for i in range(len(MODES)):
                mode = MODES[(i + r) % len(MODES)]
                for app in apps:
                    cap = os.path.join(work, f"cap-{app}-{mode}")
                    stats = cap + ".stats.json"
                    shutil.rmtree(cap, ignore_errors=True)
                    wall, err = run(app, sizes.get(app, []), mode, cap, stats)
                    walls[(app, mode)].append(wall)
                    print(f"  round {r + 1} {app:24} {mode:6} {wall:8.3f} s", file=sys.stderr)
                    if mode == "full":
                        s = json.load(open(stats))
                        m = re.search(
                            r"compacted the spool of .*?: (\d+) content\(s\), ([\d.]+) MB spooled into ([\d.]+) MB stored, ([\d.]+) s \((\d+) MB/s\), spool peak ([\d.]+) MB",
                            err,
                        )
                        extra[app].append(
                            {
                                "wall": wall,
                                "admit_s": s["time"]["admit"]["ns"] / 1e9,
                                "store_s": s["time"]["store"]["ns"] / 1e9,
                                "wait_s": s.get("spool", {}).get("wait_ns", 0) / 1e9,
                                "spooled_mb": float(m.group(2)) if m else 0.0,
                                "mb_s": float(m.group(5)) if m else 0.0,
                                "compact_s": float(m.group(4)) if m else 0.0,
                                "peak_mb": max(
                                    float(m.group(6)) if m else 0.0,
                                    s.get("spool", {}).get("peak_bytes", 0) / 2**20,
                                ),
                                "stored_mb": du(os.path.join(cap, "blobs")) / 2**20,
                            }
                        )
                    if mode == "full" and REPLAY and r == ROUNDS - 1:
                        replays[app] = replay(cap)
                        print(f"  replay {app}: {replays[app][0]:.3f} s, {replays[app][2]}", file=sys.stderr)
                    shutil.rmtree(cap, ignore_errors=True)
                    if os.path.exists(stats):
                        os.remove(stats)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in walls.items() if v}
    head = f"{'application':24} {'native s':>9}" + "".join(f" {m:>6}" for m in MODES if m != "native")
    head += f" {'admit%':>7} {'spoolwait s':>11} {'store s':>8} {'spooled MB':>10} {'compact MB/s':>12} {'peak MB':>8} {'stored MB':>9}"
    head += f" {'replay s':>9} {'launch/s':>9} {'replay/native':>13}"
    print(head)
    for app in apps:
        nat = med.get((app, "native"))
        line = f"{app:24} {nat:9.3f}" if nat else f"{app:24} {'-':>9}"
        for m in MODES:
            if m == "native":
                continue
            v = med.get((app, m))
            line += f" {v / nat:5.2f}x" if v and nat else f" {'-':>6}"
        if extra[app]:
            e = min(extra[app], key=lambda x: abs(x["wall"] - med[(app, "full")]))
            line += f" {100 * e['admit_s'] / e['wall']:6.1f}% {e['wait_s']:11.3f} {e['store_s']:8.3f} {e['spooled_mb']:10.1f} {e['mb_s']:12.0f} {e['peak_mb']:8.1f} {e['stored_mb']:9.1f}"
        if app in replays and nat:
            rw, n, _ = replays[app]
            line += f" {rw:9.3f} {n / rw:9.0f} {rw / nat:12.1f}x"
        print(line)
    for app, (_, _, summary) in replays.items():
        print(f"replay {app}: {summary}")
    ours = [a for a in apps if not third_party(a)]
    theirs = [a for a in apps if third_party(a)]
    if ours:
        write_results("spool", ours, med, extra, replays)
    if theirs:
        write_results("spool-apps", theirs, med, extra, replays)


def write_results(bench, apps, med, extra, replays):
    """Hands the table to bench/results.py (bench/results/BENCH-<machine>.json: `spool` for
    this project's patterns, `spool-apps` for third-party programs), from which
    bench/report.py renders BENCHMARKS.md."""
    rows = []
    for app in apps:
        nat = med.get((app, "native"))
        if not nat:
            continue
        row = {"app": app, "native_s": round(nat, 3)}
        for m in MODES:
            if m != "native" and med.get((app, m)):
                row[m.replace("-", "_")] = round(med[(app, m)] / nat, 2)
        if extra[app]:
            e = min(extra[app], key=lambda x: abs(x["wall"] - med[(app, "full")]))
            row.update(
                admit_pct=round(100 * e["admit_s"] / e["wall"], 1),
                spooled_mb=round(e["spooled_mb"]),
                compact_mb_s=round(e["mb_s"]),
                spool_peak_mb=round(e["peak_mb"]),
                stored_mb=round(e["stored_mb"], 1),
            )
        if app in replays:
            rw, n, summary = replays[app]
            row.update(
                replay_s=round(rw, 3),
                replay_launches_per_s=round(n / rw) if rw else None,
                replay_x=round(rw / nat, 1),
                replay_summary=summary,
            )
        rows.append(json.dumps(row))
    here = os.path.dirname(os.path.abspath(__file__))
    size = os.environ.get("BENCH_SIZE", "light")
    cmd = f"BENCH_SIZE={size} ROUNDS={ROUNDS} bench/spool.py"
    if os.environ.get("APPS"):
        cmd = f'APPS="{" ".join(apps)}" ' + cmd
    platform = ["--platform", os.environ["BENCH_PLATFORM"]] if os.environ.get("BENCH_PLATFORM") else []
    subprocess.run(
        [sys.executable, os.path.join(here, "results.py"), "put", bench, "--key", "app",
         "--command", cmd, *platform],
        input="\n".join(rows) + "\n",
        text=True,
        check=False,
    )


if __name__ == "__main__":
    main()
