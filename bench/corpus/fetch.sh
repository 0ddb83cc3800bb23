#!/usr/bin/env bash
# Fetches the corpus kernels that cltrap cannot redistribute (GPL / LGPL: darktable, GEGL) from
# Debian into a cache folder: `apt-get download` + `dpkg -x`, no installation. Only the interface
# files (bench/corpus/darktable/*.json, bench/corpus/gegl/*.json) are ours and committed. GEGL's
# kernels are compiled into its operation modules as strings: gegl_extract.py writes them out.
#
# Usage: bench/corpus/fetch.sh [CACHE]   (default: target/corpus-cache)
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="${1:-target/corpus-cache}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
if [ ! -d "$CACHE/darktable/usr/share/darktable/kernels" ]; then
    (cd "$CACHE" && apt-get download darktable >/dev/null)
    dpkg -x "$CACHE"/darktable_*.deb "$CACHE/darktable"
    rm -f "$CACHE"/darktable_*.deb
fi
if [ ! -d "$CACHE/gegl/kernels" ]; then
    (cd "$CACHE" && apt-get download libgegl-0.4-0 >/dev/null)
    dpkg -x "$CACHE"/libgegl-0.4-0_*.deb "$CACHE/gegl"
    rm -f "$CACHE"/libgegl-0.4-0_*.deb
    python3 bench/corpus/gegl_extract.py "$CACHE/gegl/kernels" \
        "$CACHE"/gegl/usr/lib/*/gegl-0.4/gegl-common.so "$CACHE"/gegl/usr/lib/*/gegl-0.4/gegl-common-gpl3.so
fi
echo "$CACHE"
