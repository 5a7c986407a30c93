#!/usr/bin/env bash
# How many real-world JSON Schemas the structured-output compiler accepts, and why it
# refuses the others. DIR holds one folder per collection of *.json schemas (e.g.
# JSONSchemaBench's data/ folder); PER_COLLECTION files are drawn from each with a fixed
# seed (the same files every run), compiled, and the refusals summed by reason.
#   scripts/measure-schemas.sh [--validate] DIR [PER_COLLECTION=30] [SEED=48]
# --validate also walks a random model through every accepted schema over the 32k llama2.c
# vocabulary and has ajv check every completed output (tests/grammar's checker; needs
# node with tests/gateway's packages and ../shared).
# Binaries come from BUILD_DIR (default: build).
set -euo pipefail
validate=false
if [ "${1:-}" = "--validate" ]; then validate=true; shift; fi
dir=${1:?usage: measure-schemas.sh [--validate] DIR [PER_COLLECTION] [SEED]}
per=${2:-30}
seed=${3:-48}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
measure=${MEASURE_BIN:-$build/bin/inflight_schema_measure}
[ -x "$measure" ] || { echo "measure-schemas: build the inflight_schema_measure target first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A fixed draw: PER_COLLECTION names of each collection, shuffled by a random source made
# from the seed (the same files on every run with the same coreutils).
collections=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | sort)
[ -n "$collections" ] || collections=$dir
for c in $collections; do
  find "$c" -maxdepth 1 -name '*.json' -printf '%f\n' | LC_ALL=C sort |
    shuf -n "$per" --random-source=<(yes "$seed") | LC_ALL=C sort | sed "s#^#$c/#"
done > "$work/files"
"$measure" < "$work/files" > "$work/results"

awk -F'\t' -v dir="$dir/" '
  { c = $1; sub(dir, "", c); sub("/[^/]*$", "", c); total[c]++; n++
    if ($2 == "accepted") { ok[c]++; acc++; ms += $3 } else {
      reason = $4; sub(/ at \/.*$/, "", reason); sub(/ at \/$/, "", reason); reasons[reason]++ } }
  END {
    for (c in total) printf "  %-24s %4d of %4d accepted\n", c, ok[c], total[c] | "sort"
    close("sort")
    printf "accepted: %d of %d (%.1f%%), mean compile %.2f ms\n", acc, n, n ? 100 * acc / n : 0, acc ? ms / acc : 0
    if (n > acc) print "refused, by reason:"
    for (r in reasons) printf "  %4d  %s\n", reasons[r], r | "sort -rn"
  }' "$work/results"

if $validate; then
  tokenizer=${INFLIGHT_SHARED_DIR:-$root/../shared}/models/llama2c-tokenizer-32k/tokenizer.bin
  awk -F'\t' '$2 == "accepted" { print $1 }' "$work/results" > "$work/accepted"
  node -e '
    const fs = require("fs");
    const files = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
    const accepted = files.map((f) => ({ name: f, schema: JSON.parse(fs.readFileSync(f, "utf8")) }));
    fs.writeFileSync(process.argv[2], JSON.stringify({ accepted, refused: [] }));
  ' "$work/accepted" "$work/corpus.json"
  "$build/bin/inflight_schema_samples" "$work/corpus.json" "$tokenizer" "$work/samples.jsonl" "${WALKS:-4}"
  node "$root/tests/gateway/check-schema-samples.mjs" "$work/corpus.json" "$work/samples.jsonl"
fi
