#!/usr/bin/env python3
"""Compares inflight's forward pass with Hugging Face transformers' LlamaForCausalLM.

Writes a model folder with `inflight make-model --format hf` (stories260K converted, or
random weights of a named shape), then for a few prompts given as token ids:

  * fp32, CPU backend: inflight's greedy tokens must equal transformers' greedy
    generate(), and its logits match to fp32 tolerance;
  * bf16, CUDA backend (when built and a GPU is present): every step's logits are
    compared with transformers' fp32 logits on the same tokens (teacher forcing): the
    top-1 must agree (or tie within bf16 tolerance) and the error stay within it. The
    same numbers for transformers' own bf16 run are printed beside them;
  * with --weight-dtype (q8_0, q4_k_m, ...: the matrices converted after loading, as
    model.weight_dtype does): the CPU backend on the quantized weights gives the
    format's own error against transformers' fp32 (printed); the CUDA backend on the
    same weights (--cuda-weights, default "file": the blocks as they are) must match the
    CPU's logits step by step within --bf16-tol while their tokens agree, and its error
    against fp32 stay within the CPU's plus --bf16-tol;
  * with --fp8: the CUDA backend with the layers' matrices in FP8 E4M3
    (engine.cuda_weights = "fp8") against transformers' fp32: top-1 agreement (or a tie
    within --fp8-tol) and the error within --fp8-tol (a first bound, not yet measured).

inflight's side comes from build/bin/inflight_forward_dump (tests/gpu/forward_dump.cpp).
Exit status 0 when every check passes. Needs torch and transformers.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import torch
from transformers import LlamaForCausalLM


def run_inflight(dump, model_dir, backend, prompts, steps, prefill_attention="mma", decode_attention="grouped",
                 weight_dtype=None, cuda_weights="expand"):
    cmd = [dump, "--model", model_dir, "--backend", backend, "--steps", str(steps)]
    if backend == "cuda":
        cmd += ["--prefill-attention", prefill_attention, "--decode-attention", decode_attention,
                "--cuda-weights", cuda_weights]
    if weight_dtype:
        cmd += ["--weight-dtype", weight_dtype]
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(str(t) for t in p)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["results"]


def reference_logits(model, ids, device):
    """Logits at every position of `ids` (row i predicts token i + 1), as fp32 on the CPU."""
    with torch.no_grad():
        return model(torch.tensor([ids], device=device)).logits[0].float().cpu()


def compare_steps(results, model, device, tol):
    """Per step: max |error| relative to the row's scale, and top-1 agreement."""
    worst, num_steps, num_agree = 0.0, 0, 0
    for r in results:
        full = r["prompt"] + r["tokens"]
        ref = reference_logits(model, full[:-1], device)
        for step, row in enumerate(r["logits"]):
            want = ref[len(r["prompt"]) - 1 + step]
            got = torch.tensor(row)
            scale = 1.0 + want.abs().max().item()
            worst = max(worst, (got - want).abs().max().item() / scale)
            top, mine = int(want.argmax()), int(got.argmax())
            num_steps += 1
            num_agree += int(top == mine or (want[top] - want[mine]).item() <= tol * scale)
    return worst, num_agree, num_steps


def compare_runs(got_runs, want_runs, tol):
    """Two inflight runs step by step while their tokens agree (a step's logits depend on
    the tokens before it): max |error| relative to the row's scale, and top-1 agreement."""
    worst, num_steps, num_agree = 0.0, 0, 0
    for g, w in zip(got_runs, want_runs):
        for step, (grow, wrow) in enumerate(zip(g["logits"], w["logits"])):
            got, want = torch.tensor(grow), torch.tensor(wrow)
            scale = 1.0 + want.abs().max().item()
            worst = max(worst, (got - want).abs().max().item() / scale)
            top, mine = int(want.argmax()), int(got.argmax())
            num_steps += 1
            num_agree += int(top == mine or (want[top] - want[mine]).item() <= tol * scale)
            if g["tokens"][step] != w["tokens"][step]:
                break
    return worst, num_agree, num_steps


def greedy_tokens(model, prompt, steps, device):
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt], device=device), max_new_tokens=steps, do_sample=False,
                             min_new_tokens=steps, pad_token_id=0)
    return out[0, len(prompt):].tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="inflight build folder (bin/inflight, bin/inflight_forward_dump)")
    ap.add_argument("--from", dest="source", default=os.path.join(os.path.dirname(__file__),
                                                                  "../../../shared/models/stories260K/stories260K.bin"),
                    help="llama2.c checkpoint to convert ('' = random weights of --shape)")
    ap.add_argument("--shape", default="bench-20M", help="named shape for random weights")
    ap.add_argument("--vocab-size", type=int, default=2048, help="random weights: vocabulary size")
    ap.add_argument("--steps", type=int, default=16, help="greedy tokens per prompt")
    ap.add_argument("--cuda", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--prefill-attention", choices=["tiled", "mma"], default="mma",
                    help="the CUDA backend's prefill attention kernel (engine.cuda_prefill_attention)")
    ap.add_argument("--decode-attention", choices=["grouped", "mma", "per_head"], default="grouped",
                    help="the CUDA backend's decode attention kernel (engine.cuda_decode_attention)")
    ap.add_argument("--bf16-tol", type=float, default=0.05, help="relative logit tolerance of the bf16 GPU path")
    ap.add_argument("--weight-dtype", default=None,
                    help="also compare the matrices converted to this type or recipe (q8_0, q4_0, q4_k_m, ...)")
    ap.add_argument("--cuda-weights", choices=["expand", "file"], default="file",
                    help="with --weight-dtype: engine.cuda_weights of the CUDA run")
    ap.add_argument("--fp8", action="store_true", help="also run the CUDA backend with engine.cuda_weights = fp8")
    ap.add_argument("--fp8-tol", type=float, default=0.1, help="relative logit tolerance of the fp8 GPU path")
    args = ap.parse_args()

    inflight = os.path.join(args.build, "bin", "inflight")
    dump = os.path.join(args.build, "bin", "inflight_forward_dump")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "model")
        cmd = [inflight, "make-model", "--format", "hf", "--dtype", "f32", "--out", folder]
        if args.source:
            cmd += ["--from", args.source]
        else:
            cmd += ["--shape", args.shape, "--vocab-size", str(args.vocab_size), "--max-seq-len", "512"]
        subprocess.run(cmd, check=True)
        model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
        vocab = model.config.vocab_size
        rng = random.Random(0)
        # The longest prompt spans several 64-key tiles of the tensor-core prefill kernel.
        prompts = [[1], [1] + [rng.randrange(3, vocab) for _ in range(6)], [1] + [rng.randrange(3, vocab) for _ in range(32)],
                   [1] + [rng.randrange(3, vocab) for _ in range(150)]]

        cpu = run_inflight(dump, folder, "cpu", prompts, args.steps)
        for p, r in zip(prompts, cpu):
            want = greedy_tokens(model, p, args.steps, "cpu")
            same = want == r["tokens"]
            ok &= same
            print(f"fp32 cpu   prompt[{len(p)}]: greedy {'equal' if same else 'DIFFER'}: hf {want} inflight {r['tokens']}")
        worst, agree, steps = compare_steps(cpu, model, "cpu", 1e-4)
        ok &= worst <= 1e-3 and agree == steps
        print(f"fp32 cpu   logits: worst relative error {worst:.2e}, top-1 {agree}/{steps}")

        use_cuda = args.cuda == "on" or (args.cuda == "auto" and torch.cuda.is_available())
        if use_cuda:
            gpu = run_inflight(dump, folder, "cuda", prompts, args.steps, args.prefill_attention, args.decode_attention)
            ref = model.to("cuda")
            worst, agree, steps = compare_steps(gpu, ref, "cuda", args.bf16_tol)
            ok &= worst <= args.bf16_tol and agree == steps
            print(f"bf16 cuda ({args.prefill_attention} prefill, {args.decode_attention} decode) logits vs hf fp32: worst relative error {worst:.2e}, top-1 {agree}/{steps}")
            hf_bf16 = LlamaForCausalLM.from_pretrained(folder, torch_dtype=torch.bfloat16).to("cuda").eval()
            hf_runs = []
            for p in prompts:
                toks = greedy_tokens(hf_bf16, p, args.steps, "cuda")
                full = p + toks
                logits = reference_logits(hf_bf16, full[:-1], "cuda")[len(p) - 1:]
                hf_runs.append({"prompt": p, "tokens": toks, "logits": logits.tolist()})
            worst_hf, agree_hf, steps_hf = compare_steps(hf_runs, ref, "cuda", args.bf16_tol)
            print(f"bf16 hf    logits vs hf fp32: worst relative error {worst_hf:.2e}, top-1 {agree_hf}/{steps_hf}"
                  " (for scale)")
        else:
            print("cuda: skipped (no GPU or --cuda off)")

        if args.weight_dtype:
            wd = args.weight_dtype
            qcpu = run_inflight(dump, folder, "cpu", prompts, args.steps, weight_dtype=wd)
            cpu_worst, cpu_agree, cpu_steps = compare_steps(qcpu, model.to("cpu"), "cpu", args.bf16_tol)
            print(f"{wd} cpu   logits vs hf fp32: worst relative error {cpu_worst:.2e}, top-1 {cpu_agree}/{cpu_steps}"
                  " (the format's own error)")
            if use_cuda:
                qgpu = run_inflight(dump, folder, "cuda", prompts, args.steps, args.prefill_attention,
                                    args.decode_attention, weight_dtype=wd, cuda_weights=args.cuda_weights)
                worst, agree, steps = compare_runs(qgpu, qcpu, args.bf16_tol)
                ok &= worst <= args.bf16_tol and agree == steps
                print(f"{wd} cuda ({args.cuda_weights}) logits vs {wd} cpu: worst relative error {worst:.2e}, "
                      f"top-1 {agree}/{steps}")
                gpu_worst, gpu_agree, gpu_steps = compare_steps(qgpu, model.to("cuda"), "cuda", args.bf16_tol)
                ok &= gpu_worst <= cpu_worst + args.bf16_tol
                print(f"{wd} cuda ({args.cuda_weights}) logits vs hf fp32: worst relative error {gpu_worst:.2e}, "
                      f"top-1 {gpu_agree}/{gpu_steps} (within the cpu's {cpu_worst:.2e} + {args.bf16_tol})")
        if args.fp8 and use_cuda:
            f8 = run_inflight(dump, folder, "cuda", prompts, args.steps, args.prefill_attention, args.decode_attention,
                              cuda_weights="fp8")
            worst, agree, steps = compare_steps(f8, model.to("cuda"), "cuda", args.fp8_tol)
            ok &= worst <= args.fp8_tol and agree == steps
            print(f"fp8 cuda   logits vs hf fp32: worst relative error {worst:.2e}, top-1 {agree}/{steps} "
                  f"(tolerance {args.fp8_tol})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
