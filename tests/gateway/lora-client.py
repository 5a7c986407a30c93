#!/usr/bin/env python3
"""LoRA adapters through the HTTP API: a PEFT adapter `sql` over stories260K (written by
make_adapter), chosen by the `model` field: its text differs from the base's and is the
same each time, /v1/models lists it with its parent, the prefix cache never hands the
base's blocks to the adapter, an unknown name is a 404.
    lora-client.py make-adapter MODEL.bin OUT_DIR [RANK [SEED]]   (a llama2.c checkpoint's shape)
    lora-client.py check PORT"""
import json
import random
import struct
import sys
import urllib.error
import urllib.request


def make_adapter(model_bin, out, rank=8, seed=7):
    import os
    with open(model_bin, "rb") as f:
        dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", f.read(28))
    head_dim = dim // heads
    shapes = {"q_proj": (heads * head_dim, dim), "k_proj": (kv_heads * head_dim, dim), "v_proj": (kv_heads * head_dim, dim),
              "o_proj": (dim, heads * head_dim), "gate_proj": (hidden, dim), "up_proj": (hidden, dim), "down_proj": (dim, hidden)}
    rng = random.Random(seed)
    header, blobs, offset = {}, [], 0
    for layer in range(layers):
        for module, (out_dim, in_dim) in shapes.items():
            part = "mlp" if module in ("gate_proj", "up_proj", "down_proj") else "self_attn"
            base = f"base_model.model.model.layers.{layer}.{part}.{module}"
            for suffix, shape in ((".lora_A.weight", (rank, in_dim)), (".lora_B.weight", (out_dim, rank))):
                values = [rng.gauss(0.0, 0.3) for _ in range(shape[0] * shape[1])]
                blob = struct.pack(f"<{len(values)}f", *values)
                header[base + suffix] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
                blobs.append(blob)
                offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "adapter_model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    with open(os.path.join(out, "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": 16, "target_modules": list(shapes)}, f)


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
    print(f"ok: the adapter writes its own text ({sql_text!r} vs {base_text!r}), never from the base's cache, "
          "listed with its parent; 404 for an unknown name")


if __name__ == "__main__":
    if sys.argv[1] == "make-adapter":
        make_adapter(sys.argv[2], sys.argv[3], *(int(v) for v in sys.argv[4:6]))
    else:
        check(int(sys.argv[2]))
