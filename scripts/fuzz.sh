#!/usr/bin/env bash
# Coverage-guided fuzzing of cltrap's parsers of outside data with AFL++ on the stable
# toolchain (`cargo afl`): scripts/fuzz.sh [TARGET|all] [SECONDS]
#
# TARGET: capture (the capture reader), interface (`cltrap fuzz --interface` files),
# includes (the include scanner), macros (the macro expander); `all` (the default) runs
# them one after another. SECONDS per target: 600 unless given. Seeds come from
# fuzz/corpus/TARGET; AFL's state goes to fuzz/out/TARGET (kept between runs: a rerun goes
# on from its queue); crashes and hangs land in fuzz/out/TARGET/default/{crashes,hangs}.
# Installs what it needs first: Debian's afl++ (apt), and cargo-afl (which builds its own
# AFL++ runtime) when `cargo afl` is missing. Not part of `cargo test` or CI: the seeded
# short run is analyzer/tests/fuzz_seeds.rs.
set -euo pipefail

cd "$(dirname "$0")/.."
target=${1:-all}
seconds=${2:-600}
targets=(capture interface includes macros)

if ! command -v afl-fuzz >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y afl++
fi
if ! cargo afl --version >/dev/null 2>&1; then
    cargo install cargo-afl --locked
fi

case "$target" in
all) run=("${targets[@]}") ;;
capture | interface | includes | macros) run=("$target") ;;
*)
    echo "fuzz.sh: unknown target '$target' (capture, interface, includes, macros or all)" >&2
    exit 2
    ;;
esac

(cd fuzz && cargo afl build --release --bins)

# A container's core pattern pipes to a program AFL cannot wait for; on a CPU shared with
# other work, do not pin a core.
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1
export AFL_NO_UI=1
for t in "${run[@]}"; do
    # The target's scratch folder (a process killed at the end of a run leaves it behind).
    mkdir -p "fuzz/out/$t/tmp"
    input="fuzz/corpus/$t"
    # Resume from the queue of an earlier run when there is one.
    [ -d "fuzz/out/$t/default/queue" ] && input=-
    echo "fuzz.sh: $t for ${seconds}s (output in fuzz/out/$t)"
    (cd fuzz && TMPDIR="$PWD/out/$t/tmp" cargo afl fuzz -V "$seconds" -i "${input/#fuzz\//}" -o "out/$t" \
        -t 2000 -m none "target/release/$t") >"fuzz/out/$t.log" 2>&1 || {
        tail -20 "fuzz/out/$t.log" >&2
        exit 1
    }
    stats="fuzz/out/$t/default/fuzzer_stats"
    grep -E '^(run_time|execs_done|execs_per_sec|corpus_count|edges_found|total_edges|saved_crashes|saved_hangs) ' "$stats" |
        sed "s/^/$t: /"
done
