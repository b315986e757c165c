"""Writes a random-weight model with a real model's exact configuration (bench/example2/hf_generate.py's
CONFIGS, the same seed, so the weights equal those the HF baseline runs) as a Hugging Face directory
for `tunable bench-model`:

    python bench/engine/make_model.py DIR --model gemma-2b
"""
import argparse
import os
import sys

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "example2"))
from hf_generate import CONFIGS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--model", default="gemma-2b", choices=sorted(CONFIGS))
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = CONFIGS[a.model]()
    with torch.device("cuda"):
        torch.set_default_dtype(torch.bfloat16)
        model = transformers.AutoModelForCausalLM.from_config(cfg)
        torch.set_default_dtype(torch.float32)
    model.save_pretrained(a.dir, safe_serialization=True)
    print(f"{a.model}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters in {a.dir}")


if __name__ == "__main__":
    main()
