#!/usr/bin/env bash
# The one test command (what CI runs through .ci/run): make sure the system packages are there
# (installs only what is missing), build everything in release mode, run every test (all test
# binaries, so one failure does not hide the others), and check that the README's controls table
# still matches the code.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi

cargo build --release --workspace
cargo test --release --workspace --no-fail-fast
scripts/update-readme.sh --check
