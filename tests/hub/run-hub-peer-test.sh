#!/usr/bin/env bash
# ctest entry: `inflight pull` / `generate` with hf: names against tests/hub/fake_hub.py,
# and the Hub's own JavaScript client (@huggingface/hub, scripts/setup-hub-tests.sh) on the
# same caches: each finds what the other downloaded, with no byte fetched twice.
#   run-hub-peer-test.sh INFLIGHT_BIN SHARED_DIR WORK_DIR
# Missing node, the npm package or stories260K: exit 77 (skipped), a failure when CI=true.
set -euo pipefail
INFLIGHT_BIN=$1 SHARED_DIR=$2 WORK=$3
here=$(cd "$(dirname "$0")" && pwd)

skip() {
  echo "hub peer test: $*"
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
}
command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
[ -f "$here/node_modules/@huggingface/hub/package.json" ] || skip "missing @huggingface/hub (run scripts/setup-hub-tests.sh)"
stories=$SHARED_DIR/models/stories260K
[ -f "$stories/stories260K.bin" ] || skip "missing $stories/stories260K.bin"

rm -rf "$WORK"
mkdir -p "$WORK/repos/test-org/stories-GGUF" "$WORK/repos/test-org/stories-hf"
# Two repositories of one trained model: GGUF files (two quantizations) and a Hugging Face folder.
"$INFLIGHT_BIN" make-model --from "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" --format gguf \
  --dtype q8_0 --out "$WORK/repos/test-org/stories-GGUF/stories260K-Q8_0.gguf" >/dev/null 2>&1
"$INFLIGHT_BIN" make-model --from "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" --format gguf \
  --dtype f32 --out "$WORK/repos/test-org/stories-GGUF/stories260K-F32.gguf" >/dev/null 2>&1
"$INFLIGHT_BIN" make-model --from "$stories/stories260K.bin" --format hf --dtype f32 \
  --out "$WORK/repos/test-org/stories-hf" >/dev/null 2>&1

python3 "$here/fake_hub.py" --root "$WORK/repos" >"$WORK/hub.port" 2>"$WORK/hub.log" &
hub_pid=$!
trap 'kill $hub_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q PORT "$WORK/hub.port" 2>/dev/null && break; sleep 0.1; done
export HF_ENDPOINT="http://127.0.0.1:$(awk '{print $2}' "$WORK/hub.port")"
served() { curl -s "$HF_ENDPOINT/_stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_served"])'; }
gen() { "$INFLIGHT_BIN" generate --prompt "Once upon a time" --max-tokens 24 --temperature 0 "$@" 2>"$WORK/gen.err"; }
fail() {
  echo "FAIL: $*"
  exit 1
}

# 1. inflight downloads the Q8_0 file; its text is the local file's, token for token.
export HF_HUB_CACHE=$WORK/cache-inflight
want=$(gen --set "model.path=$WORK/repos/test-org/stories-GGUF/stories260K-Q8_0.gguf")
got=$(gen --set model.path=hf:test-org/stories-GGUF:Q8_0)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "hf:test-org/stories-GGUF:Q8_0 generated '$got', the local file '$want'"
size=$(stat -c %s "$WORK/repos/test-org/stories-GGUF/stories260K-Q8_0.gguf")
[ "$(served)" = "$size" ] || fail "served $(served) bytes for a $size-byte file"
echo "ok: inflight generate from hf:test-org/stories-GGUF:Q8_0 ($size bytes downloaded once)"

# 2. The JS client finds inflight's download and fetches nothing.
check=$(node "$here/peer.mjs" check "$HF_ENDPOINT" "$HF_HUB_CACHE" test-org/stories-GGUF stories260K-Q8_0.gguf)
pointer=$(echo "$check" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pointer"])')
mine=$("$INFLIGHT_BIN" pull hf:test-org/stories-GGUF:Q8_0 2>/dev/null | awk '{print $2}')
[ "$pointer" = "$mine" ] || fail "the JS client's path $pointer, inflight's $mine"
echo "$check" | python3 -c '
import json, sys
c = json.load(sys.stdin)
revs = c["revisions"]
assert len(revs) == 1 and revs[0]["refs"] == ["main"], revs
files = {f["name"]: (f["size"], f["blob"]) for f in revs[0]["files"]}
assert files == {"stories260K-Q8_0.gguf": (int(sys.argv[1]), sys.argv[2])}, files
' "$size" "$(sha256sum "$WORK/repos/test-org/stories-GGUF/stories260K-Q8_0.gguf" | cut -d" " -f1)" ||
  fail "scanCacheDir saw $check"
[ "$(served)" = "$size" ] || fail "the JS client downloaded again: $(served) bytes served"
echo "ok: @huggingface/hub's scanCacheDir and downloadFileToCacheDir find inflight's file"

# 3. inflight finds what the JS client downloaded (a Hugging Face folder), offline.
export HF_HUB_CACHE=$WORK/cache-js
before=$(served)
folder=$(node "$here/peer.mjs" download "$HF_ENDPOINT" "$HF_HUB_CACHE" test-org/stories-hf)
[ "$(served)" -gt "$before" ] || fail "the JS client downloaded nothing"
before=$(served)
path=$(HF_HUB_OFFLINE=1 "$INFLIGHT_BIN" pull hf:test-org/stories-hf 2>/dev/null | awk '{print $2}')
[ "$path" = "$folder" ] || fail "inflight found $path offline, the JS client wrote $folder"
want=$(gen --set "model.path=$stories/stories260K.bin" --set "model.tokenizer=$stories/tok512.bin")
got=$(HF_HUB_OFFLINE=1 gen --set model.path=hf:test-org/stories-hf --set "model.tokenizer=$stories/tok512.bin")
[ "$got" = "$want" ] || fail "hf:test-org/stories-hf generated '$got', stories260K.bin '$want'"
got=$(gen --set model.path=hf:test-org/stories-hf --set "model.tokenizer=$stories/tok512.bin")  # online: asks, fetches nothing
[ "$got" = "$want" ] || fail "online, hf:test-org/stories-hf generated '$got'"
[ "$(served)" = "$before" ] || fail "inflight downloaded the JS client's files again"
echo "ok: inflight serves the Hugging Face folder the JS client downloaded, offline and online, fetching nothing"

# 3b. A PEFT LoRA adapter by its hf: name: its adapter files are fetched, and the engine
# loads the adapter over the model (an adapter missing or left unfetched fails the start).
mkdir -p "$WORK/repos/test-org/sql-lora"
python3 "$here/../../scripts/make-lora.py" "$stories/stories260K.bin" "$WORK/repos/test-org/sql-lora" >/dev/null
echo "not an adapter file" >"$WORK/repos/test-org/sql-lora/training_args.bin"
adapter=$("$INFLIGHT_BIN" pull hf:test-org/sql-lora 2>/dev/null | awk '{print $2}')
[ -f "$adapter/adapter_config.json" ] && [ -f "$adapter/adapter_model.safetensors" ] ||
  fail "hf:test-org/sql-lora pulled to '$adapter' without its adapter files"
[ ! -e "$adapter/training_args.bin" ] || fail "hf:test-org/sql-lora fetched training_args.bin"
gen --set "model.path=$stories/stories260K.bin" --set "model.tokenizer=$stories/tok512.bin" \
  --set 'lora.adapters={sql="hf:test-org/sql-lora"}' >/dev/null || fail "the hf: adapter did not load: $(cat "$WORK/gen.err")"
if gen --set "model.path=$stories/stories260K.bin" --set "model.tokenizer=$stories/tok512.bin" \
  --set 'lora.adapters={sql="hf:test-org/missing"}' >/dev/null; then fail "a missing hf: adapter loaded"; fi
grep -q "LoRA adapter sql" "$WORK/gen.err" || fail "unclear error: $(cat "$WORK/gen.err")"
echo "ok: a LoRA adapter by its hf: name, fetched and loaded"

# 4. Errors a user meets: an unknown repository, and offline with an empty cache.
if out=$("$INFLIGHT_BIN" pull hf:test-org/missing 2>&1); then fail "pulled a missing repository"; fi
echo "$out" | grep -q "no repository test-org/missing" || fail "unclear error: $out"
if out=$(HF_HUB_OFFLINE=1 HF_HUB_CACHE=$WORK/empty "$INFLIGHT_BIN" pull hf:test-org/stories-GGUF:F32 2>&1); then
  fail "offline pull with an empty cache succeeded"
fi
echo "$out" | grep -q "offline" || fail "unclear error: $out"
echo "ok: clear errors"

# 5. The Hub out of reach: an error naming it, or random weights with model.fallback = "dummy" (make run).
export HF_ENDPOINT=http://127.0.0.1:1 HF_HUB_CACHE=$WORK/empty
if out=$(gen --set model.path=hf:test-org/stories-GGUF:Q8_0 2>&1); then fail "generated without the Hub or a cache"; fi
grep -q "cannot reach http://127.0.0.1:1" "$WORK/gen.err" || fail "unclear error: $(cat "$WORK/gen.err")"
gen --set model.path=hf:test-org/stories-GGUF:Q8_0 --set model.fallback=dummy >/dev/null ||
  fail "model.fallback = dummy did not serve: $(cat "$WORK/gen.err")"
grep -q 'model.fallback = "dummy": serving random weights' "$WORK/gen.err" || fail "no notice: $(cat "$WORK/gen.err")"
echo "ok: the Hub out of reach"
