#!/usr/bin/env bash
# The one test command (what CI runs through .ci/run): make sure the system packages are there
# (installs only what is missing), build everything in release mode, run every test (all test
# binaries, so one failure does not hide the others), and check that the user guide's controls table
# (docs/src/controls.md) still matches the code. `--matrix` also runs the slow rows of the third-party matrix
# (tests/tests/third_party_matrix.rs: CLBlast, ViennaCL and pyopencl's library kernels through
# every analysis, several minutes each on two cores); CI runs without it.
set -euo pipefail
if [ "${1:-}" = "--matrix" ]; then export CLTRAP_MATRIX=1; fi
cd "$(dirname "$0")/.."

scripts/install-deps.sh
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi

cargo build --release --workspace
cargo test --release --workspace --no-fail-fast
scripts/update-controls.sh --check
