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
#        REDUCED_BUDGET=20s bench/fuzz.sh   (time per campaign of the reduced-execution part)
#
# Then (worker mode, needs cc) the reduced executions (fuzzing on a subset of the
# work-groups), side by side in the same run: captured launches of >= 1M work-items from
# real host programs, each fuzzed for REDUCED_BUDGET (default 10s, --exhaust-budget: a
# fixed time, no early stop) with the default reduction and with --full-launches, printing
# executions per second of the fuzzing loop (the confirming runs on the whole launch are
# counted apart) and their ratio:
#   - bench/fuzz_apps.c `edges`: an image filter over a 1920x1080 RGBA frame (2 073 600
#     work-items, NULL local size), and `dense`: a neural-network layer (1 048 576 work-items);
#     each by default and with --captured-ranges (scalars kept to the captured values, so no
#     mutation makes the kernel read gigabytes away and crash its worker);
#   - ffmpeg's avgblur_opencl on one 1920x1080 frame (when ffmpeg is installed).
# Work files: target/bench/fuzz/. Needs cc for the demo capture (skipped without it).
# Both tables also go to bench/results/{fuzz,fuzz-reduced}-<machine>.json (bench/report.py).
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

reduced() { # name capture kernel extra-args...
    local name="$1" cap="$2" kernel="$3" mode flags
    shift 3
    for mode in reduced full; do
        flags=()
        [ "$mode" = full ] && flags=(--full-launches)
        "$CLTRAP" fuzz "$cap" --kernel "$kernel" --seed "$SEED" --budget "$REDUCED_BUDGET" \
            --exhaust-budget --watchdog 2 --timing --out "$OUT/reduced/$name-$mode" \
            "${flags[@]}" "$@" >"$OUT/reduced/$name-$mode.txt" 2>&1 || true
    done
}

REDUCED_BUDGET="${REDUCED_BUDGET:-10s}"
if [ "$MODE" = worker ] && command -v cc >/dev/null; then
    mkdir -p "$OUT/reduced"
    scripts/build-c.sh bench
    "$CLTRAP" run --out "$OUT/apps-cap" -- target/bench/fuzz-apps >/dev/null 2>&1
    reduced edges "$OUT/apps-cap" edges
    reduced edges-ranges "$OUT/apps-cap" edges --captured-ranges
    reduced dense "$OUT/apps-cap" dense
    reduced dense-ranges "$OUT/apps-cap" dense --captured-ranges
    if command -v ffmpeg >/dev/null; then
        "$CLTRAP" run --out "$OUT/ffmpeg-cap" -- ffmpeg -nostdin -v error -f lavfi \
            -i testsrc=size=1920x1080:rate=5 -frames:v 1 -init_hw_device opencl=ocl:0.0 \
            -filter_hw_device ocl -vf format=rgba,hwupload,avgblur_opencl,hwdownload,format=rgba \
            -f rawvideo - >/dev/null 2>&1
        reduced ffmpeg-avgblur "$OUT/ffmpeg-cap" avgblur_horiz
    fi
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
keys = ("kernel", "compile_ms", "sat_excl_ms", "sat_incl_ms", "execs", "exec_per_s", "solve_ms",
        "solved", "ms_per_branch_max", "ms_per_branch_mean", "findings")
with open(os.path.join(out, "rows.jsonl"), "w") as f:
    for r in rows:
        v = (r[0] + "/" + r[1], round(r[2]), round(r[3]), round(r[4]), r[5], round(r[6]),
             round(r[7]), r[8], round(r[9], 1), round(r[10], 1), r[11])
        f.write(json.dumps(dict(zip(keys, v))) + "\n")
EOF
if [ -s "$OUT/rows.jsonl" ]; then
    python3 bench/results.py put fuzz --key kernel --command "MODE=$MODE SEED=$SEED bench/fuzz.sh" <"$OUT/rows.jsonl"
fi

python3 - "$OUT/reduced" "$REDUCED_BUDGET" <<'EOF'
import json, sys, os
out, budget = sys.argv[1], sys.argv[2]
if not os.path.isdir(out):
    sys.exit(0)
def load(name):
    p = os.path.join(out, name, "fuzz.json")
    if not os.path.exists(p):
        return None
    return json.load(open(p))["kernels"][0]
def rate(k):
    ms = k["run_ms"] - k.get("confirm_ms", 0)
    n = k["executions"] - k.get("confirm_runs", 0)
    return n / (ms / 1e3) if ms > 0 else 0.0
def covered(k):
    return sum(1 for s in k["slots"] if s["status"] == "covered_by_fuzzing")
names = sorted({f.rsplit("-", 1)[0] for f in os.listdir(out) if f.endswith(".txt")})
print()
print(f"reduced executions, {budget} per campaign (exec/s of the fuzzing loop; confirming runs on the whole launch apart)")
print(f"{'campaign':<16} {'reduced exec/s':>14} {'full exec/s':>12} {'ratio':>7} {'execs r/f':>11} "
      f"{'confirm r':>14} {'builds r/f':>10} {'findings r/f':>12} {'slots r/f':>10}")
for n in names:
    r, f = load(n + "-reduced"), load(n + "-full")
    if not r or not f:
        print(f"{n:<16} (no report: see {out}/{n}-*.txt)")
        continue
    ratio = rate(r) / rate(f) if rate(f) > 0 else float("inf")
    print(f"{n:<16} {rate(r):>14.0f} {rate(f):>12.1f} {ratio:>6.0f}x "
          f"{r['executions']:>5}/{f['executions']:<5} "
          f"{r.get('confirm_runs', 0):>3} in {r.get('confirm_ms', 0) / 1e3:>5.1f} s "
          f"{r['compiles']:>4}/{f['compiles']:<5} {len(r['findings']):>5}/{len(f['findings']):<6} "
          f"{covered(r):>4}/{covered(f):<5}")
    if r.get("reduced"):
        print(f"{'':<16} {r['reduced'].split(';')[0]}")
    with open(os.path.join(out, "rows.jsonl"), "a") as fh:
        fh.write(json.dumps({
            "campaign": n, "reduced_eps": round(rate(r)), "full_eps": round(rate(f), 1),
            "ratio": round(ratio) if ratio != float("inf") else None, "execs_r": r["executions"], "execs_f": f["executions"],
            "confirm_runs": r.get("confirm_runs", 0), "confirm_s": round(r.get("confirm_ms", 0) / 1e3, 1),
            "builds_r": r["compiles"], "builds_f": f["compiles"], "findings_r": len(r["findings"]),
            "findings_f": len(f["findings"]), "slots_r": covered(r), "slots_f": covered(f)}) + "\n")
EOF
if [ -s "$OUT/reduced/rows.jsonl" ]; then
    python3 bench/results.py put fuzz-reduced --key campaign \
        --command "REDUCED_BUDGET=$REDUCED_BUDGET SEED=$SEED bench/fuzz.sh" <"$OUT/reduced/rows.jsonl"
fi
