#!/usr/bin/env bash
# cltrap benchmarks: the launch storm, the buffer-heavy program and the finish storm (a launch
# then clFinish, repeated; small and large buffers), each run natively, under
# the shim with capture off (pure pass-through), with `--buffers hash` and with `--buffers full`.
# The four modes ALTERNATE within each round (the order rotates every round), so drift of the
# machine (thermal, page cache, other load) hits every mode alike; medians are printed with the
# ratios to native, the capture's bytes versus the unique contents, MB/s of full capture and
# the peak RSS (of the application process, via bench/measure.py).
#
# Usage: bench/run.sh                 (ROUNDS=5 STORM_N=100000 HEAVY_N=200 FINISH_N=20000
#                                      FINISH_LARGE_N=500 FINISH_LARGE_ELEMS=1048576 by default)
#        BENCHES="finish-small finish-large" bench/run.sh   (a subset of launch-storm
#                                      buffer-heavy finish-small finish-large)
#        ROUNDS=3 MODES="native off" bench/run.sh
#        BENCH_PLATFORM=1 bench/run.sh  (OpenCL platform: index, or part of its name; default 0)
#        BENCH_NO_BUILD=1 bench/run.sh  (use target/bench/* as they are: machines without cc)
#        BASELINE_SHIM=/path/libcltrap.so MODES="native hash full base-hash base-full" bench/run.sh
#                                       (base-*: the same capture with another build of the shim,
#                                        e.g. the last commit's, alternating with this one's)
#        MODES="native hash hash-hand full full-hand" bench/run.sh
#                                       (*-hand: with --at-finish hand)
#        BENCH_TIMEOUT=300 bench/run.sh (seconds per run; a run that hangs is killed, reported as
#                                        a timeout in the summary, and the benchmark goes on)
# Raw rows go to target/bench/results.tsv; captures are made in target/bench/cap-* and deleted.
# The medians go to bench/results/capture-<machine>.json (bench/results.py; BENCH_RESULTS_DIR
# for elsewhere), from which bench/report.py regenerates BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-5}"
STORM_N="${STORM_N:-100000}"
HEAVY_N="${HEAVY_N:-200}"
FINISH_N="${FINISH_N:-20000}"
FINISH_LARGE_N="${FINISH_LARGE_N:-500}"
FINISH_LARGE_ELEMS="${FINISH_LARGE_ELEMS:-1048576}"
read -r -a BENCHES <<<"${BENCHES:-launch-storm buffer-heavy finish-small finish-large}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-300}"
read -r -a MODES <<<"${MODES:-native off hash full}"

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
[ -n "${BENCH_NO_BUILD:-}" ] || scripts/build-c.sh bench

OUTDIR=target/bench
RESULTS="$OUTDIR/results.tsv"
: >"$RESULTS"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "OpenCL:  $(clinfo -l 2>/dev/null | tr '\n' ' ' | sed 's/  */ /g')   (BENCH_PLATFORM=${BENCH_PLATFORM:-0})"
echo "PoCL:    $(dpkg-query -W -f='${Version}' pocl-opencl-icd 2>/dev/null || echo unknown)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')   rounds: $ROUNDS   modes: ${MODES[*]}"

run_one() { # run_one BENCH MODE ROUND BINARY ARGS...
    local bench="$1" mode="$2" round="$3"
    shift 3
    local cap="$OUTDIR/cap-$bench-$mode" out tfile cmd
    tfile="$(mktemp)"
    rm -rf "$cap"
    case "$mode" in
    native) cmd=("$@") ;;
    off) cmd=("$CLTRAP" run --out "$cap" --capture off -- "$@") ;;
    hash | full) cmd=("$CLTRAP" run --out "$cap" --buffers "$mode" -- "$@") ;;
    hash-hand | full-hand) cmd=("$CLTRAP" run --out "$cap" --buffers "${mode%-hand}" --at-finish hand -- "$@") ;;
    base-hash | base-full)
        [ -n "${BASELINE_SHIM:-}" ] || { echo "bench: $mode needs BASELINE_SHIM" >&2; exit 2; }
        cmd=(env CLTRAP_SHIM="$BASELINE_SHIM" "$CLTRAP" run --out "$cap" --buffers "${mode#base-}" -- "$@")
        ;;
    *) echo "bench: unknown mode $mode" >&2; exit 2 ;;
    esac
    local status=0
    out="$(timeout --kill-after=10 "$BENCH_TIMEOUT" python3 bench/measure.py "$tfile" "${cmd[@]}")" || status=$?
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "bench: TIMEOUT: '${cmd[*]}' ran longer than ${BENCH_TIMEOUT}s and was killed" >&2
        printf '%s\t%s\t%s\ttimeout\t%s\t0\t{}\n' "$bench" "$mode" "$round" "$BENCH_TIMEOUT" >>"$RESULTS"
        rm -f "$tfile"
        rm -rf "$cap"
        return
    fi
    if [ "$status" -ne 0 ]; then
        echo "bench: '${cmd[*]}' failed (exit $status):" >&2
        printf '%s\n' "$out" >&2
        exit 1
    fi
    local loop_s check wall_s rss stats="{}"
    loop_s="$(sed -n 's/.*loop_s=\([0-9.]*\).*/\1/p' <<<"$out")"
    check="$(sed -n 's/.*check=\([A-Za-z]*\).*/\1/p' <<<"$out")"
    if [ -z "$loop_s" ] || [ "$check" != ok ]; then
        echo "bench: $bench under $mode did not report a correct result:" >&2
        printf '%s\n' "$out" >&2
        exit 1
    fi
    read -r wall_s rss < <(tail -n 1 "$tfile")
    rm -f "$tfile"
    if [ "$mode" != native ] && [ "$mode" != off ]; then
        stats="$(python3 bench/capstats.py "$cap")"
    fi
    rm -rf "$cap"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bench" "$mode" "$round" "$loop_s" "$wall_s" "$rss" "$stats" >>"$RESULTS"
    printf '  round %s %-13s %-7s loop %8ss  wall %7ss  maxrss %7s kB\n' "$round" "$bench" "$mode" "$loop_s" "$wall_s" "$rss"
}

for ((r = 1; r <= ROUNDS; r++)); do
    n="${#MODES[@]}"
    for ((i = 0; i < n; i++)); do
        mode="${MODES[$(((i + r - 1) % n))]}"
        for bench in "${BENCHES[@]}"; do
            case "$bench" in
            launch-storm) run_one launch-storm "$mode" "$r" target/bench/launch-storm "$STORM_N" ;;
            buffer-heavy) run_one buffer-heavy "$mode" "$r" target/bench/buffer-heavy "$HEAVY_N" ;;
            finish-small) run_one finish-small "$mode" "$r" target/bench/finish-storm "$FINISH_N" 64 ;;
            finish-large)
                run_one finish-large "$mode" "$r" target/bench/finish-storm "$FINISH_LARGE_N" \
                    "$FINISH_LARGE_ELEMS"
                ;;
            *) echo "bench: unknown benchmark $bench" >&2; exit 2 ;;
            esac
        done
    done
done

python3 bench/summary.py "$RESULTS"

# Results for BENCHMARKS.md (bench/results/capture-<machine>.json; bench/report.py renders
# them): merged, so a run of some benchmarks or modes keeps the other rows of earlier runs.
python3 bench/summary.py --rows "$RESULTS" launch-storm="$STORM_N" buffer-heavy="$HEAVY_N" \
    finish-small="$FINISH_N" finish-large="$FINISH_LARGE_N" |
    python3 bench/results.py put capture --key benchmark,mode --merge --platform "${BENCH_PLATFORM:-0}" \
        --command "BENCH_PLATFORM=${BENCH_PLATFORM:-0} ROUNDS=$ROUNDS STORM_N=$STORM_N FINISH_LARGE_N=$FINISH_LARGE_N BENCHES=\"${BENCHES[*]}\" MODES=\"${MODES[*]}\" bench/run.sh"
