#!/usr/bin/env bash
# Installs the Hugging Face Hub's JavaScript client (@huggingface/hub) that tests/hub checks
# inflight's cache layout against. Idempotent and quiet when it is installed.
# Without npm it only warns: the test then skips, or fails when CI=true.
set -euo pipefail
cd "$(dirname "$0")/../tests/hub"
if [ -f node_modules/@huggingface/hub/package.json ] && [ node_modules/.package-lock.json -nt package.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-hub-tests: npm is not installed (Debian: apt-get install nodejs npm); the hub peer test cannot run" >&2
  exit 0
fi
npm install --no-audit --no-fund --loglevel=error >/dev/null
