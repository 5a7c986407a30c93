#!/usr/bin/env python3
"""LoRA adapters through the HTTP API: a PEFT adapter `sql` over stories260K (written by
scripts/make-lora.py), chosen by the `model` field: its text differs from the base's and
is the same each time, /v1/models lists it with its parent, the prefix cache never hands
the base's blocks to the adapter, an unknown name is a 404.
    lora-client.py PORT"""
import json
import sys
import urllib.error
import urllib.request


def call(port, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def check(port):
    status, models = call(port, "/v1/models")
    assert status == 200, models
    ids = [m["id"] for m in models["data"]]
    assert len(ids) == 2 and ids[1] == "sql", ids
    base = ids[0]
    assert models["data"][1]["parent"] == base, models["data"][1]
    prompt = "Once upon a time, there was a little girl named Lily. She loved to play"

    def complete(model):
        status, out = call(port, "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": 16, "temperature": 0})
        assert status == 200, out
        return out["choices"][0]["text"], out["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)

    base_text, _ = complete(base)
    sql_text, sql_cached = complete("sql")
    assert sql_text != base_text, f"the adapter wrote the base's text: {sql_text!r}"
    assert sql_cached == 0, f"the adapter took {sql_cached} prompt tokens from the base's cache"
    again, again_cached = complete("sql")
    assert again == sql_text, "the adapter's greedy text changed"
    assert again_cached > 0, "the adapter's own cached prefix was not reused"
    assert complete(base)[0] == base_text, "the base's text changed after the adapter ran"
    status, chat = call(port, "/v1/chat/completions", {"model": "sql", "messages": [{"role": "user", "content": "hi"}],
                                                         "max_tokens": 4})
    assert status == 200 and chat["model"] == "sql", chat
    status, err = call(port, "/v1/completions", {"model": "nosql", "prompt": "x"})
    assert status == 404 and err["error"]["code"] == "model_not_found", err
    status, one = call(port, "/v1/models/sql")
    assert status == 200 and one["parent"] == base, one
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as r:
        metrics = r.read().decode()
    counted = [l for l in metrics.splitlines() if l.startswith("inflight:lora_requests_total{") and 'lora_name="sql"' in l]
    assert counted and float(counted[0].split()[-1]) == 3, counted  # 2 completions + 1 chat
    assert 'max_lora="1"' in metrics and "inflight:lora_requests_info{" in metrics, "no lora_requests_info gauge"
    print(f"ok: the adapter writes its own text ({sql_text!r} vs {base_text!r}), never from the base's cache, "
          "listed with its parent; 404 for an unknown name")


if __name__ == "__main__":
    check(int(sys.argv[1]))
