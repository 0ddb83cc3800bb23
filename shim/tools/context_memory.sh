#!/bin/sh
# Device memory of an application that creates, uses and releases contexts in a loop
# (tests/apps/contexts.c), natively and under libcltrap.so with device-side digests: the
# process's GPU memory is sampled with nvidia-smi every 2 s while it runs, and must stay flat
# under the shim as natively (a context kept alive with the digest engine's objects would
# hold about 8 MB of device memory per context).
# No cargo needed: carry target/release/libcltrap.so (and, for a comparison, a baseline build
# named by BASELINE_SHIM). Usage:
#   sh shim/tools/context_memory.sh [CYCLES [OUTDIR]]
set -u
N=${1:-400}
OUT=${2:-/tmp/cltrap-context-memory}
SHIM=${SHIM:-$(pwd)/target/release/libcltrap.so}
mkdir -p "$OUT"
cc -std=c11 -D_GNU_SOURCE -O1 -g -w -DKERNEL_DIR="\"$(pwd)/tests/kernels\"" \
   -o "$OUT/contexts" tests/apps/contexts.c -lOpenCL -lpthread -ldl || exit 2

# sample LABEL COMMAND...: runs COMMAND, sampling its GPU memory (MiB) until it exits.
sample() {
    label=$1
    shift
    rm -rf "$OUT/cap-$label"
    "$@" > "$OUT/$label.out" 2> "$OUT/$label.err" &
    pid=$!
    : > "$OUT/$label.mem"
    while kill -0 "$pid" 2> /dev/null; do
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits \
            | awk -F', *' -v p="$pid" '$1 == p { print $2 }' >> "$OUT/$label.mem"
        sleep 2
    done
    wait "$pid"
    rc=$?
    echo "== $label: exit $rc; $(tr '\n' ' ' < "$OUT/$label.out")"
    if [ -s "$OUT/$label.mem" ]; then
        echo "   GPU memory of the process (MiB), $(wc -l < "$OUT/$label.mem") samples:" \
            "first $(head -n 1 "$OUT/$label.mem"), last $(tail -n 1 "$OUT/$label.mem")," \
            "max $(sort -n "$OUT/$label.mem" | tail -n 1)"
        echo "   all: $(tr '\n' ' ' < "$OUT/$label.mem")"
    else
        echo "   no GPU memory sample (is this an NVIDIA device?)"
    fi
    [ -s "$OUT/$label.err" ] && sed 's/^/   stderr: /' "$OUT/$label.err" | head -n 5
}

echo "== device: $(nvidia-smi --query-gpu=name,memory.used --format=csv,noheader)"
sample native "$OUT/contexts" "$N" rss
sample shim env LD_PRELOAD="$SHIM" CLTRAP_DIR="$OUT/cap-shim" CLTRAP_BUFFERS=hash \
    CLTRAP_DEVICE_DIGEST=on CLTRAP_STATS="$OUT/shim.stats.json" "$OUT/contexts" "$N" rss
echo "   counters: $(cat "$OUT/shim.stats.json" 2> /dev/null)"
if [ -n "${BASELINE_SHIM:-}" ]; then
    sample baseline env LD_PRELOAD="$BASELINE_SHIM" CLTRAP_DIR="$OUT/cap-baseline" \
        CLTRAP_BUFFERS=hash CLTRAP_DEVICE_DIGEST=on "$OUT/contexts" "$N" rss
fi
echo "== after: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)"
