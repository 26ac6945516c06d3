#!/usr/bin/env bash
# The C interface end to end: builds libawari_c, compiles example.c against awari.h with
# cc (linked statically), and checks that it prints what `awari query` prints for the
# README's example and a few other positions: the same lines as the text output (board
# drawing and rule set's name left out), the same numbers as --json, the same error.
#
#   tools/c/check.sh [DB]
#
# DB: a folder built with `awari build --max-seeds 16 --dir DB` (Awari, 6 pits); without
# it one is built in a temporary folder (about 10 s). Runs from any folder.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
here=tools/c
# CARGO_TARGET_DIR (as .ci/run sets it, to share the main crate's build) or the crate's own.
target="${CARGO_TARGET_DIR:-$here/target}"
out="$target/c-example"
mkdir -p "$out"

cargo build --release --quiet --manifest-path "$here/Cargo.toml"
cargo build --release --quiet --bin awari
awari="$root/target/release/awari"
[ -n "${CARGO_TARGET_DIR:-}" ] && awari="$CARGO_TARGET_DIR/release/awari"

# Static: the example runs without LD_LIBRARY_PATH. The system libraries are those
# `cargo rustc --crate-type staticlib -- --print native-static-libs` names (Linux, glibc).
cc -O2 -std=c99 -Wall -Wextra -Werror -pedantic -I"$here" "$here/example.c" \
    "$target/release/libawari_c.a" -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc \
    -o "$out/example"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ $# -ge 1 ]; then
    db="$1"
else
    db="$tmp/db"
    if ! "$awari" build --max-seeds 16 --dir "$db" >"$tmp/build.log" 2>&1; then
        cat "$tmp/build.log" >&2
        exit 1
    fi
fi

positions=(
    "1 1 1 1 1 2 4 2 3 0 0 0"   # the README's example: value 0, moves -1 -1 -2 -2 -2 0
    "0 0 0 0 0 1 0 0 0 0 0 0"   # one move
    "0 0 0 0 0 0 1 2 0 0 0 0"   # game over: no moves
    "2 0 0 1 1 0 0 0 0 0 0 0"   # moves that end the game
    "2 2 2 2 2 2 1 1 1 1 0 0"
    "0 3 0 5 0 1 2 0 4 0 1 0"
    "4 4 4 4 0 0 0 0 0 0 0 0"
)
n=0
for pos in "${positions[@]}"; do
    # shellcheck disable=SC2086
    "$out/example" "$db" $pos >"$tmp/c.txt"
    # shellcheck disable=SC2086
    "$awari" query --dir "$db" $pos | sed '1,4d; /^game over:/d; s/^awari rules, //' >"$tmp/q.txt"
    if ! diff -u "$tmp/q.txt" "$tmp/c.txt"; then
        echo "error: example.c and awari query differ on $pos (above: - query, + example)" >&2
        exit 1
    fi
    # shellcheck disable=SC2086
    "$awari" query --dir "$db" --json $pos >"$tmp/q.json"
    python3 - "$tmp/q.json" "$tmp/c.txt" "$pos" <<'EOF'
import json, re, sys
q = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
value = int(re.search(r"value ([+-]\d+)", lines[0]).group(1))
moves, best = [], []
for l in lines[2:]:
    m = re.match(r"\s*[a-h] \((\d)\)\s+([+-]\d+)\s+(\d+)(  best)?(  \(ends the game\))?$", l)
    assert m, f"unexpected line: {l!r}"
    pit = int(m.group(1))
    moves.append({"pit": pit, "value": int(m.group(2)), "captured": int(m.group(3)),
                  "ends_game": m.group(5) is not None})
    if m.group(4):
        best.append(pit)
got = {"value": value, "moves": moves, "best": best}
want = {k: q[k] for k in got}
# awari_moves gives no distance (awari_distance does); this database has no tables.
for m in want["moves"]:
    assert m.pop("distance") is None, m
if got != want:
    sys.exit(f"error: {sys.argv[3]}: example.c says {got}, awari query --json {want}")
EOF
    n=$((n + 1))
done

# An error: a level not built. Both say the same on stderr and exit with 1.
big="9 9 1 1 1 1 1 1 1 1 1 1"
# shellcheck disable=SC2086
if "$out/example" "$db" $big >/dev/null 2>"$tmp/c.err"; then
    echo "error: example.c answered a position of a level not built" >&2
    exit 1
fi
# shellcheck disable=SC2086
"$awari" query --dir "$db" $big >/dev/null 2>"$tmp/q.err" || true
if ! diff -u "$tmp/q.err" "$tmp/c.err"; then
    echo "error: example.c and awari query report a missing level differently" >&2
    exit 1
fi

echo "ok: example.c prints what awari query prints ($n positions and a missing level)"
echo "README's example, through the C interface:"
"$out/example" "$db"
