#!/usr/bin/env bash
# Build benchmark: P = 6 awari levels 0..=N (default 20) from scratch with 1 and with 2
# threads, timed per level by the tool itself; the table goes to stdout and the figures
# to bench.csv (or the file given as the second argument).
#   scripts/bench.sh [N] [CSV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
max="${1:-20}"
csv="${2:-bench.csv}"
cargo build --release --quiet
exec target/release/awari bench --max-seeds "$max" --threads 1,2 --csv "$csv"
