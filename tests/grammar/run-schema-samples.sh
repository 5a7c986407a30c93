#!/usr/bin/env bash
# ctest entry: random-model outputs under every schema of schemas.json, checked by ajv.
#   run-schema-samples.sh SAMPLES_BIN SHARED_DIR WORK_DIR
# Missing node, ajv or the 32k tokenizer: exit 77 (skipped), a failure when CI=true.
set -euo pipefail
BIN=$1 SHARED_DIR=$2 WORK=$3
here=$(cd "$(dirname "$0")" && pwd)
gateway="$here/../gateway"
skip() {
  echo "schema samples: $1"
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
}
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -f "$gateway/node_modules/ajv-formats/package.json" ] || skip "ajv-formats is missing (run scripts/setup-gateway-tests.sh)"
tokenizer="$SHARED_DIR/models/llama2c-tokenizer-32k/tokenizer.bin"
[ -f "$tokenizer" ] || skip "missing $tokenizer"
mkdir -p "$WORK"
"$BIN" "$here/schemas.json" "$tokenizer" "$WORK/samples.jsonl"
node "$gateway/check-schema-samples.mjs" "$here/schemas.json" "$WORK/samples.jsonl"
