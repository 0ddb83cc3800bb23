#!/usr/bin/env bash
# Regenerates the controls table in README.md (between <!-- controls:begin --> and
# <!-- controls:end -->) from `cltrap controls --markdown`, so the docs cannot drift from the
# one table in capture/src/controls.rs.
#   scripts/update-readme.sh          rewrite README.md in place
#   scripts/update-readme.sh --check  exit 1 (and show the diff) if README.md is out of date
# Needs target/release/cltrap (built by `cargo build --release --workspace`).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
[ -x "$CLTRAP" ] || { echo "update-readme: $CLTRAP is missing; run cargo build --release --workspace first" >&2; exit 1; }
table="$("$CLTRAP" controls --markdown)" || { echo "update-readme: '$CLTRAP controls --markdown' failed" >&2; exit 1; }
[ -n "$table" ] || { echo "update-readme: '$CLTRAP controls --markdown' printed nothing" >&2; exit 1; }
# (`cltrap controls --markdown` escapes the `|` inside cells itself, for GitHub's tables.)

grep -q '^<!-- controls:begin -->$' README.md && grep -q '^<!-- controls:end -->$' README.md \
    || { echo "update-readme: README.md lacks the <!-- controls:begin --> / <!-- controls:end --> markers" >&2; exit 1; }

new="$(mktemp)"
trap 'rm -f "$new"' EXIT
TABLE="$table" awk '
    /^<!-- controls:begin -->$/ { print; print ENVIRON["TABLE"]; skip = 1; next }
    /^<!-- controls:end -->$/   { skip = 0 }
    !skip { print }
' README.md >"$new"

if [ "${1:-}" = "--check" ]; then
    if ! diff -u README.md "$new"; then
        echo "update-readme: README.md's controls table is out of date; run scripts/update-readme.sh" >&2
        exit 1
    fi
    echo "README.md controls table is current"
else
    cp "$new" README.md
    echo "README.md controls table updated"
fi
