"""The TunableOp blog's Example 2 on our GPUs: an LLM's tokens/s through HF transformers `generate`
with a static KV cache, greedy, prompt of 128 tokens (a multiple of 8, as the blog pads it), bf16,
random weights with a real model's exact configuration (built from transformers' config classes;
nothing is downloaded).

    python bench/example2/hf_generate.py OUT.json --model gemma-2b [--batch 1] [--new-tokens 256]
                                          [--no-compile] [--profile] [--patch]

Run it plain, under `tunable run --use` (after `--record` and `tunable tune-file`), or with
PYTORCH_TUNABLEOP_ENABLED=1: bench/example2/run.sh does all of them in one call. Reports prefill and
decode tokens/s (median of 3 runs), the first 32 generated token ids of sequence 0 (to compare runs),
the logits of the first step, and with --profile the GPU time per decoded token by kernel kind.
"""
import argparse
import json
import os
import re
import statistics
import time

import torch
import transformers

CONFIGS = {
    # google/gemma-2b
    "gemma-2b": lambda: transformers.GemmaConfig(
        vocab_size=256000, hidden_size=2048, intermediate_size=16384, num_hidden_layers=18,
        num_attention_heads=8, num_key_value_heads=1, head_dim=256, hidden_act="gelu_pytorch_tanh",
        hidden_activation="gelu_pytorch_tanh", max_position_embeddings=8192, rms_norm_eps=1e-6,
        rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=2, eos_token_id=1, pad_token_id=0),
    # meta-llama/Meta-Llama-3-8B
    "llama-3-8b": lambda: transformers.LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001),
}

KINDS = [("gemm", re.compile(r"gemm|gemv|nvjet|cutlass|xmma|skinny|splitk|sm90_|cublas", re.I)),
         ("attention", re.compile(r"attn|attention|flash|fmha|sdpa", re.I)),
         ("norm", re.compile(r"norm", re.I)),
         ("activation", re.compile(r"gelu|silu|act_and_mul|mul", re.I))]


def kind_of(name):
    for k, rx in KINDS:
        if rx.search(name):
            return k
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--model", default="gemma-2b", choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true", help="generate(disable_compile=True)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--patch", action="store_true", help="tunable.hf.patch(model): fused add + norm, act-and-mul")
    args = ap.parse_args()

    torch.manual_seed(0)  # the same random weights and prompt in every process
    cfg = CONFIGS[args.model]()
    with torch.device("cuda"):
        torch.set_default_dtype(torch.bfloat16)
        model = transformers.AutoModelForCausalLM.from_config(cfg)
        torch.set_default_dtype(torch.float32)
    model.eval()
    if args.patch:
        import tunable
        tunable.hf.patch(model)
    plen = (args.prompt_len + 7) // 8 * 8
    ids = torch.randint(3, cfg.vocab_size, (args.batch, plen), device="cuda")
    mask = torch.ones_like(ids)
    gen_kwargs = dict(do_sample=False, cache_implementation="static", pad_token_id=cfg.pad_token_id or 0,
                      eos_token_id=None)
    if args.no_compile:
        gen_kwargs["disable_compile"] = True

    def generate(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                 return_dict_in_generate=True, output_logits=(n == 1), **gen_kwargs)
        torch.cuda.synchronize()
        return time.perf_counter() - t0, out

    t_warm = time.perf_counter()
    generate(args.new_tokens)  # warmup: compiles (transformers 5 compiles static-cache decoding), tunes in --tune
    generate(1)
    warm_s = time.perf_counter() - t_warm
    prefill, full, first_ids, logits0 = [], [], None, None
    for _ in range(args.runs):
        t1, o1 = generate(1)
        tn, on = generate(args.new_tokens)
        prefill.append(t1)
        full.append(tn)
        first_ids = on.sequences[0, plen:plen + 32].tolist()
        logits0 = o1.logits[0][0].float()
    t1, tn = statistics.median(prefill), statistics.median(full)
    decode_s = (tn - t1) / (args.new_tokens - 1)
    res = dict(model=args.model, batch=args.batch, prompt_len=plen, new_tokens=args.new_tokens,
               compile=not args.no_compile, device=torch.cuda.get_device_name(), torch=torch.__version__,
               transformers=transformers.__version__, preload=os.environ.get("LD_PRELOAD", ""),
               tunableop=os.environ.get("PYTORCH_TUNABLEOP_ENABLED", "0"), patched=args.patch, warmup_s=warm_s,
               prefill_s=t1, prefill_tok_s=args.batch * plen / t1, decode_ms_per_step=decode_s * 1e3,
               decode_tok_s=args.batch / decode_s, runs_prefill=prefill, runs_full=full, first_ids=first_ids,
               logits0_top=torch.topk(logits0, 5).indices.tolist())
    torch.save(logits0.cpu(), args.out + ".logits0.pt")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        steps = 64
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            generate(steps)
        by_kind = {}
        for e in prof.key_averages():
            t = getattr(e, "device_time_total", None)
            if t is None:
                t = getattr(e, "cuda_time_total", 0)
            if t and e.device_type == torch.autograd.DeviceType.CUDA:
                by_kind[kind_of(e.key)] = by_kind.get(kind_of(e.key), 0) + t
        res["profile_us_per_step"] = {k: v / steps for k, v in sorted(by_kind.items())}
        res["profile_wall_ms_per_step"] = decode_s * 1e3
    json.dump(res, open(args.out, "w"), indent=1)
    print(f"{args.model} batch {args.batch} compile={not args.no_compile} patch={args.patch}: prefill {res['prefill_tok_s']:.0f} tok/s, "
          f"decode {res['decode_tok_s']:.1f} tok/s ({res['decode_ms_per_step']:.2f} ms/step), warmup {warm_s:.0f}s",
          flush=True)
    if "profile_us_per_step" in res:
        print("  GPU us per step by kind:", {k: round(v, 1) for k, v in res["profile_us_per_step"].items()})


if __name__ == "__main__":
    main()
