#!/usr/bin/env bash
# Packs what tests/gpu/device-checks.sh needs on a GPU machine into DIR (git-ignored):
# the binaries, the policy plugins, their shared libraries (../shared/tools/device-bundle.sh)
# and the shared models. Usage: tests/gpu/device-pack.sh BUILD DIR
set -euo pipefail
B=${1:?BUILD}; D=${2:?DIR}
SHARED=${INFLIGHT_SHARED:-$(cd "$(dirname "$0")/../../.." && pwd)/shared}
rm -rf "$D" && mkdir -p "$D/bin" "$D/plugins" "$D/shared"
bins=(inflight inflight_gpu_tests inflight_forward_dump inflight_gpu_attention_bench)
for b in "${bins[@]}"; do cp "$B/bin/$b" "$D/bin/"; strip "$D/bin/$b"; done
cp "$B"/plugins/*.so "$D/plugins/"
cp -r "$SHARED/models" "$D/shared/"
(cd "$D" && "$SHARED/tools/device-bundle.sh" "${bins[@]/#/bin/}")
du -sh "$D"
