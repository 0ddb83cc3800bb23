#!/usr/bin/env bash
# `cltrap check`: both engines on the same launches — a stencil, a __local reduction and an
# atomics histogram (bench/check_kernels.c) at 1K, 64K and 1M work-items — captured once, then
# per launch, side by side in one run:
#   device time of the kernel uninstrumented and instrumented (`check --baseline`: the same
#   worker runs both on the same inputs, twice, and reports the second runs), and their ratio;
#   wall time of `cltrap replay ID` (uninstrumented), `cltrap check ID` (native engine) and
#   `cltrap check ID --engine oclgrind`, and Oclgrind / native;
#   the findings of both engines (kind + line pairs) and whether they agree.
# Oclgrind runs launches of OCL_QUICK_FROM work-items or more in its quick mode (first and last
# work-group only; marked `quick`) and is killed after OCL_DEADLINE seconds (marked `>N s`).
#
# Usage: bench/check.sh                     (SIZES="1024 65536 1048576" OCL_QUICK_FROM=1048576
#                                            OCL_DEADLINE=600 ENGINES="native oclgrind")
#        ENGINES=native bench/check.sh      (no Oclgrind: machines without it, e.g. the GPU box)
#        BENCH_PLATFORM=nvidia bench/check.sh   (platform of the app and the native engine)
#        BENCH_NO_BUILD=1 bench/check.sh    (use target/ as it is: machines without cargo or cc)
# Raw JSON goes to target/bench/check/; the table to stdout and to bench/results/check-<machine>.json.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES="${SIZES:-1024 65536 1048576}"
OCL_QUICK_FROM="${OCL_QUICK_FROM:-1048576}"
OCL_DEADLINE="${OCL_DEADLINE:-600}"
read -r -a ENGINES <<<"${ENGINES:-native oclgrind}"
TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
if [ -z "${BENCH_NO_BUILD:-}" ]; then
    cargo build --release -p cltrap -p cltrap-shim
    scripts/build-c.sh bench
fi
OUT="$TARGET/bench/check"
CAP="$OUT/cap"
rm -rf "$OUT"
mkdir -p "$OUT"
DEV=()
if [ -n "${BENCH_PLATFORM:-}" ]; then DEV=(--platform "$BENCH_PLATFORM"); fi

# shellcheck disable=SC2086
"$CLTRAP" run --out "$CAP" -- "$TARGET/bench/check-kernels" $SIZES >"$OUT/app.txt"
n=$(($(wc -l <"$OUT/app.txt") - 1))

wall() { # wall FILE CMD... : runs CMD, stdout to FILE, prints seconds
    local t0 t1 ms
    t0=$(date +%s%N)
    "${@:2}" >"$1" 2>"$1.err" || true
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    printf '%d.%03d\n' $((ms / 1000)) $((ms % 1000))
}

for ((id = 0; id < n; id++)); do
    items=$(sed -n "$((id + 1))p" "$OUT/app.txt" | cut -f2)
    w=$(wall "$OUT/replay-$id.txt" "$CLTRAP" replay "$CAP" "$id" "${DEV[@]}")
    echo "$id replay $w" >>"$OUT/walls"
    # Device times: each kernel's second run uninstrumented and instrumented, in one worker.
    "$CLTRAP" check "$CAP" "$id" --json --baseline "${DEV[@]}" >"$OUT/times-$id.json" 2>/dev/null || true
    for e in "${ENGINES[@]}"; do
        extra=(--json --engine "$e")
        if [ "$e" = native ]; then
            extra+=("${DEV[@]}")
        else
            extra+=(--deadline "$OCL_DEADLINE")
            if [ "$items" -ge "$OCL_QUICK_FROM" ]; then extra+=(--quick); fi
        fi
        w=$(wall "$OUT/$e-$id.json" "$CLTRAP" check "$CAP" "$id" "${extra[@]}")
        echo "$id $e $w" >>"$OUT/walls"
    done
done

python3 - "$OUT" "$n" "$OCL_QUICK_FROM" "$OCL_DEADLINE" <<'PY'
import json, sys, os
out, n, quick_from, deadline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
walls = {}
for line in open(os.path.join(out, "walls")):
    i, e, w = line.split()
    walls[(int(i), e)] = float(w)
app = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "app.txt"))][:n]

def load(e, i):
    try:
        return json.load(open(os.path.join(out, f"{e}-{i}.json")))
    except Exception:
        return None

def pairs(j):
    if j is None:
        return None
    return sorted({(f["kind"], f["example"]["first"]["line"] if f["example"].get("first") else 0,
                    (f["example"].get("second") or {}).get("line", 0)) for f in j["findings"]})

hdr = ("kernel", "items", "plain ms", "instr ms", "instr/plain", "replay s", "native s",
       "oclgrind s", "ocl/native", "native finds", "ocl finds", "agree")
rows = []
for i in range(n):
    kernel, items = app[i][0], int(app[i][1])
    nat, ocl, times = load("native", i), load("oclgrind", i), load("times", i)
    l = times["launches"][0] if times and times["launches"] else {}
    plain = l.get("baseline_kernel_ns")
    instr = l.get("kernel_ns")
    ratio = f"{instr / plain:.1f}x" if plain and instr else "-"
    nw, ow = walls.get((i, "native")), walls.get((i, "oclgrind"))
    ol = ocl["launches"][0] if ocl and ocl["launches"] else {}
    ostat = ol.get("status", {}).get("status", "-")
    if ocl is None:
        ocl_s = "-"
    elif ostat == "timed-out":
        ocl_s = f">{deadline}"
    else:
        ocl_s = f"{ow:.1f}" + (" quick" if items >= quick_from else "")
    oratio = f"{ow / nw:.1f}x" + (" (quick)" if items >= quick_from else "") if ocl and ostat == "checked" else "-"
    np_, op_ = pairs(nat), pairs(ocl)
    agree = "-" if ocl is None or ostat != "checked" else ("yes" if np_ == op_ else "NO")
    rows.append((kernel, str(items),
                 f"{plain / 1e6:.3f}" if plain else "-", f"{instr / 1e6:.3f}" if instr else "-", ratio,
                 f"{walls.get((i, 'replay'), 0):.2f}", f"{nw:.2f}" if nw else "-", ocl_s, oratio,
                 str(len(np_)) if np_ is not None else "-", str(len(op_)) if op_ is not None else "-", agree))
width = [max(len(r[c]) for r in rows + [hdr]) for c in range(len(hdr))]
for r in [hdr] + rows:
    print("  ".join(v.rjust(width[c]) for c, v in enumerate(r)))
# The same rows for bench/results.py (numbers as numbers; "-" left out).
fields = ("kernel", "items", "plain_ms", "instr_ms", "instr_ratio", "replay_s", "native_s",
          "oclgrind_s", "ocl_ratio", "native_finds", "ocl_finds", "agree")
with open(os.path.join(out, "rows.jsonl"), "w") as f:
    for r in rows:
        row = {}
        for k, v in zip(fields, r):
            if v in ("-", ""):
                continue
            t = v.rstrip("x")
            try:
                row[k] = int(t) if t.isdigit() else float(t)
            except ValueError:
                row[k] = v
        f.write(json.dumps(row) + "\n")
PY

# Results for BENCHMARKS.md (bench/results/check-<machine>.json).
python3 bench/results.py put check --key kernel,items --platform "${BENCH_PLATFORM:-0}" \
    --command "ENGINES=\"${ENGINES[*]}\"${BENCH_PLATFORM:+ BENCH_PLATFORM=$BENCH_PLATFORM} bench/check.sh" <"$OUT/rows.jsonl"
