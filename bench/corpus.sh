#!/usr/bin/env bash
# The real-kernel corpus benchmark: `cltrap fuzz --solve` on every kernel of
# bench/corpus/<project>/ (one interface file per kernel: <file>.<kernel>.json, the kernel
# file <file>.cl next to it or under the folder its project's SOURCES file names inside the
# fetch cache), `cltrap cover` on every generated suite (what fuzz reports covered must be what
# cover measures when it replays the suite), then `cltrap mutate` on a sample of the suites.
# Prints per kernel and in total: built / ran / cases kept / if-?:-switch sides covered, proven
# dead, unsupported / findings / time, whether fuzz's coverage equals cover's, and the mutation
# scores; the same as JSON in $OUT/summary.json (totals computed by bench/corpus/summary.py,
# never typed), ending with the line "fuzz == cover on K of N suites; mean mutation score X%
# over M suites".
#
# Usage: bench/corpus.sh
#   BUDGET=10s        fuzzing budget per kernel (cltrap fuzz --budget)
#   SOLVER_TIME=10    symbolic execution seconds per kernel (--solver-time)
#   HANG=180          seconds after which one kernel's whole `cltrap fuzz` counts as a hang
#   COVER_LIMIT=120   seconds one suite's `cltrap cover` may take
#   MUTATE_LIMIT=300  seconds one suite's `cltrap mutate` may take (past it: over the limit, unscored)
#   MUTATE_EVERY=4    mutate every Nth suite (1 = all; 0 = none); the sample is reported
#   ONLY=REGEX        only interface files whose path matches
# Work files: target/bench/corpus/. Needs network once (bench/corpus/fetch.sh: darktable, GEGL).
# The per-project lines also go to bench/results/corpus-<machine>.json (bench/report.py).
set -uo pipefail
cd "$(dirname "$0")/.."

TARGET="${CARGO_TARGET_DIR:-target}"
case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
CLTRAP="$TARGET/release/cltrap"
BUDGET="${BUDGET:-10s}"
SOLVER_TIME="${SOLVER_TIME:-10}"
HANG="${HANG:-180}"
COVER_LIMIT="${COVER_LIMIT:-120}"
MUTATE_LIMIT="${MUTATE_LIMIT:-300}"
MUTATE_EVERY="${MUTATE_EVERY:-4}"
ONLY="${ONLY:-.}"
[ -x "$CLTRAP" ] || cargo build --release -p cltrap
CACHE="$(bench/corpus/fetch.sh)"
OUT="$TARGET/bench/corpus"
rm -rf "$OUT"
mkdir -p "$OUT"

i=0
for iface in $(find bench/corpus -mindepth 2 -name '*.json' | sort | grep -E "$ONLY"); do
    project="$(basename "$(dirname "$iface")")"
    name="$(basename "$iface" .json)"   # <file>.<kernel>
    file="${name%.*}"
    src_dir="$(dirname "$iface")"
    [ -f "$src_dir/SOURCES" ] && src_dir="$CACHE/$(cat "$src_dir/SOURCES")"
    work="$OUT/$project/$name"
    mkdir -p "$work"
    start=$(date +%s.%N)
    timeout -k 5 "$HANG" "$CLTRAP" fuzz "$src_dir/$file.cl" --interface "$iface" --solve \
        --budget "$BUDGET" --solver-time "$SOLVER_TIME" --out "$work/suite" \
        >"$work/fuzz.txt" 2>"$work/fuzz.err"
    echo $? >"$work/rc"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f\n", b - a }' >"$work/wall"
    if [ -f "$work/suite/fuzz.json" ]; then
        timeout -k 5 "$COVER_LIMIT" "$CLTRAP" cover "$work/suite" --json "$work/cover.json" \
            >"$work/cover.txt" 2>&1
        echo $? >"$work/cover.rc"
    fi
    if [ "$MUTATE_EVERY" -gt 0 ] && [ $((i % MUTATE_EVERY)) -eq 0 ] && [ -f "$work/suite/fuzz.json" ]; then
        timeout -k 5 "$MUTATE_LIMIT" "$CLTRAP" mutate "$work/suite" --jobs 2 --json "$work/mutate.json" \
            --out "$work/mutate" >"$work/mutate.txt" 2>&1
        echo $? >"$work/mutate.rc"
    fi
    i=$((i + 1))
    python3 bench/corpus/summary.py "$OUT" --row "$project/$name"
done
echo "device: $("$CLTRAP" devices 2>/dev/null | sed -n 2p | sed 's/^ *//'), budget $BUDGET, solver $SOLVER_TIME s, hang $HANG s, mutate every $MUTATE_EVERY"
python3 bench/corpus/summary.py "$OUT"

# Results for BENCHMARKS.md (bench/results/corpus-<machine>.json): the per-project and total
# lines of summary.json; a run of part of the corpus (ONLY) keeps the other rows.
MERGE=()
[ "$ONLY" = . ] || MERGE=(--merge)
python3 - "$OUT/summary.json" "$ONLY" <<'PY' |
import json, sys
s = json.load(open(sys.argv[1]))
label = "" if sys.argv[2] == "." else f"{sys.argv[2]}: "
pct = lambda x: f"{100 * x:.1f}%"
for t in s["projects"] + [s["total"]]:
    mut = t["mean_mutation_score"]
    print(json.dumps({
        "project": label + t["label"], "kernels": t["kernels"], "built": t["built"], "ran": t["ran"],
        "cases": t["cases"], "sides": f"{t['covered']}/{t['sides']}", "dead": t["dead"],
        "unsupported": f"{t['unsupported']} ({pct(t['unsupported_share'])})", "open": t["open"],
        "full_mean": f"{pct(t['full_coverage_share'])} / {pct(t['mean_coverage'])}",
        "with_sides": f"{t['with_sides']}: {pct(t['with_sides_full_share'])} / {pct(t['with_sides_mean_coverage'])}",
        "findings": t["findings"], "median_total_s": f"{t['median_wall_s']:.1f} / {t['total_wall_s']:.0f}",
        "crash_panic_hang": t["crashes_panics_hangs"],
        "fuzz_eq_cover": f"{t['cover_agrees']}/{t['cover_checked']}",
        "mutation": "-" if mut is None else f"{pct(mut)} ({t['mutated']})"}))
PY
    python3 bench/results.py put corpus --key project "${MERGE[@]}" \
        --command "BUDGET=$BUDGET SOLVER_TIME=$SOLVER_TIME MUTATE_EVERY=$MUTATE_EVERY${ONLY:+ ONLY='$ONLY'} bench/corpus.sh"
