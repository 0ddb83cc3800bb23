#!/usr/bin/env bash
# Fetches the corpus kernels that cltrap cannot redistribute (GPL: darktable) from Debian into
# a cache folder: `apt-get download` + `dpkg -x`, no installation. Only the interface files
# (bench/corpus/darktable/*.json) are ours and committed.
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
echo "$CACHE"
