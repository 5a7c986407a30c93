#!/usr/bin/env bash
# Installs what the gateway tests drive and check `inflight serve` with (tests/gateway):
# the official openai and Anthropic npm clients, the OpenAI Agents SDK (@openai/agents, with
# zod), and ajv, which validates structured outputs and the responses against OpenAI's schemas.
# Idempotent and quiet: nothing happens when they are installed.
# Without npm it only warns: the tests then skip, or fail when CI=true.
set -euo pipefail
cd "$(dirname "$0")/../tests/gateway"
if [ -f node_modules/openai/package.json ] && [ -f node_modules/ajv/package.json ] && [ -f node_modules/ajv-formats/package.json ] &&
  [ -f node_modules/@anthropic-ai/sdk/package.json ] && [ -f node_modules/@openai/agents/package.json ] &&
  [ node_modules/.package-lock.json -nt package.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-gateway-tests: npm is not installed (Debian: apt-get install nodejs npm); the openai client test cannot run" >&2
  exit 0
fi
npm install --no-audit --no-fund --loglevel=error >/dev/null
