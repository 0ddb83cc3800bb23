#!/usr/bin/env bash
# One command on a fresh Debian/Ubuntu machine: install what is missing, build cltrap, and run
# the main job on the bundled example app (examples/demo) on the PoCL CPU device:
#   capture every kernel launch -> list them -> show one -> replay them all and check the results.
# Idempotent: a second run installs nothing and only rebuilds what changed.
# The capture is left in target/demo-capture for you to explore (`cltrap list target/demo-capture`).
set -euo pipefail
cd "$(dirname "$0")/.."

heading() { printf '\n===== %s =====\n' "$*"; }

heading "1/6 system packages, Rust, OpenCL device"
scripts/install-deps.sh
# rustup (when it had to run) puts cargo in ~/.cargo/bin.
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi

heading "2/6 build cltrap (cargo build --release --workspace)"
cargo build --release --workspace
scripts/build-c.sh demo

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
DEMO=target/examples/cltrap-demo
CAP=target/demo-capture
rm -rf "$CAP"

heading "3/6 capture: cltrap run --out $CAP -- $DEMO"
"$CLTRAP" run --out "$CAP" -- "$DEMO"

heading "4/6 the launches it made: cltrap list $CAP"
"$CLTRAP" list "$CAP"

heading "5/6 everything about launch 0: cltrap show $CAP 0"
"$CLTRAP" show "$CAP" 0

heading "6/6 replay every launch without the app and compare: cltrap replay $CAP"
"$CLTRAP" replay "$CAP"

heading "done: capture kept in $CAP"
