#!/usr/bin/env bash
# Capture storage benchmark: what a `full` capture costs on disk and in time for the
# patterns that fill the disk budget fastest, measured side by side with a baseline build
# in one run. Modes, alternating within each round (the order
# rotates every round, like bench/run.sh):
#   native   the program alone
#   base     `cltrap run --buffers full` with the baseline build (BASE_CLTRAP: a `cltrap`
#            with its libcltrap.so next to it; the mode is left out when unset)
#   full     `cltrap run --buffers full` with this build
# Benchmarks: partial-update (a tenth of a 16 MB buffer changes per launch), gauss (Rodinia's
# Gaussian elimination, 2 046 launches over a 4 MB matrix), launch-storm (the launch log).
# Prints per benchmark and mode: median loop and wall time and their ratio to native, bytes on
# disk (contents, launch log, total), bytes the launches changed (partial-update), and how
# many launches `cltrap list` marks replayable.
#
# Usage: BASE_CLTRAP=/path/to/old/cltrap bench/store.sh   (BENCH_NO_BUILD=1: use target/bench/* as they are)
#        ROUNDS=3 STORM_N=100000 PARTIAL_N=100 GAUSS_N=1024 BENCHES="partial-update gauss" ...
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-3}"
STORM_N="${STORM_N:-100000}"
PARTIAL_N="${PARTIAL_N:-100}"
GAUSS_N="${GAUSS_N:-1024}"
read -r -a BENCHES <<<"${BENCHES:-partial-update gauss launch-storm}"
MODES=(native full)
[ -n "${BASE_CLTRAP:-}" ] && MODES=(native base full)

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
[ -n "${BENCH_NO_BUILD:-}" ] || scripts/build-c.sh bench

OUTDIR=target/bench
RESULTS="$OUTDIR/store.tsv"
mkdir -p "$OUTDIR"
: >"$RESULTS"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "PoCL:    $(dpkg-query -W -f='${Version}' pocl-opencl-icd 2>/dev/null || echo unknown)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')   commit: $(git rev-parse --short HEAD)   rounds: $ROUNDS   base: ${BASE_CLTRAP:-none}"

run_one() { # run_one BENCH MODE ROUND BINARY ARGS...
    local bench="$1" mode="$2" round="$3"
    shift 3
    local cap="$OUTDIR/store-$bench-$mode" tfile out stats="{}" replayable=-1
    tfile="$(mktemp)"
    rm -rf "$cap"
    local cmd
    case "$mode" in
    native) cmd=("$@") ;;
    base) cmd=("$BASE_CLTRAP" run --out "$cap" --buffers full -- "$@") ;;
    full) cmd=("$CLTRAP" run --out "$cap" --buffers full -- "$@") ;;
    esac
    out="$(python3 bench/measure.py "$tfile" "${cmd[@]}" 2>&1)" || {
        echo "bench: '${cmd[*]}' failed:" >&2
        printf '%s\n' "$out" >&2
        exit 1
    }
    local loop_s check changed wall_s rss
    loop_s="$(sed -n 's/.*loop_s=\([0-9.]*\).*/\1/p' <<<"$out" | head -n1)"
    check="$(sed -n 's/.*check=\([A-Za-z]*\).*/\1/p' <<<"$out" | head -n1)"
    changed="$(sed -n 's/.*changed_bytes=\([0-9]*\).*/\1/p' <<<"$out" | head -n1)"
    if [ -z "$loop_s" ] || [ "$check" != ok ]; then
        echo "bench: $bench under $mode did not report a correct result:" >&2
        printf '%s\n' "$out" >&2
        exit 1
    fi
    read -r wall_s rss <"$tfile"
    rm -f "$tfile"
    if [ "$mode" != native ]; then
        stats="$(python3 bench/capstats.py "$cap")"
        # Launches `cltrap list` does not mark (!) (this build's reader, also for base; not
        # its closing "N of M launch(es) can be replayed" line).
        replayable="$("$CLTRAP" list "$cap" | awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $2 != "of" && !/\(!\)/ { n++ } END { print n + 0 }')"
    fi
    rm -rf "$cap"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bench" "$mode" "$round" "$loop_s" "$wall_s" \
        "${changed:-0}" "$replayable" "$stats" "$rss" >>"$RESULTS"
    printf '  round %s %-15s %-6s loop %8ss  wall %7ss\n' "$round" "$bench" "$mode" "$loop_s" "$wall_s"
}

for ((r = 1; r <= ROUNDS; r++)); do
    n="${#MODES[@]}"
    for ((i = 0; i < n; i++)); do
        mode="${MODES[$(((i + r - 1) % n))]}"
        for bench in "${BENCHES[@]}"; do
            case "$bench" in
            partial-update) run_one "$bench" "$mode" "$r" target/bench/partial-update "$PARTIAL_N" ;;
            gauss) run_one "$bench" "$mode" "$r" target/bench/gauss "$GAUSS_N" ;;
            launch-storm) run_one "$bench" "$mode" "$r" target/bench/launch-storm "$STORM_N" ;;
            *) echo "bench: unknown benchmark $bench" >&2; exit 2 ;;
            esac
        done
    done
done

python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    bench, mode, rnd, loop, wall, changed, replayable, stats, rss = line.rstrip("\n").split("\t")
    rows.setdefault(bench, {}).setdefault(mode, []).append(
        (float(loop), float(wall), int(changed), int(replayable), json.loads(stats)))
def size(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
for bench, modes in rows.items():
    print(f"\n{bench}  (median of {len(modes['native'])} alternating rounds)")
    nl = statistics.median(r[0] for r in modes["native"])
    nw = statistics.median(r[1] for r in modes["native"])
    for mode in ("native", "base", "full"):
        if mode not in modes:
            continue
        rs = modes[mode]
        loop = statistics.median(r[0] for r in rs)
        wall = statistics.median(r[1] for r in rs)
        line = f"  {mode:6}  loop {loop:8.3f} s ({loop / nl:5.2f}x)  wall {wall:8.3f} s ({wall / nw:5.2f}x)"
        s = rs[-1][4]
        if s:
            line += (f"  contents on disk {size(s['content_on_disk'])}, log {size(s['log_bytes'])},"
                     f" total {size(s['written'])}; replayable {rs[-1][3]} of {s['launches']}")
            if rs[-1][2]:
                line += f"; changed {size(rs[-1][2])}: on disk / changed = {s['content_on_disk'] / rs[-1][2]:.2f}"
            if s["launches"]:
                line += f"; log {s['log_bytes'] / s['launches']:.0f} B/launch"
        print(line)
PY

# Results for BENCHMARKS.md (bench/results/store-<machine>.json), merged with earlier runs'
# rows of the other benchmarks.
python3 - "$RESULTS" "${BASE_CLTRAP:-}" <<'PY' |
import json, os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    bench, mode, rnd, loop, wall, changed, replayable, stats, rss = line.rstrip("\n").split("\t")
    rows.setdefault(bench, {}).setdefault(mode, []).append(
        (float(loop), int(changed), int(replayable), json.loads(stats)))
def size(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"
base_name = os.path.basename(os.path.dirname(os.path.abspath(sys.argv[2]))) if sys.argv[2] else None
for bench, modes in rows.items():
    if "full" not in modes:
        continue
    nl = statistics.median(r[0] for r in modes["native"])
    fl = statistics.median(r[0] for r in modes["full"])
    _, changed, replayable, s = modes["full"][-1]
    row = {"benchmark": bench, "native_s": round(nl, 3), "full_s": round(fl, 3),
           "on_disk": size(s["content_on_disk"] + s["log_bytes"]),
           "replayable": f"{replayable} of {s['launches']}"}
    if changed:
        row["disk_vs_changed"] = round(s["content_on_disk"] / changed, 2)
    if s["launches"]:
        row["log_b_per_launch"] = round(s["log_bytes"] / s["launches"])
    if "base" in modes:
        bl = statistics.median(r[0] for r in modes["base"])
        b = modes["base"][-1][3]
        row.update(base=base_name, base_s=round(bl, 3), vs_base=round(fl / bl, 2) if bl else None,
                   base_on_disk=size(b["content_on_disk"] + b["log_bytes"]))
    print(json.dumps(row))
PY
    python3 bench/results.py put store --key benchmark --merge --command \
        "${BASE_CLTRAP:+BASE_CLTRAP=<base>/cltrap }ROUNDS=$ROUNDS BENCHES=\"${BENCHES[*]}\" bench/store.sh"
