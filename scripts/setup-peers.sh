#!/usr/bin/env bash
# Installs the npm reference tokenizers that the peer agreement test compares with
# (tests/peers). Idempotent: npm leaves an up-to-date node_modules alone.
set -euo pipefail
cd "$(dirname "$0")/../tests/peers"
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-peers: npm is not installed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
npm install --no-audit --no-fund
