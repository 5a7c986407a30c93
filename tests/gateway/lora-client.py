#!/usr/bin/env python3
"""LoRA adapters through the HTTP API: a PEFT adapter `sql` over stories260K (written by
scripts/make-lora.py), chosen by the `model` field: its text differs from the base's and
is the same each time, /v1/models lists it with its parent, the prefix cache never hands
the base's blocks to the adapter, an unknown name is a 404; adapters loaded and unloaded
at run time (vLLM's /v1/load_lora_adapter bodies); embeddings, speculative decoding and
grammars through adapters; the step feed names a row's adapter. The
texts it saw go to WORK/texts.json; with --lru (a server holding one adapter in memory,
one adapter per step) concurrent requests over two adapters and the base give them again.
    lora-client.py PORT WORK [--lru]"""
import json
import os
import sys
import threading
import urllib.error
import urllib.request

PROMPT = "Once upon a time, there was a little girl named Lily. She loved to play"


def call(port, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            data = r.read().decode()
            return r.status, json.loads(data) if r.headers.get_content_type() == "application/json" else data
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def complete(port, model, prompt=PROMPT):
    status, out = call(port, "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": 16, "temperature": 0})
    assert status == 200, out
    return out["choices"][0]["text"], out["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)


def embed(port, model):
    status, out = call(port, "/v1/embeddings", {"model": model, "input": PROMPT})
    assert status == 200, out
    assert out["model"] == model, out["model"]
    return out["data"][0]["embedding"]


def check(port):
    status, models = call(port, "/v1/models")
    assert status == 200, models
    ids = [m["id"] for m in models["data"]]
    assert len(ids) == 2 and ids[1] == "sql", ids
    base = ids[0]
    assert models["data"][1]["parent"] == base, models["data"][1]

    def complete(model):
        return globals()["complete"](port, model)

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
    return base, base_text, sql_text


def check_runtime(port, work, base, base_text, sql_text):
    """Loading and unloading at run time, and embeddings through adapters."""
    def load(name, path):
        return call(port, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": path})

    status, out = load("sql2", os.path.join(work, "sql"))
    assert status == 200 and "sql2" in out, out
    ids = [m["id"] for m in call(port, "/v1/models")[1]["data"]]
    assert ids == [base, "sql", "sql2"], ids
    text, cached = complete(port, "sql2")
    assert text == sql_text, f"the same adapter under another name wrote {text!r}, not {sql_text!r}"
    assert cached == 0, f"a new registration took {cached} prompt tokens from sql's cache"
    status, out = load("sql2", os.path.join(work, "sql"))
    assert status == 400 and "already loaded" in out["error"]["message"], out
    status, out = load("broken", os.path.join(work, "no-such-adapter"))
    assert status == 400 and out["error"]["param"] == "lora_path", out
    status, out = load(base, os.path.join(work, "sql"))
    assert status == 400 and out["error"]["param"] == "lora_name", out
    status, out = load("poem", os.path.join(work, "poem"))
    assert status == 200, out
    poem_text, _ = complete(port, "poem")
    assert poem_text not in (sql_text, base_text), poem_text

    status, out = call(port, "/v1/unload_lora_adapter", {"lora_name": "sql2"})
    assert status == 200 and "sql2" in out, out
    status, out = call(port, "/v1/completions", {"model": "sql2", "prompt": "x"})
    assert status == 404 and out["error"]["code"] == "model_not_found", out
    status, out = call(port, "/v1/unload_lora_adapter", {"lora_name": "sql2"})
    assert status == 404, out
    status, out = call(port, "/v1/unload_lora_adapter", {})
    assert status == 400 and out["error"]["param"] == "lora_name", out
    ids = [m["id"] for m in call(port, "/v1/models")[1]["data"]]
    assert ids == [base, "sql", "poem"], ids

    e_base, e_sql, e_poem = embed(port, base), embed(port, "sql"), embed(port, "poem")
    assert embed(port, "sql") == e_sql, "an adapter's embedding changed"
    assert e_sql != e_base and e_poem != e_sql, "the adapter did not change the embedding"
    # Speculative decoding through an adapter: the adapter's own greedy text, drafts checked.
    copy = PROMPT + " One day, she went to the park. " + PROMPT
    plain, _ = complete(port, "sql", copy)
    status, out = call(port, "/v1/completions", {"model": "sql", "prompt": copy, "max_tokens": 16, "temperature": 0,
                                                  "speculative": {"method": "ngram", "num_speculative_tokens": 4}})
    assert status == 200, out
    assert out["choices"][0]["text"] == plain, "speculation changed the adapter's greedy text"
    details = out["usage"].get("completion_tokens_details", {})
    drafted = details.get("accepted_prediction_tokens", 0) + details.get("rejected_prediction_tokens", 0)
    assert drafted > 0, f"nothing was drafted: {out['usage']}"
    # A grammar through an adapter: the constraint holds whatever the adapter prefers.
    status, out = call(port, "/v1/completions", {
        "model": "poem", "prompt": PROMPT, "max_tokens": 8, "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"enum": ["yes", "no"]}}}})
    assert status == 200, out
    assert json.loads(out["choices"][0]["text"]) in ("yes", "no"), out["choices"][0]
    assert out["choices"][0]["finish_reason"] == "stop", out["choices"][0]

    # The engine's step feed names each row's adapter (the web UI's step view shows it).
    seen = []
    feed = urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/engine/events", timeout=30)

    def read_feed():
        for line in feed:
            if line.startswith(b"data: "):
                event = json.loads(line[6:])
                seen.extend(q.get("adapter", "") for q in event.get("seqs", []))
                if "poem" in seen:
                    return
    reader = threading.Thread(target=read_feed)
    reader.start()
    complete(port, "poem")
    reader.join(timeout=30)
    feed.close()
    assert "poem" in seen, f"no step row named the adapter: {sorted(set(seen))}"
    with open(os.path.join(work, "texts.json"), "w") as f:
        json.dump({"base": [base, base_text], "sql": sql_text, "poem": poem_text}, f)
    print(f"ok: sql2 loaded ({text!r}), refused twice, unloaded (404 after); poem {poem_text!r}; embeddings per "
          f"adapter; speculation ({drafted} drafted) and a grammar through adapters; the step feed names adapters")


def check_lru(port, work):
    """One adapter in memory, one per step: concurrent requests over both and the base."""
    with open(os.path.join(work, "texts.json")) as f:
        seen = json.load(f)
    base, base_text = seen["base"]
    want = {base: base_text, "sql": seen["sql"], "poem": seen["poem"]}
    order = ["sql", "poem", base, "poem", "sql", base, "sql", "poem"]
    got = [None] * len(order)

    def run(i):
        got[i] = complete(port, order[i])[0]
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(order))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, text in zip(order, got):
        assert text == want[name], f"{name} wrote {text!r} with one adapter in memory, {want[name]!r} without"
    for name in ["poem", "sql", "poem"]:  # one after the other: each read again from its folder
        assert complete(port, name)[0] == want[name], name
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as r:
        metrics = r.read().decode()
    assert 'max_lora="1"' in metrics, "lora_requests_info does not show max_loras_per_step"
    print(f"ok: {len(order)} concurrent requests over two adapters and the base, one adapter in memory and per step")


def check_models(port, work):
    """[[models]]: `sql` belongs to `stories`; naming it loads that model (one model at a time)."""
    with open(os.path.join(work, "texts.json")) as f:
        seen = json.load(f)
    status, models = call(port, "/v1/models")
    assert status == 200, models
    entry = {m["id"]: m for m in models["data"]}
    assert entry["sql"]["parent"] == "stories", models
    complete(port, "noise")  # the other model first: stories is unloaded (max_loaded_models = 1)
    text, _ = complete(port, "sql")
    assert text == seen["sql"], f"sql over stories wrote {text!r}, alone {seen['sql']!r}"
    base_text, _ = complete(port, "stories")
    assert base_text == seen["base"][1], base_text
    status, out = call(port, "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": os.path.join(work, "sql")})
    assert status == 400 and "[models.lora]" in out["error"]["message"], out
    print(f"ok: several models, sql over stories ({text!r}) loads it on demand and writes its own text")


if __name__ == "__main__":
    port, work = int(sys.argv[1]), sys.argv[2]
    if "--lru" in sys.argv:
        check_lru(port, work)
    elif "--models" in sys.argv:
        check_models(port, work)
    else:
        check_runtime(port, work, *check(port))
