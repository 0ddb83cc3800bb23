#!/usr/bin/env bash
# Costs of the issue-3 analyses, as ratios measured side by side in one run on the bundled
# example app (examples/demo):
#   1. schedule amplification: one rewrite + one compile, then N schedules + M repeats cost
#      about N+M kernel runs (`cltrap replay --schedules N --timing`);
#   2. coverage instrumentation: instrumented vs plain kernel time (`cltrap cover --timing`);
#   3. live `cltrap run --coverage` vs plain capture vs native, wall time of the whole app,
#      alternating the three modes in each round (ROUNDS, default 5), medians printed.
# Usage: bench/analyses.sh            (SCHEDULES=10 REPEATS=3 ROUNDS=5)
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEDULES="${SCHEDULES:-10}"
REPEATS="${REPEATS:-3}"
ROUNDS="${ROUNDS:-5}"
TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
if [ ! -x "$CLTRAP" ] || [ ! -e "$TARGET/release/libcltrap.so" ]; then
    cargo build --release -p cltrap -p cltrap-shim
fi
scripts/build-c.sh demo
APP=target/examples/cltrap-demo
OUT=target/bench/analyses
rm -rf "$OUT"
mkdir -p "$OUT"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "PoCL:    $(dpkg-query -W -f='${Version}' pocl-opencl-icd 2>/dev/null || echo unknown)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"

"$CLTRAP" run --out "$OUT/cap" -- "$APP" >/dev/null 2>&1

echo
echo "== 1. schedule amplification: $SCHEDULES schedules + $REPEATS repeats per launch =="
"$CLTRAP" replay "$OUT/cap" --schedules "$SCHEDULES" --repeats "$REPEATS" --timing |
    grep -E '^timing total|^schedules:' | tee "$OUT/schedules.txt"

echo
echo "== 2. coverage instrumentation: instrumented vs plain kernel time =="
"$CLTRAP" cover "$OUT/cap" --timing | grep -E '^timing total' | tee "$OUT/cover.txt"

echo
echo "== 3. whole app: native vs plain capture vs live --coverage ($ROUNDS alternating rounds) =="
wall() { # wall CMD... -> seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
declare -a T_NATIVE T_CAPTURE T_COVER
for ((r = 0; r < ROUNDS; r++)); do
    rm -rf "$OUT/c1" "$OUT/c2"
    T_NATIVE+=("$(wall "$APP")")
    T_CAPTURE+=("$(wall "$CLTRAP" run --out "$OUT/c1" -- "$APP")")
    T_COVER+=("$(wall "$CLTRAP" run --out "$OUT/c2" --coverage -- "$APP")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
n=$(median "${T_NATIVE[@]}")
c=$(median "${T_CAPTURE[@]}")
v=$(median "${T_COVER[@]}")
printf '  %-34s %8.3f s  %6.2fx native\n' "native" "$n" 1
printf '  %-34s %8.3f s  %6.2fx native\n' "cltrap run (capture)" "$c" "$(echo "$c / $n" | bc -l)"
printf '  %-34s %8.3f s  %6.2fx native  %5.2fx capture\n' "cltrap run --coverage (fresh dir)" "$v" \
    "$(echo "$v / $n" | bc -l)" "$(echo "$v / $c" | bc -l)"

# Results for BENCHMARKS.md (bench/results/analyses-<machine>.json).
python3 - "$OUT" "$SCHEDULES" "$REPEATS" "$n" "$c" "$v" <<'PY' |
import json, re, sys
out, schedules, repeats = sys.argv[1], sys.argv[2], sys.argv[3]
n, c, v = map(float, sys.argv[4:7])
def grab(path, pattern):
    m = re.search(pattern, open(path).read())
    return m.groups() if m else None
rows = []
g = grab(f"{out}/schedules.txt", r"instrument ([\d.]+) ms, compile ([\d.]+) ms.*?(\d+) runs .*?\(([\d.]+) ms each\)")
if g:
    rows.append((f"replay --schedules {schedules} --repeats {repeats}: rewrite + compile, once per program",
                 f"{g[0]} ms + {g[1]} ms"))
    rows.append((f"replay --schedules {schedules} --repeats {repeats}: each of the {g[2]} runs", f"{g[3]} ms"))
g = grab(f"{out}/cover.txt", r"instrumented kernels [\d.]+ ms \(([\d.]+)x\)")
if g:
    rows.append(("cover: instrumented / plain kernel time", f"{g[0]}x"))
rows.append(("cltrap run (capture) / native, whole app", f"{c / n:.2f}x"))
rows.append(("cltrap run --coverage / native, whole app", f"{v / n:.2f}x"))
rows.append(("cltrap run --coverage / plain capture", f"{v / c:.2f}x"))
for measure, value in rows:
    print(json.dumps({"measure": measure, "value": value}))
PY
    python3 bench/results.py put analyses --key measure \
        --command "SCHEDULES=$SCHEDULES REPEATS=$REPEATS ROUNDS=$ROUNDS bench/analyses.sh"
