#!/usr/bin/env python3
"""Random LoRA adapters for a llama2.c checkpoint's shape (tests and benchmarks: trained
adapters behave the same for speed and exactness), as a PEFT folder or as a GGUF LoRA
file the way llama.cpp's convert_lora_to_gguf.py writes one.

    make-lora.py MODEL.bin OUT [--format peft|gguf] [--rank R] [--alpha A] [--std S] [--seed N]

PEFT: OUT/adapter_config.json and OUT/adapter_model.safetensors, Q/K rows in Hugging
Face's order. GGUF: OUT, tensors blk.N.<module>.weight.lora_a [ne: in, r] and .lora_b
[ne: r, out], f32, Q/K rows in the GGUF file's (llama.cpp's) order; apply it to a GGUF
base of the same checkpoint (llama.cpp's llama2c conversion or `inflight make-model`)."""
import argparse
import json
import os
import random
import struct


def shape_of(model_bin):
    with open(model_bin, "rb") as f:
        dim, hidden, layers, heads, kv_heads, _vocab, _seq = struct.unpack("<7i", f.read(28))
    hd = dim // heads
    return layers, {"q": (heads * hd, dim), "k": (kv_heads * hd, dim), "v": (kv_heads * hd, dim), "o": (dim, heads * hd),
                    "gate": (hidden, dim), "up": (hidden, dim), "down": (dim, hidden)}


PEFT = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
        "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
GGUF = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output", "gate": "ffn_gate", "up": "ffn_up",
        "down": "ffn_down"}


def updates(model_bin, rank, std, seed):
    """(layer, module, A [rank x in], B [out x rank]) with A and B as flat row-major lists."""
    layers, shapes = shape_of(model_bin)
    rng = random.Random(seed)
    for layer in range(layers):
        for module, (out_dim, in_dim) in shapes.items():
            a = [rng.gauss(0.0, std) for _ in range(rank * in_dim)]
            b = [rng.gauss(0.0, std) for _ in range(out_dim * rank)]
            yield layer, module, a, b, out_dim, in_dim


def write_peft(model_bin, out, rank, alpha, std, seed):
    header, blobs, offset = {}, [], 0
    for layer, module, a, b, out_dim, in_dim in updates(model_bin, rank, std, seed):
        base = f"base_model.model.model.layers.{layer}.{PEFT[module]}"
        for suffix, shape, values in ((".lora_A.weight", (rank, in_dim), a), (".lora_B.weight", (out_dim, rank), b)):
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
        json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": alpha,
                   "target_modules": [PEFT[m].split(".")[1] for m in PEFT]}, f)


def write_gguf(model_bin, out, rank, alpha, std, seed):
    def string(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    tensors = []
    for layer, module, a, b, out_dim, in_dim in updates(model_bin, rank, std, seed):
        name = f"blk.{layer}.{GGUF[module]}.weight.lora_"
        tensors.append((name + "a", (in_dim, rank), a))
        tensors.append((name + "b", (rank, out_dim), b))
    kv = [("general.architecture", 8, string("llama")), ("general.type", 8, string("adapter")),
          ("adapter.type", 8, string("lora")), ("adapter.lora.alpha", 6, struct.pack("<f", alpha))]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, kind, value in kv:
        head += string(key) + struct.pack("<I", kind) + value
    data, offset = [], 0
    for name, ne, values in tensors:
        head += string(name) + struct.pack("<I", 2) + struct.pack("<QQ", *ne) + struct.pack("<IQ", 0, offset)
        blob = struct.pack(f"<{len(values)}f", *values)
        blob += b"\0" * ((32 - len(blob) % 32) % 32)
        data.append(blob)
        offset += len(blob)
    head += b"\0" * ((32 - len(head) % 32) % 32)
    with open(out, "wb") as f:
        f.write(head + b"".join(data))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--format", choices=["peft", "gguf"], default="peft")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--alpha", type=float, default=16.0)
    p.add_argument("--std", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=7)
    o = p.parse_args()
    (write_peft if o.format == "peft" else write_gguf)(o.model, o.out, o.rank, o.alpha, o.std, o.seed)
