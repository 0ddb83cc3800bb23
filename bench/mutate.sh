#!/usr/bin/env bash
# Mutation-testing throughput: mutants evaluated per second with mutant schemata (one compile
# per program, each mutant a run) against one compile per mutant (--per-mutant-compile) —
# same kernel, same suite, same workers, in one run of this script, on the default OpenCL
# device (PoCL here). The suite is the demo application's own captured launches.
#
# Usage: bench/mutate.sh                  (every demo kernel, OPERATORS=all by default)
#        KERNELS=blur3x3 bench/mutate.sh
#        JOBS=1 bench/mutate.sh           (worker processes; default: the number of cores)
# Prints one `timing:` line per mode and the ratio. Work files: target/bench/mutate/.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
read -r -a KERNELS <<<"${KERNELS:-vec_add reduce_sum blur3x3}"
OPERATORS="${OPERATORS:-all}"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ] || [ -n "${BENCH_BUILD:-}" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
OUT="$TARGET/bench/mutate"
rm -rf "$OUT"
mkdir -p "$OUT"
cc -O2 -o "$OUT/demo" examples/demo/demo.c -lOpenCL -lm
"$CLTRAP" run --out "$OUT/cap" -- "$OUT/demo" >/dev/null

# PoCL caches compiled programs across processes (~/.cache/pocl/kcache): a second run of the
# same mutants would compile nothing. Each mode starts with an empty cache of its own (so a
# worker restarted after a crash finds the schema compiled, as it would for a user, while
# every one-mutant program is compiled once).
JOBS_ARG=()
[ -z "${JOBS:-}" ] || JOBS_ARG=(--jobs "$JOBS")
for KERNEL in "${KERNELS[@]}"; do
declare -A RATE
for mode in schema per-mutant; do
    extra=()
    [ "$mode" = schema ] || extra=(--per-mutant-compile)
    rm -rf "$OUT/pocl-cache-$mode"
    mkdir -p "$OUT/pocl-cache-$mode"
    line=$(POCL_CACHE_DIR="$OUT/pocl-cache-$mode" "$CLTRAP" mutate "$OUT/cap" --kernel "$KERNEL" \
        --operators "$OPERATORS" --fresh --timing --out "$OUT/$KERNEL-$mode" "${JOBS_ARG[@]}" \
        "${extra[@]}" | grep '^timing:')
    echo "$KERNEL $mode: $line"
    RATE[$mode]=$(sed -E 's/.* rate ([0-9.]+) mutants\/s.*/\1/' <<<"$line")
done
awk -v a="${RATE[schema]}" -v b="${RATE[per-mutant]}" -v k="$KERNEL" \
    'BEGIN { printf "kernel %s: schema %.2f mutants/s, per-mutant compile %.2f mutants/s, ratio %.1fx\n", k, a, b, a / b }'
done
