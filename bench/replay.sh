#!/usr/bin/env bash
# Replay throughput of a long capture: a Gaussian elimination (bench/gauss.c, 2 (N-1) launches
# over one N x N matrix, every launch rewriting a sub-block) runs natively, is captured with
# `--buffers full` past a derive threshold (so most inputs are kept only as digests and are
# re-created by re-executing the launches that produced them), and is replayed in order.
# Side by side in one run, it prints the application's wall time, the capture's, the replay's,
# launches replayed per second and the ratio of the replay to the application's own run
# (target: <= 10x), with the replay's summary line.
#
# With CROSS_ENV set (environment assignments naming another OpenCL platform, e.g.
# CROSS_ENV="OCL_ICD_VENDORS=/etc/OpenCL/vendors OCL_ICD_FILENAMES="), the capture is also
# replayed there: launches whose derived inputs that device cannot re-create bit for bit are
# counted as "not replayable on this device", not as failures.
#
# Usage: bench/replay.sh               (GAUSS_N=256 DERIVE_MB=1 ROUNDS=3 by default)
#        GAUSS_N=1024 DERIVE_MB=512 bench/replay.sh   (the 2 046-launch, 4 MB-matrix case)
#        BENCH_NO_BUILD=1 bench/replay.sh             (use target/bench/gauss as it is)
set -euo pipefail
cd "$(dirname "$0")/.."

GAUSS_N="${GAUSS_N:-256}"
DERIVE_MB="${DERIVE_MB:-1}"
ROUNDS="${ROUNDS:-3}"
TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="${CLTRAP:-$TARGET/release/cltrap}"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
[ -n "${BENCH_NO_BUILD:-}" ] || scripts/build-c.sh bench
GAUSS="$TARGET/bench/gauss"
OUT="$TARGET/bench/replay"
rm -rf "$OUT"
mkdir -p "$OUT"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "OpenCL:  $(clinfo -l 2>/dev/null | tr '\n' ' ' | sed 's/  */ /g')"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')   gauss N=$GAUSS_N   derive after ${DERIVE_MB} MB   rounds: $ROUNDS"

# wall SECONDS of a command (its stdout to $1), exit status kept in $OUT/status.
wall() {
    local log="$1"
    shift
    local start end status=0
    start=$(date +%s.%N)
    "$@" >"$log" 2>"$log.err" || status=$?
    end=$(date +%s.%N)
    echo "$status" >"$OUT/status"
    python3 -c "print(f'{$end - $start:.3f}')"
}

median() { python3 -c "import statistics,sys; print(f'{statistics.median(map(float, sys.argv[1:])):.3f}')" "$@"; }

native=() capture=() replay=()
for r in $(seq "$ROUNDS"); do
    native+=("$(wall "$OUT/native.txt" "$GAUSS" "$GAUSS_N")")
    grep -q "check=ok" "$OUT/native.txt" || { echo "bench: gauss failed natively" >&2; cat "$OUT/native.txt.err" >&2; exit 1; }
    rm -rf "$OUT/cap"
    capture+=("$(wall "$OUT/capture.txt" "$CLTRAP" run --out "$OUT/cap" --buffers full --derive-after-mb "$DERIVE_MB" -- "$GAUSS" "$GAUSS_N")")
    replay+=("$(wall "$OUT/replay.txt" "$CLTRAP" replay "$OUT/cap")")
    [ "$(cat "$OUT/status")" = 0 ] || { echo "bench: replay exited $(cat "$OUT/status")" >&2; tail -3 "$OUT/replay.txt" "$OUT/replay.txt.err" >&2; }
done
launches=$(grep -c '^launch ' "$OUT/replay.txt" || true)
n=$(median "${native[@]}")
c=$(median "${capture[@]}")
p=$(median "${replay[@]}")
stored=$(du -sm "$OUT/cap" | cut -f1)
echo
echo "| gauss N | launches | native s | capture s | stored MB | replay s | launches/s | replay / native |"
echo "|---|---|---|---|---|---|---|---|"
python3 -c "
n, c, p, l = $n, $c, $p, $launches
print(f'| $GAUSS_N | {l} | {n:.2f} | {c:.2f} | $stored | {p:.2f} | {l / p:.0f} | {p / n:.1f}x |')"
echo
echo "replay: $(tail -1 "$OUT/replay.txt")"
note="replay: $(tail -1 "$OUT/replay.txt")"

if [ -n "${CROSS_ENV:-}" ]; then
    # shellcheck disable=SC2086 # CROSS_ENV is a list of assignments
    x=$(wall "$OUT/cross.txt" env $CROSS_ENV "$CLTRAP" replay "$OUT/cap")
    echo "cross-device replay ($CROSS_ENV): ${x} s, exit $(cat "$OUT/status")"
    echo "  $(tail -1 "$OUT/cross.txt")"
    note="$note; on another platform ($CROSS_ENV, 1 round): ${x} s, $(tail -1 "$OUT/cross.txt")"
fi

# Results for BENCHMARKS.md (bench/results/replay-<machine>.json).
python3 -c "
import json
n, c, p, l = $n, $c, $p, $launches
print(json.dumps({'gauss_n': $GAUSS_N, 'launches': l, 'native_s': n, 'capture_s': c,
                  'stored_mb': $stored, 'replay_s': p, 'launches_per_s': round(l / p) if p else None,
                  'ratio': round(p / n, 1) if n else None}))" |
    python3 bench/results.py put replay --key gauss_n --merge --note "$note" \
        --command "GAUSS_N=$GAUSS_N DERIVE_MB=$DERIVE_MB ROUNDS=$ROUNDS bench/replay.sh"
