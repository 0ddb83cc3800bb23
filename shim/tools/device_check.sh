#!/bin/sh
# Runs the shim's C fixtures natively and under libcltrap.so on whatever OpenCL platforms the
# machine has (e.g. the GPU device machine), and summarises the captures. No cargo needed:
# carry target/release/libcltrap.so. Usage: sh shim/tools/device_check.sh OUTDIR
set -u
OUT=${1:-/tmp/cltrap-device-check}
mkdir -p "$OUT"
SHIM=$(pwd)/target/release/libcltrap.so
FIX=shim/tests/fixtures
{
  echo "== platforms"; ls /etc/OpenCL/vendors 2>&1; cat /etc/OpenCL/vendors/*.icd 2>&1
  command -v clinfo >/dev/null && clinfo -l 2>&1
  for f in vadd dl edge; do
    cc -O1 -g -w -o "$OUT/$f" "$FIX/$f.c" -lOpenCL -lpthread -ldl || echo "cannot build $f"
  done
  for app in "vadd 2" "dl" "edge"; do
    set -- $app
    echo "== $app"
    "$OUT/$1" ${2:-} > "$OUT/native-$1.txt" 2>&1; echo "native rc=$?"
    rm -rf "$OUT/cap-$1"
    CLTRAP_DIR="$OUT/cap-$1" LD_PRELOAD="$SHIM" "$OUT/$1" ${2:-} > "$OUT/shim-$1.txt" 2> "$OUT/shim-$1.err"; echo "shim rc=$?"
    cmp -s "$OUT/native-$1.txt" "$OUT/shim-$1.txt" && echo "stdout identical" || { echo "stdout DIFFERS"; diff "$OUT/native-$1.txt" "$OUT/shim-$1.txt"; }
    cat "$OUT/shim-$1.err"
    echo "launches: $(wc -l < "$OUT/cap-$1/launches.jsonl" 2>/dev/null)"
    head -n 1 "$OUT/cap-$1/launches.jsonl" 2>/dev/null | grep -o "\"device\":{[^}]*}"; grep -c "\"kind\":\"missing\"" "$OUT/cap-$1/launches.jsonl" 2>/dev/null
  done
} 2>&1 | tee "$OUT/summary.txt"
