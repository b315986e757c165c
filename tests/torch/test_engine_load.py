"""The decode engine beside another process's GPU work, run on the device:

    python3 tests/torch/test_engine_load.py OUT.json --cli build/tools/tunable --load build/tests/tunable_gpu_load

Models: the configurations of Llama-3.2-1B, Llama-2-7B, Mistral-7B-v0.3, Mistral-Nemo, Qwen2.5-7B and
Gemma-7B with 2 layers (real widths, heads, head dims, RoPE settings and vocabularies; random bf16
weights, norm weights random as tests/torch/test_engine.py makes them), written by `save_pretrained`.

Each model runs `tunable generate` (16 prompt ids, 8 greedy tokens, prompt and step logits dumped)
three times: on an otherwise idle GPU, beside a compute load (tunable_gpu_load compute: 512 x 512
fp32 products in a loop, which time-slices the GPU with the engine), and beside a memory load
(tunable_gpu_load memory: all but 12 GiB of the device held). Pass: the prompt logits, the step
logits and the tokens under each load equal the idle run's bit for bit, and the idle run's prompt
logits are within tolerance of transformers in fp32 (1.5x transformers' own bf16 error + 0.02).
Exit status 1 on any failure.
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

import suite_gate

suite_gate.require("torch", "transformers")
import torch  # noqa: E402
import transformers as T  # noqa: E402

LLAMA3_ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}


def configs():
    # Each family's published configuration, num_hidden_layers cut to 2.
    return {
        "llama-3.2-1b": lambda: T.LlamaForCausalLM(T.LlamaConfig(
            vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=2, num_attention_heads=32,
            num_key_value_heads=8, head_dim=64, max_position_embeddings=131072, rms_norm_eps=1e-5,
            rope_theta=500000.0, tie_word_embeddings=True, rope_scaling=LLAMA3_ROPE)),
        "llama-2-7b": lambda: T.LlamaForCausalLM(T.LlamaConfig(
            vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=2, num_attention_heads=32,
            num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5)),
        "mistral-7b-v0.3": lambda: T.MistralForCausalLM(T.MistralConfig(
            vocab_size=32768, hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
            num_key_value_heads=8, max_position_embeddings=32768, rms_norm_eps=1e-5, rope_theta=1000000.0,
            sliding_window=None)),
        "mistral-nemo": lambda: T.MistralForCausalLM(T.MistralConfig(
            vocab_size=131072, hidden_size=5120, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
            num_key_value_heads=8, head_dim=128, max_position_embeddings=131072, rms_norm_eps=1e-5,
            rope_theta=1000000.0, sliding_window=None)),
        "qwen2.5-7b": lambda: T.Qwen2ForCausalLM(T.Qwen2Config(
            vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=2, num_attention_heads=28,
            num_key_value_heads=4, max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0,
            tie_word_embeddings=False, use_sliding_window=False)),
        "gemma-7b": lambda: T.GemmaForCausalLM(T.GemmaConfig(
            vocab_size=256000, hidden_size=3072, intermediate_size=24576, num_hidden_layers=2, num_attention_heads=16,
            num_key_value_heads=16, head_dim=256, max_position_embeddings=8192, rms_norm_eps=1e-6,
            hidden_act="gelu_pytorch_tanh", hidden_activation="gelu_pytorch_tanh")),
    }


def save(name, work):
    torch.manual_seed(11)
    with torch.device("cuda"):
        model = configs()[name]()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:  # random, around HF's 1 (0 for Gemma's 1 + w)
                p.copy_(torch.randn_like(p) * 0.2 + (0.0 if name.startswith("gemma") else 1.0))
            elif n.endswith(".bias"):
                p.copy_(torch.randn_like(p) * 0.1)
    d = os.path.join(work, name)
    model.to(torch.bfloat16).save_pretrained(d, safe_serialization=True)
    return d, model.float().eval()


class Load:
    """A tunable_gpu_load process, running from __enter__ until __exit__."""

    def __init__(self, binary, kind):
        self.binary, self.kind = binary, kind

    def __enter__(self):
        self.ready = tempfile.mktemp(prefix="gpu_load_ready_")
        self.p = subprocess.Popen([self.binary, self.kind, "--ready", self.ready])
        t0 = time.time()
        while not os.path.exists(self.ready):
            if self.p.poll() is not None:
                raise AssertionError(f"the {self.kind} load exited ({self.p.returncode}) before it ran")
            if time.time() - t0 > 120:
                raise AssertionError(f"the {self.kind} load did not start in 120 s")
            time.sleep(0.05)
        self.what = open(self.ready).read().strip()
        return self

    def __exit__(self, *exc):
        alive = self.p.poll() is None
        self.p.terminate()
        self.p.wait()
        os.remove(self.ready)
        if not alive and exc[0] is None:
            raise AssertionError(f"the {self.kind} load stopped before the run ended: not a run under load")


def generate(cli, d, prompt, work, tag):
    out = os.path.join(work, f"dump_{tag}.json")
    r = subprocess.run([cli, "generate", "--model", d, "--prompt-ids", ",".join(map(str, prompt)),
                        "--max-new-tokens", "8", "--ignore-eos", "--max-seq-len", "128", "--dump", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"generate ({tag}) failed ({r.returncode}): {r.stderr[-1500:]}")
    with open(out) as f:
        j = json.load(f)
    v = j["vocab"]
    return j["tokens"][0], torch.tensor(j["prompt_logits"]).view(-1, v), torch.tensor(j["step_logits"]).view(-1, v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cli", required=True)
    ap.add_argument("--load", required=True, help="the tunable_gpu_load binary")
    ap.add_argument("--work")
    ap.add_argument("--models", default=",".join(configs()))
    a = ap.parse_args()
    cli, load = os.path.abspath(a.cli), os.path.abspath(a.load)
    work = a.work or tempfile.mkdtemp(prefix="engine_load_")
    os.makedirs(work, exist_ok=True)
    # No results file: every problem runs its Default (cuBLAS and the engine's own kernels), the
    # same choice idle and under load.
    os.environ["TUNABLE_FILENAME"] = os.path.join(work, "results.csv")
    failures, report = [], {"models": {}}
    for name in a.models.split(","):
        row = report["models"][name] = {}
        try:
            d, m32 = save(name, work)
            vocab = m32.config.vocab_size
            prompt = torch.randint(0, vocab, (16,), generator=torch.Generator().manual_seed(5)).tolist()
            with torch.no_grad():
                ref = m32(torch.tensor([prompt], device="cuda")).logits[0].float().cpu()
            del m32
            m16 = T.AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16).cuda().eval()
            with torch.no_grad():
                tol = 1.5 * (m16(torch.tensor([prompt], device="cuda")).logits[0].float().cpu() - ref).abs().max().item() + 0.02
            del m16
            gc.collect()
            torch.cuda.empty_cache()  # the loads and the engine get the device, not this process's cache
            idle = generate(cli, d, prompt, work, f"{name}_idle")
            err = (idle[1] - ref).abs().max().item()
            row.update(tol=tol, idle_err=err, tokens=idle[0])
            bad = []
            if not err <= tol:
                bad.append(f"idle prompt logits off by {err:.4f} > {tol:.4f}")
            for kind in ("compute", "memory"):
                with Load(load, kind) as l:
                    got = generate(cli, d, prompt, work, f"{name}_{kind}")
                e = (got[1] - ref).abs().max().item()
                same = got[0] == idle[0] and torch.equal(got[1], idle[1]) and torch.equal(got[2], idle[2])
                row[kind] = dict(load=l.what, err=e, bit_equal_idle=same, tokens=got[0],
                                 max_diff_prompt=(got[1] - idle[1]).abs().max().item(),
                                 max_diff_steps=(got[2] - idle[2]).abs().max().item())
                if not same:
                    bad.append(f"{kind} load: results differ from idle (prompt logits by "
                               f"{row[kind]['max_diff_prompt']:.4f}, steps by {row[kind]['max_diff_steps']:.4f}, "
                               f"tokens {got[0]} vs {idle[0]}; error against fp32 {e:.4f}, tol {tol:.4f})")
            print(f"{'ok  ' if not bad else 'FAIL'} {name}: tol {tol:.4f}, idle err {err:.4f}, "
                  f"compute {row['compute']['bit_equal_idle'] if 'compute' in row else '-'}, "
                  f"memory {row['memory']['bit_equal_idle'] if 'memory' in row else '-'}" +
                  ("" if not bad else ": " + "; ".join(bad)), flush=True)
            failures += [f"{name}: {b}" for b in bad]
        except Exception as e:  # every model is reported, the run goes on
            failures.append(f"{name}: {e}")
            print(f"FAIL {name}: {e}", flush=True)
    report["failures"] = failures
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"{len(report['models'])} models, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
