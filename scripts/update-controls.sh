#!/usr/bin/env bash
# Regenerates the controls table of the user guide (docs/src/controls.md, between
# <!-- controls:begin --> and <!-- controls:end -->) from `cltrap controls --markdown`, so the
# docs cannot drift from the one table in capture/src/controls.rs.
#   scripts/update-controls.sh          rewrite docs/src/controls.md in place
#   scripts/update-controls.sh --check  exit 1 (and show the diff) if it is out of date
# Needs target/release/cltrap (built by `cargo build --release --workspace`).
set -euo pipefail
cd "$(dirname "$0")/.."

PAGE=docs/src/controls.md
TARGET="${CARGO_TARGET_DIR:-target}"
CLTRAP="$TARGET/release/cltrap"
[ -x "$CLTRAP" ] || { echo "update-controls: $CLTRAP is missing; run cargo build --release --workspace first" >&2; exit 1; }
table="$("$CLTRAP" controls --markdown)" || { echo "update-controls: '$CLTRAP controls --markdown' failed" >&2; exit 1; }
[ -n "$table" ] || { echo "update-controls: '$CLTRAP controls --markdown' printed nothing" >&2; exit 1; }
# (`cltrap controls --markdown` escapes the `|` inside cells itself, for markdown tables.)

grep -q '^<!-- controls:begin -->$' "$PAGE" && grep -q '^<!-- controls:end -->$' "$PAGE" \
    || { echo "update-controls: $PAGE lacks the <!-- controls:begin --> / <!-- controls:end --> markers" >&2; exit 1; }

new="$(mktemp)"
trap 'rm -f "$new"' EXIT
TABLE="$table" awk '
    /^<!-- controls:begin -->$/ { print; print ENVIRON["TABLE"]; skip = 1; next }
    /^<!-- controls:end -->$/   { skip = 0 }
    !skip { print }
' "$PAGE" >"$new"

if [ "${1:-}" = "--check" ]; then
    if ! diff -u "$PAGE" "$new"; then
        echo "update-controls: $PAGE's controls table is out of date; run scripts/update-controls.sh" >&2
        exit 1
    fi
    echo "$PAGE controls table is current"
else
    cp "$new" "$PAGE"
    echo "$PAGE controls table updated"
fi
