#!/usr/bin/env bash
# ctest entry: a router in front of an engine, secured as docs/deployment.md says, on
# this machine (loopback), with certificates made here by openssl (never committed):
#   - the engine port speaks mutual TLS ([cluster] tls = true): the router with a
#     certificate from the cluster's CA is served; a router with a certificate from
#     another CA, or without TLS, is refused (its requests fail, its engine stays down);
#   - the router's edge speaks HTTPS (--ssl-certfile / --ssl-keyfile) and wants an API
#     key ([server] api_keys, api_key_file, --api-key): 401 without or with a wrong key,
#     200 with each key, /health open, /metrics closed; a WSS upgrade without the key is
#     a 401, with it a 101;
#   - [router] engines / policy in the TOML instead of --engines / --route-policy;
#   - SIGTERM: every process exits 0.
#   run-secure-cluster-test.sh INFLIGHT_BIN PLUGIN_DIR WORK_DIR
set -euo pipefail
INFLIGHT_BIN=$1 PLUGIN_DIR=$2 WORK=$3
here=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$here/../.." && pwd)
SHARED_DIR=unused
source "$SOURCE_DIR/tests/gateway/serve-lib.sh"

CLUSTER_TEST="secure cluster test"
FAIL_LOGS=$WORK
source "$here/cluster-lib.sh"

need curl openssl python3
rm -rf "$WORK"
mkdir -p "$WORK"

# --- throwaway certificates (docs/deployment.md makes them the same way) ---------------
cd "$WORK"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -days 2 -subj /CN=test-cluster-ca -keyout ca.key -out ca.pem 2>/dev/null
openssl req -x509 $ec -days 2 -subj /CN=other-ca -keyout other-ca.key -out other-ca.pem 2>/dev/null
sign() {  # sign NAME CA
  openssl req $ec -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  openssl x509 -req -days 2 -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" 2>/dev/null
}
sign engine ca
sign router ca
sign rogue other-ca
openssl req -x509 $ec -days 2 -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
  -keyout https.key -out https.pem 2>/dev/null
printf '# keys of the test\nsk-from-file\n' >keys.txt

model_toml() {
  cat <<TOML
[model]
format = "dummy"
[model.dummy]
hidden_size = 64
intermediate_size = 96
num_layers = 2
num_heads = 4
num_kv_heads = 2
max_position = 256
[engine]
kv_blocks = 64
threads = 1
[scheduler]
plugin_dir = "$PLUGIN_DIR"
TOML
}

{ model_toml; cat <<TOML
[server]
shutdown_grace_s = 1.0
[cluster]
bind = "127.0.0.1:0"
tls = true
cert_file = "engine.pem"
key_file = "engine.key"
ca_file = "ca.pem"
TOML
} >engine.toml

# router_toml NAME CERT TLS ENGINE_PORT KEYS: a router's deployment.
router_toml() {
  model_toml
  cat <<TOML
[server]
host = "127.0.0.1"
port = 0
shutdown_grace_s = 1.0
$5
[cluster]
tls = $3
cert_file = "$2.pem"
key_file = "$2.key"
ca_file = "ca.pem"
[router]
engines = ["127.0.0.1:$4"]
policy = "round_robin"
reconnect_interval_s = 0.2
TOML
}

start_engine engine.log - --config engine.toml
grep -q "serving the engine on tcp://127.0.0.1:$ENGINE_PORT .*mutual TLS" engine.log || fail "the engine does not speak mutual TLS"
engine_pid=$ENGINE_PID engine_port=$ENGINE_PORT

router_toml router router true "$engine_port" 'api_keys = ["sk-from-toml"]
api_key_file = "keys.txt"' >router.toml
start_router router.log --config router.toml --api-key sk-from-flag --ssl-certfile https.pem --ssl-keyfile https.key
router_pid=$ROUTER_PID
base=$ROUTER_URL
case "$base" in https://*) ;; *) fail "the router does not serve HTTPS: $base" ;; esac
grep -q "API keys: 3" router.log || fail "the router does not report its 3 API keys"
grep -q "routing policy round_robin" router.log || fail "[router] policy was not used"

# status [CURL ARGS...]: the HTTP status of a request over TLS, the server checked against https.pem.
status() { curl -sS -o /dev/null -w '%{http_code}' --cacert https.pem "$@"; }
auth() { echo "Authorization: Bearer $1"; }

[ "$(status "$base/health")" = 200 ] || fail "/health is not open"
[ "$(status "$base/v1/models")" = 401 ] || fail "/v1/models without a key is not a 401"
[ "$(status -H "$(auth sk-wrong)" "$base/v1/models")" = 401 ] || fail "a wrong key is not a 401"
[ "$(status "$base/metrics")" = 401 ] || fail "/metrics without a key is not a 401"
curl -sS -D headers.txt -o body.json --cacert https.pem "$base/v1/models"
grep -qi '^www-authenticate: Bearer' headers.txt || fail "the 401 has no WWW-Authenticate: Bearer"
python3 -c 'import json,sys; e=json.load(open("body.json"))["error"]; assert e["code"]=="invalid_api_key", e' ||
  fail "the 401 is not OpenAI's invalid_api_key envelope"
for key in sk-from-toml sk-from-file sk-from-flag; do
  [ "$(status -H "$(auth $key)" "$base/v1/models")" = 200 ] || fail "key $key is refused"
done

# The engine is reached over mutual TLS: up, and a completion runs on it.
up=""
for _ in $(seq 1 300); do
  up=$(curl -sS --cacert https.pem -H "$(auth sk-from-toml)" "$base/metrics" |
    sed -n "s/^inflight:router_engine_up{engine=\"127.0.0.1:$engine_port\"} //p")
  [ "$up" = 1 ] && break
  sleep 0.1
done
[ "$up" = 1 ] || fail "the router never reached the engine over mutual TLS"
curl -sS --cacert https.pem -H "$(auth sk-from-file)" -H 'content-type: application/json' "$base/v1/completions" \
  -d '{"prompt": "Hi", "max_tokens": 4, "temperature": 0, "ignore_eos": true}' >completion.json
python3 -c 'import json; d=json.load(open("completion.json")); assert d["usage"]["completion_tokens"]==4, d' ||
  fail "a completion through the router failed: $(cat completion.json)"
curl -sS -N --cacert https.pem -H "$(auth sk-from-flag)" -H 'content-type: application/json' "$base/v1/completions" \
  -d '{"prompt": "Hi", "max_tokens": 4, "stream": true}' >stream.txt
grep -q '^data: \[DONE\]' stream.txt || fail "an SSE stream over HTTPS did not end with [DONE]"

# WSS: the upgrade inside TLS is refused without the key (401), switched with it (101).
wss_status() {
  python3 - "$base" "$1" <<'PY'
import socket, ssl, sys
url, key = sys.argv[1], sys.argv[2]
host, port = url.split("//")[1].split(":")
ctx = ssl.create_default_context(cafile="https.pem")
with socket.create_connection((host, int(port)), timeout=30) as raw:
    with ctx.wrap_socket(raw, server_hostname=host) as s:
        auth = f"Authorization: Bearer {key}\r\n" if key else ""
        s.sendall((f"GET /v1/ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{auth}\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        print(head.split(b" ")[1].decode())
PY
}
[ "$(wss_status "")" = 401 ] || fail "a WSS upgrade without the key was not refused with 401"
[ "$(wss_status sk-wrong)" = 401 ] || fail "a WSS upgrade with a wrong key was not refused with 401"
[ "$(wss_status sk-from-toml)" = 101 ] || fail "a WSS upgrade with the key was not switched"

# Routers an engine must refuse: a certificate from another CA, and no TLS at all. No
# keys and plain HTTP on these: only the engine port is under test. They knock on the
# engine the good router uses: a refused handshake must not disturb its connection
# (CAF 0.17's OpenSSL module leaves OpenSSL's error queue dirty after one; the binary
# clears it before each TLS call: apps/inflight/openssl_error_queue.cpp).
connects() {  # the good router's connection count to the engine
  curl -sS --cacert https.pem -H "$(auth sk-from-toml)" "$base/metrics" |
    sed -n "s/^inflight:router_engine_connects_total{engine=\"127.0.0.1:$engine_port\"} //p"
}
connects_before=$(connects)
[ -n "$connects_before" ] || fail "the router's /metrics has no router_engine_connects_total"
good_completion() {
  curl -sS -o "$1" -w '%{http_code}' --cacert https.pem -H "$(auth sk-from-toml)" \
    -H 'content-type: application/json' "$base/v1/completions" -d '{"prompt": "Hi", "max_tokens": 2}'
}
for bad in rogue plain rogue plain; do
  if [ $bad = rogue ]; then router_toml $bad rogue true "$engine_port" "" >$bad.toml
  else router_toml $bad router false "$engine_port" "" >$bad.toml; fi
  start_router $bad.log --config $bad.toml
  bad_pid=$ROUTER_PID
  for _ in 1 2 3; do
    code=$(curl -sS -o $bad-completion.json -w '%{http_code}' -H 'content-type: application/json' \
      "$ROUTER_URL/v1/completions" -d '{"prompt": "Hi", "max_tokens": 2}')
    [ "$code" = 503 ] || fail "router $bad got $code from an engine that should refuse it: $(cat $bad-completion.json)"
    # The good router is served between the refused attempts.
    code=$(good_completion between.json)
    [ "$code" = 200 ] || fail "after router $bad was refused, the good router got $code: $(cat between.json)"
  done
  up=$(curl -sS "$ROUTER_URL/metrics" | sed -n "s/^inflight:router_engine_up{engine=\"127.0.0.1:$engine_port\"} //p")
  [ "$up" = 0 ] || fail "router $bad shows the engine up"
  stop_process "$bad_pid" "router $bad"
done
# The good router never lost its engine.
up=$(curl -sS --cacert https.pem -H "$(auth sk-from-toml)" "$base/metrics" |
  sed -n "s/^inflight:router_engine_up{engine=\"127.0.0.1:$engine_port\"} //p")
[ "$up" = 1 ] || fail "the good router shows its engine down after the refused routers"
[ "$(connects)" = "$connects_before" ] || fail "the good router lost its engine meanwhile ($connects_before, then $(connects) connections)"
code=$(good_completion after.json)
[ "$code" = 200 ] || fail "the router lost its engine: $code $(cat after.json)"

stop_process "$router_pid" "the router"
stop_process "$engine_pid" "the engine"
trap - EXIT
echo "secure cluster test: mutual TLS, HTTPS, WSS, API keys, [router] and shutdown: ok"
