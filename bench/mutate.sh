#!/usr/bin/env bash
# Mutation-testing throughput: mutants per second with mutant schemata (one compile per
# program, each mutant a run) against one compile per mutant (--per-mutant-compile) — same
# kernel, same suite, same workers, in one run of this script, on the default OpenCL device
# (PoCL here). Suites are the applications' own captured launches: the demo's three small
# kernels (examples/demo) and the larger tiled matrix multiply of bench/mutate/tiles.c.
#
# Usage: bench/mutate.sh                  (every kernel, OPERATORS=all by default)
#        KERNELS="blur3x3 matmul_tiled" bench/mutate.sh
#        JOBS=1 bench/mutate.sh           (worker processes; default: the number of cores)
# Per kernel and mode it prints cltrap's `timing:` and `phases:` lines, then one summary
# line: the end-to-end rate (every mutant over the whole command's wall time, fixed costs
# included) and the evaluation-phase rate (mutants run in workers over the worker phase's
# wall time), per mode, and both ratios. Work files: target/bench/mutate/; the summary rows go
# to bench/results/mutate-<machine>.json (bench/report.py renders BENCHMARKS.md from them).
# `histogram` (also in tiles.c) is not in the default list: PoCL 3.1 aborts loading its schema
# (undefined symbol `_num_groups_y` in the work-group function), so cltrap falls back to one
# compile per mutant for it and both modes measure the same thing.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
read -r -a KERNELS <<<"${KERNELS:-vec_add reduce_sum blur3x3 matmul_tiled}"
OPERATORS="${OPERATORS:-all}"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ] || [ -n "${BENCH_BUILD:-}" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
OUT="$TARGET/bench/mutate"
rm -rf "$OUT"
mkdir -p "$OUT"
scripts/build-c.sh demo
cc -O2 -o "$OUT/tiles" bench/mutate/tiles.c -lOpenCL
"$CLTRAP" run --out "$OUT/cap-demo" -- target/examples/cltrap-demo >/dev/null
"$CLTRAP" run --out "$OUT/cap-tiles" -- "$OUT/tiles" >/dev/null

capture_of() {
    case "$1" in
    matmul_tiled | histogram) echo "$OUT/cap-tiles" ;;
    *) echo "$OUT/cap-demo" ;;
    esac
}

# PoCL caches compiled programs across processes (~/.cache/pocl/kcache): a second run of the
# same mutants would compile nothing. Each mode starts with an empty cache of its own (so a
# worker restarted after a crash finds the schema compiled, as it would for a user, while
# every one-mutant program is compiled once).
JOBS_ARG=()
[ -z "${JOBS:-}" ] || JOBS_ARG=(--jobs "$JOBS")
for KERNEL in "${KERNELS[@]}"; do
    declare -A TOTAL EVAL
    for mode in schema per-mutant; do
        extra=()
        [ "$mode" = schema ] || extra=(--per-mutant-compile)
        rm -rf "$OUT/pocl-cache-$mode"
        mkdir -p "$OUT/pocl-cache-$mode"
        lines=$(POCL_CACHE_DIR="$OUT/pocl-cache-$mode" "$CLTRAP" mutate "$(capture_of "$KERNEL")" \
            --kernel "$KERNEL" --operators "$OPERATORS" --fresh --timing \
            --out "$OUT/$KERNEL-$mode" "${JOBS_ARG[@]}" "${extra[@]}" | grep -E '^(timing|phases):')
        sed "s/^/$KERNEL $mode: /" <<<"$lines"
        TOTAL[$mode]=$(sed -nE 's/^timing:.* rate ([0-9.]+) mutants\/s.*/\1/p' <<<"$lines")
        EVAL[$mode]=$(sed -nE 's/^phases:.* eval rate ([0-9.]+) mutants\/s.*/\1/p' <<<"$lines")
    done
    awk -v k="$KERNEL" -v ts="${TOTAL[schema]}" -v tp="${TOTAL[per-mutant]}" \
        -v es="${EVAL[schema]}" -v ep="${EVAL[per-mutant]}" 'BEGIN {
        printf "kernel %s: end-to-end schema %.2f vs per-mutant %.2f mutants/s (%.1fx); eval phase schema %.2f vs per-mutant %.2f mutants/s (%.1fx)\n",
            k, ts, tp, ts / tp, es, ep, es / ep }'
    mutants=$(sed -nE 's/^timing: mutants ([0-9]+).*/\1/p' <<<"$lines" | head -n1)
    python3 -c "
import json, sys
k, m, ts, tp, es, ep = sys.argv[1], int(sys.argv[2] or 0), *map(float, sys.argv[3:])
print(json.dumps({'kernel': k, 'mutants': m, 'schema_eval_rate': es, 'per_mutant_eval_rate': ep,
                  'eval_ratio': round(es / ep, 1) if ep else None, 'schema_rate': ts,
                  'per_mutant_rate': tp, 'end_to_end_ratio': round(ts / tp, 1) if tp else None}))" \
        "$KERNEL" "$mutants" "${TOTAL[schema]:-0}" "${TOTAL[per-mutant]:-0}" "${EVAL[schema]:-0}" \
        "${EVAL[per-mutant]:-0}" >>"$OUT/rows.jsonl"
done

# Results for BENCHMARKS.md (bench/results/mutate-<machine>.json).
python3 bench/results.py put mutate --key kernel \
    --command "KERNELS=\"${KERNELS[*]}\" OPERATORS=$OPERATORS${JOBS:+ JOBS=$JOBS} bench/mutate.sh" <"$OUT/rows.jsonl"
