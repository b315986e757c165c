"""Issue 52 diagnosis: the engine's prompt logits on an idle GPU and beside a compute load, under
settings that each rule a cause in or out. Run on the device from the repo root:
    python3 lab/device/load_diag.py --cli build/tools/tunable --out $OUT
"""
import argparse, json, os, subprocess, sys, time
import torch
import transformers as T

ap = argparse.ArgumentParser()
ap.add_argument("--cli", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--work", default="/tmp/load_diag")
ap.add_argument("--variants", default="all")
a = ap.parse_args()
os.makedirs(a.work, exist_ok=True)
CLI = os.path.abspath(a.cli)

cfg = T.LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=2,
                    num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
                    rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=True,
                    rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
d = os.path.join(a.work, "llama32-2l")
torch.manual_seed(11)
with torch.device("cuda"):
    m = T.LlamaForCausalLM(cfg)
with torch.no_grad():
    for n, p in m.named_parameters():
        if "norm" in n:
            p.copy_(torch.randn_like(p) * 0.2 + 1.0)
m.to(torch.bfloat16).save_pretrained(d, safe_serialization=True)
m32 = m.float().eval()
prompt = torch.randint(0, 128256, (16,), generator=torch.Generator().manual_seed(5)).tolist()
with torch.no_grad():
    ref = m32(torch.tensor([prompt], device="cuda")).logits[0].float().cpu()
# Hypotheses about what a wrong run computed: attention on unrotated queries (keys rotated), or
# on unrotated queries and keys.
import transformers.models.llama.modeling_llama as ML
_rot = ML.apply_rotary_pos_emb
alt = {}
for name, fn in {"q_unrotated": lambda q, k, c, s_, *x, **kw: (q, _rot(q, k, c, s_, *x, **kw)[1]),
                 "qk_unrotated": lambda q, k, c, s_, *x, **kw: (q, k)}.items():
    ML.apply_rotary_pos_emb = fn
    with torch.no_grad():
        alt[name] = m32(torch.tensor([prompt], device="cuda")).logits[0].float().cpu()
ML.apply_rotary_pos_emb = _rot
del m, m32
torch.cuda.empty_cache()

def gen(tag, extra=(), env=None):
    out = os.path.join(a.work, f"dump_{tag}.json")
    e = dict(os.environ, TUNABLE_FILENAME=os.path.join(a.work, "none.csv"))
    e.update(env or {})
    if "LIB" in e:
        e["LD_LIBRARY_PATH"] = e["LIB"] + ":" + e.get("LD_LIBRARY_PATH", "")
    cmd = [CLI, "generate", "--model", d, "--prompt-ids", ",".join(map(str, prompt)), "--max-new-tokens", "8",
           "--ignore-eos", "--max-seq-len", "128", "--dump", out, *extra]
    if "SAN" in (env or {}):
        cmd = ["compute-sanitizer", "--tool", env["SAN"], "--print-limit", "20"] + cmd
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=e)
    open(os.path.join(a.out, f"log_{tag}.txt"), "w").write(r.stdout + "\n---stderr---\n" + r.stderr)
    if r.returncode != 0:
        print(f"{tag}: FAILED rc {r.returncode}: {r.stderr[-800:]}", flush=True)
        return None
    j = json.load(open(out))
    pl = torch.tensor(j["prompt_logits"]).view(-1, j["vocab"])
    sl = torch.tensor(j["step_logits"]).view(-1, j["vocab"])
    return dict(tokens=j["tokens"][0], pl=pl, sl=sl, s=time.time() - t0)

results = {}
def report(tag, r, base):
    if r is None:
        results[tag] = "failed"; return
    err = (r["pl"] - ref).abs().max().item()
    # per-position error: which prompt rows are wrong
    rows = (r["pl"] - ref).abs().amax(-1)
    same = base is not None and torch.equal(r["pl"], base["pl"]) and torch.equal(r["sl"], base["sl"]) and r["tokens"] == base["tokens"]
    dpl = (r["pl"] - base["pl"]).abs().max().item() if base else 0
    dsl = (r["sl"] - base["sl"]).abs().max().item() if base else 0
    results[tag] = dict(err_vs_fp32=err, rows=[round(x, 3) for x in rows.tolist()], bit_equal_idle=same,
                        d_prompt=dpl, d_steps=dsl, tokens=r["tokens"], seconds=round(r["s"], 1))
    for k_, v_ in alt.items():
        results[tag]["err_vs_" + k_] = (r["pl"] - v_).abs().max().item()
    alts = " ".join(f"{k_} {(r['pl'] - v_).abs().max().item():.3f}" for k_, v_ in alt.items())
    print(f"{tag:28s} [{alts}] err {err:.4f} equal-idle {same} dprompt {dpl:.4f} dsteps {dsl:.4f} tokens {r['tokens']} rows {[round(x,2) for x in rows.tolist()]}", flush=True)

idle = gen("idle")
report("idle", idle, idle)
report("idle2", gen("idle2"), idle)
report("idle_verbose", gen("idle_verbose", env={"TUNABLE_VERBOSE": "3"}), idle)

ready = os.path.join(a.work, "ready")
if os.path.exists(ready): os.remove(ready)
LOAD = os.path.join(os.path.dirname(CLI), "..", "tests", "tunable_gpu_load")
load = subprocess.Popen([LOAD, "compute", "--ready", ready])
while not os.path.exists(ready):
    time.sleep(0.1)
variants = [
    ("load", (), None),
    ("load2", (), None),
    ("load_verbose", (), {"TUNABLE_VERBOSE": "3"}),
    ("load_blocking", (), {"CUDA_LAUNCH_BLOCKING": "1"}),
    ("load_nographs", ("--no-graphs",), None),
    ("load_chunk16", ("--prefill-chunk", "16"), None),
    ("load_nopdl_attn", (), {"LIB": os.path.abspath("build_va")}),
    ("load_nopdl_rope", (), {"LIB": os.path.abspath("build_vb")}),
    ("load_nopdl_attn_check", (), {"LIB": os.path.abspath("build_va")}),
    ("load_nopdl_engine", (), {"LIB": os.path.abspath("build_vc")}),
    ("load_q_ldcg", (), {"LIB": os.path.abspath("build_vd")}),
    ("load_wait_first", (), {"LIB": os.path.abspath("build_vg")}),
]
for tag, extra, env in variants:
    if a.variants != "all" and tag not in a.variants.split(","):
        continue
    report(tag, gen(tag, extra, env), idle)
load.terminate(); load.wait()
if os.path.exists(ready): os.remove(ready)
load = subprocess.Popen([LOAD, "memory", "--ready", ready])
while not os.path.exists(ready):
    time.sleep(0.1)
print(open(ready).read().strip(), flush=True)
report("memload", gen("memload"), idle)
load.terminate(); load.wait()
report("idle_after", gen("idle_after"), idle)
json.dump(results, open(os.path.join(a.out, "load_diag.json"), "w"), indent=1)
