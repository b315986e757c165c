"""What every Python GPU suite does before it imports PyTorch: ctest's Skipped (exit 77) where the
suite cannot run here (no PyTorch or transformers, no usable GPU), with the reason printed; a failure
instead where the GPU is required (TUNABLE_REQUIRE_GPU=1, as on the GPU machines)."""
import importlib
import os
import sys


def skip(why):
    required = os.environ.get("TUNABLE_REQUIRE_GPU") == "1"
    print(f"{'FAILED' if required else 'SKIPPED'}: {why}", flush=True)
    sys.exit(1 if required else 77)


def require(*modules):
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            skip(f"{os.path.basename(sys.argv[0])} needs the Python package {m} ({e})")
    import torch
    if not torch.cuda.is_available():
        skip("no usable GPU (torch.cuda.is_available() is False)")
