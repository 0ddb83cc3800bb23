#!/usr/bin/env bash
# Campaigns spread over devices: `cltrap check` of every launch (and, with MUTATE=1, a
# `cltrap mutate` campaign) over one capture of bench/gauss.c (Gaussian elimination, 2N-2
# launches), run on 1, 2, 4 … devices of one platform (`--devices 0`, `0,1`, …) and, on a
# machine with one device, with 1 and 2 workers on it (`--workers-per-device`), side by side
# in one run: wall time of the whole command and of its units (the runner's phase, from its
# stats.json, plus mutate's test-case units from cases/stats.json; the rest is the analysis's own
# preparation and report, in one process), the
# speed-ups over the first row, and the share of the workers' time they were idle. Every run's
# report must equal the first row's (timings aside; for mutate, the verdicts): `same`.
#
# Usage: bench/campaign.sh                    (GAUSS_N=160: 318 launches; MUTATE=1 adds mutate;
#                                              COMMANDS="mutate": only those, rows merged)
#        BENCH_PLATFORM=nvidia bench/campaign.sh      (the platform of the app and the campaign)
#        BENCH_NO_BUILD=1 bench/campaign.sh   (use target/ as it is: machines without cargo or cc)
# Raw output goes to target/bench/campaign/; the table to stdout and to
# bench/results/campaign-<machine>.json.
set -euo pipefail
cd "$(dirname "$0")/.."

GAUSS_N="${GAUSS_N:-160}"
TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
if [ -z "${BENCH_NO_BUILD:-}" ]; then
    cargo build --release -p cltrap -p cltrap-shim
    scripts/build-c.sh bench
fi
OUT="$TARGET/bench/campaign"
CAP="$OUT/cap"
rm -rf "$OUT"
mkdir -p "$OUT"
PLAT=()
if [ -n "${BENCH_PLATFORM:-}" ]; then PLAT=(--platform "$BENCH_PLATFORM"); fi

# The capture's own defaults: past its derive threshold (256 MB of contents on a large disk; GAUSS_N=400
# stores about 280 MB) the inputs a launch's predecessor left are kept as digests, and the workers
# re-create them by re-executing that launch (the executor's deriver), as for any long capture.
"$CLTRAP" run --out "$CAP" --buffers full -- "$TARGET/bench/gauss" "$GAUSS_N" >"$OUT/app.txt" 2>"$OUT/app.err"
launches=$(grep -c . "$CAP/launches.jsonl")
# Devices of the platform: the `device N:` lines under the chosen platform.
ndev=$("$CLTRAP" devices | python3 -c '
import re, sys
want = sys.argv[1]
plats, cur = [], None
for line in sys.stdin:
    m = re.match(r"platform (\d+): (.*)", line)
    if m:
        cur = [m.group(1), m.group(2), 0]; plats.append(cur)
    elif cur and line.strip().startswith("device"):
        cur[2] += 1
pick = [p for p in plats if not want or want == p[0] or want.lower() in p[1].lower()]
pick = [p for p in pick if p[2] > 0]
print(pick[0][2] if pick else 0)' "${BENCH_PLATFORM:-}")

# Spreads: "devices workers-per-device" pairs; one device gets 1 and 2 workers.
SPREADS=("1 1")
if [ "$ndev" -ge 2 ]; then SPREADS+=("2 1"); else SPREADS+=("1 2"); fi
if [ "$ndev" -ge 4 ]; then SPREADS+=("4 1"); fi

run() { # run NAME DEVICES PER CMD... : prints "wall units-wall idle"
    local name=$1 devs=$2 per=$3 t0 t1
    shift 3
    local list
    list=$(seq -s, 0 $((devs - 1)))
    # check prints its JSON report; mutate writes it to a file.
    local json=(--json)
    if [ "$1" = mutate ]; then json=(--json "$OUT/$name.json" --out "$OUT/$name.out"); fi
    t0=$(date +%s%N)
    "$CLTRAP" "$@" "${PLAT[@]}" --devices "$list" --workers-per-device "$per" \
        --campaign-dir "$OUT/$name" "${json[@]}" >"$OUT/$name.txt" 2>"$OUT/$name.err" || true
    if [ "$1" != mutate ]; then mv "$OUT/$name.txt" "$OUT/$name.json"; fi
    t1=$(date +%s%N)
    python3 - "$OUT/$name/stats.json" $(((t1 - t0) / 1000000)) <<'PY'
import json, os, sys
# The campaign's units, and for mutate also its test cases' units (cases/stats.json, run by the
# same runner before the mutants): wall time summed, idle share weighted by wall time.
parts = [json.load(open(f)) for f in (sys.argv[1], os.path.join(os.path.dirname(sys.argv[1]), "cases", "stats.json")) if os.path.exists(f)]
wall = sum(p["wall_s"] for p in parts)
idle = sum(p["idle_fraction"] * p["wall_s"] for p in parts) / wall if wall else 0.0
print(f"{int(sys.argv[2]) / 1000:.2f} {wall:.2f} {idle:.3f}")
PY
}

same() { # same A.json B.json : "yes" when the reports are equal apart from timings (and,
          # for mutate, apart from the words of a verdict: a mutant that reads garbage prints
          # what it read, which differs between two devices; the verdicts must not)
    python3 - "$1" "$2" <<'PY'
import json, sys
T = {"millis", "kernel_ns", "baseline_kernel_ns", "seconds_elapsed", "elapsed_ms", "wall_ms",
     "statusReason"}
def norm(v):
    if isinstance(v, dict):
        return {k: (0 if k in T else norm(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v
def first_diff(a, b, path="$"):
    if type(a) != type(b):
        return f"{path}: {a!r:.80} vs {b!r:.80}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_diff(a.get(k), b.get(k), f"{path}.{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_diff(x, y, f"{path}[{i}]")
    return f"{path}: {a!r:.80} vs {b!r:.80}"
try:
    a, b = (norm(json.load(open(p))) for p in sys.argv[1:3])
    if a == b:
        print("yes")
    else:
        print("NO")
        print(f"bench: {sys.argv[2]} differs from {sys.argv[1]} at {first_diff(a, b)}", file=sys.stderr)
except Exception as e:
    print(f"NO ({e})")
PY
}

read -r -a COMMANDS <<<"${COMMANDS:-check${MUTATE:+ mutate}}"
rows="$OUT/rows.jsonl"
: >"$rows"
printf '%-8s %8s %8s %9s %8s %9s %9s %8s %6s\n' command devices workers wall_s speedup units_s units_sp idle same
for cmd in "${COMMANDS[@]}"; do
    base=""
    for spread in "${SPREADS[@]}"; do
        read -r devs per <<<"$spread"
        name="$cmd-$devs-$per"
        read -r wall uwall idle <<<"$(run "$name" "$devs" "$per" "$cmd" "$CAP")"
        if [ -z "$base" ]; then base=$wall; ubase=$uwall; ref="$OUT/$name.json"; fi
        sp=$(python3 -c "print(f'{$base / $wall:.2f}')")
        usp=$(python3 -c "print(f'{$ubase / $uwall:.2f}')")
        eq=$(same "$ref" "$OUT/$name.json")
        workers=$((devs * per))
        printf '%-8s %8s %8s %9s %8s %9s %9s %8s %6s\n' "$cmd" "$devs" "$workers" "$wall" "$sp" "$uwall" "$usp" "$idle" "$eq"
        printf '{"analysis": "%s", "launches": %s, "devices": %s, "workers": %s, "wall_s": %s, "speedup": %s, "units_s": %s, "units_speedup": %s, "idle": %s, "same": "%s"}\n' \
            "$cmd" "$launches" "$devs" "$workers" "$wall" "$sp" "$uwall" "$usp" "$idle" "$eq" >>"$rows"
    done
done
python3 bench/results.py put campaign --key analysis,devices,workers --merge \
    ${BENCH_PLATFORM:+--platform "$BENCH_PLATFORM"} \
    --command "${MUTATE:+MUTATE=1 }GAUSS_N=$GAUSS_N bench/campaign.sh" <"$rows"
