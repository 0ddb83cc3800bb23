#!/usr/bin/env bash
# Builds the bundled C programs (the demo app and the benchmarks) into target/, never into the
# source tree. Usage: scripts/build-c.sh [demo|bench|all]   (default: all)
# Prints nothing but errors; the binaries are:
#   target/examples/cltrap-demo
#   target/bench/launch-storm  target/bench/buffer-heavy  target/bench/read-storm
#   target/bench/finish-storm
#   target/bench/partial-update  target/bench/gauss  target/bench/check-kernels
#   target/bench/fuzz-apps  target/bench/stencil1d  target/bench/wavefront  target/bench/fdtd
set -euo pipefail
cd "$(dirname "$0")/.."

CC="${CC:-cc}"
CFLAGS=(-O2 -g -Wall -Wextra -std=gnu11)
what="${1:-all}"

build() { # build OUT SRC (rebuilt when SRC or a header next to it is newer)
    local out="$1" src="$2" dep stale=0
    mkdir -p "$(dirname "$out")"
    [ -x "$out" ] || stale=1
    for dep in "$src" "$(dirname "$src")"/*.h; do
        if [ -e "$dep" ] && [ "$dep" -nt "$out" ]; then stale=1; fi
    done
    if [ "$stale" -eq 1 ]; then
        "$CC" "${CFLAGS[@]}" -o "$out" "$src" -lOpenCL -lm
    fi
}

case "$what" in
demo | all) build target/examples/cltrap-demo examples/demo/demo.c ;;&
bench | all)
    build target/bench/launch-storm bench/launch_storm.c
    build target/bench/buffer-heavy bench/buffer_heavy.c
    build target/bench/read-storm bench/read_storm.c
    build target/bench/finish-storm bench/finish_storm.c
    build target/bench/partial-update bench/partial_update.c
    build target/bench/gauss bench/gauss.c
    build target/bench/check-kernels bench/check_kernels.c
    build target/bench/fuzz-apps bench/fuzz_apps.c
    build target/bench/stencil1d bench/stencil1d.c
    build target/bench/wavefront bench/wavefront.c
    build target/bench/fdtd bench/fdtd.c
    ;;
demo) ;;
*)
    echo "usage: scripts/build-c.sh [demo|bench|all]" >&2
    exit 2
    ;;
esac
