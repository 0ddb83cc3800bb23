#!/usr/bin/env bash
# Fuzzing and solving speed (cltrap fuzz --solve) on the benchmark kernels: CLFuzz's hard
# cases (analyzer/tests/fuzz/hard.cl, seeded from a generated interface) and the demo
# application's captured launches (seeded from the capture). Per kernel: compile time (once),
# time to saturate coverage excluding and including that compile, executions per second, and
# solver time per solved branch — to compare with CLFuzz (0.8 s per kernel on average, 2 s at
# worst, to fuzz; 0.2 s to 1 min per kernel to solve).
#
# Usage: bench/fuzz.sh                 (MODE=worker by default: executions in a worker
#                                       process under the watchdog, as `cltrap fuzz` runs)
#        MODE=in-process bench/fuzz.sh (executions in the cltrap process: no watchdog, so
#                                       only the hard-case kernels that neither hang nor
#                                       crash, and no demo capture)
#        SEED=5 bench/fuzz.sh
# Work files: target/bench/fuzz/. Needs cc for the demo capture (skipped without it).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
MODE="${MODE:-worker}"
SEED="${SEED:-1}"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ] || [ -n "${BENCH_BUILD:-}" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
OUT="$TARGET/bench/fuzz"
rm -rf "$OUT"
mkdir -p "$OUT"
EXTRA=()
[ "$MODE" = worker ] || EXTRA=(--in-process)

run() { # name, input, extra args...
    local name="$1" input="$2"
    shift 2
    local start end
    start=$(date +%s.%N)
    "$CLTRAP" fuzz "$input" --solve --seed "$SEED" --watchdog 2 --out "$OUT/$name" \
        "${EXTRA[@]}" "$@" >"$OUT/$name.txt" 2>&1 || true
    end=$(date +%s.%N)
    grep -E '^[a-z_0-9]+ +[0-9]+ +[0-9]+' "$OUT/$name.txt" | sed "s/^/$name: /" || true
    echo "$name: wall $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s (process start, every kernel, suite writing)"
}

echo "mode: $MODE, seed $SEED, device: $("$CLTRAP" devices | sed -n 2p | sed 's/^ *//')"
if [ "$MODE" = worker ]; then
    run hard analyzer/tests/fuzz/hard.cl
else
    # Without a watchdog a hanging (trip: huge counts) or crashing (overrun) kernel would
    # stop the benchmark: only the others, one suite each.
    for k in magic id_equal bound_check nested floats switcher element dead structs local_eq; do
        run "hard-$k" analyzer/tests/fuzz/hard.cl --kernel "$k"
    done
fi
if [ "$MODE" != worker ]; then
    echo "demo: skipped (blur3x3 crashes under fuzzing; needs the worker)"
elif command -v cc >/dev/null; then
    scripts/build-c.sh demo
    "$CLTRAP" run --out "$OUT/demo-cap" -- target/examples/cltrap-demo >/dev/null 2>&1
    run demo "$OUT/demo-cap"
else
    echo "demo: skipped (no cc)"
fi

python3 - "$OUT" <<'EOF'
import json, sys, os, statistics
out = sys.argv[1]
rows = []
for suite in sorted(os.listdir(out)):
    p = os.path.join(out, suite, "fuzz.json")
    if not os.path.exists(p):
        continue
    for k in json.load(open(p))["kernels"]:
        solved = [s["solve_ms"] for s in k["slots"]
                  if s.get("status") == "solved_and_confirmed" and s.get("solve_ms") is not None]
        eps = k["executions"] / (k["run_ms"] / 1e3) if k["run_ms"] > 0 else 0
        rows.append((suite, k["kernel"], k["compile_ms"], k["saturation_ms"],
                     k["compile_ms"] + k["saturation_ms"], k["executions"], eps,
                     k["solve_ms"], len(solved), max(solved) if solved else 0.0,
                     statistics.mean(solved) if solved else 0.0, len(k["findings"])))
print()
print(f"{'suite/kernel':<22} {'compile':>8} {'sat.excl':>9} {'sat.incl':>9} {'execs':>6} "
      f"{'exec/s':>7} {'solve':>8} {'solved':>6} {'ms/branch(mean,max)':>20} {'findings':>8}")
for r in rows:
    print(f"{r[0] + '/' + r[1]:<22} {r[2]:>6.0f}ms {r[3]:>7.0f}ms {r[4]:>7.0f}ms {r[5]:>6} "
          f"{r[6]:>7.0f} {r[7]:>6.0f}ms {r[8]:>6} {r[10]:>9.1f} {r[9]:>9.1f} {r[11]:>8}")
if rows:
    sat = [r[4] for r in rows]
    print(f"\nmean time to saturate incl. compile: {statistics.mean(sat):.0f} ms "
          f"(max {max(sat):.0f} ms) over {len(rows)} kernels; CLFuzz: 800 ms mean, 2000 ms max")
    solve = [r[7] for r in rows if r[8] > 0]
    if solve:
        print(f"solving, kernels that needed it: {min(solve):.0f}-{max(solve):.0f} ms per kernel; "
              f"CLFuzz: 200 ms - 60 s")
EOF
