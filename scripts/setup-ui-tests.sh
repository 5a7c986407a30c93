#!/usr/bin/env bash
# Installs what the browser test of the web UI needs (tests/ui): Debian's chromium and
# puppeteer-core from npm (which downloads no browser of its own). Idempotent and quiet
# when both are there. Without npm it only warns: the test then skips, or fails when CI=true.
set -euo pipefail
cd "$(dirname "$0")/../tests/ui"
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup-ui-tests: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
if [ -f node_modules/puppeteer-core/package.json ] && [ node_modules/.package-lock.json -nt package.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-ui-tests: npm is not installed (Debian: apt-get install nodejs npm); the browser test cannot run" >&2
  exit 0
fi
npm install --no-audit --no-fund --loglevel=error >/dev/null
