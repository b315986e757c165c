"""tunable: tuned GEMMs and fused LLM ops for PyTorch programs on NVIDIA GPUs.

    import tunable
    y = tunable.ops.fused_add_rms_norm(x, residual, weight, 1e-6)   # torch.ops.tunable.*
    tunable.hf.patch(model)            # Llama, Mistral, Qwen2, Gemma: fused add + norm, act-and-mul
    tunable.enable("use")              # GEMMs served by tuned solutions (needs the cuBLAS preload:
    with tunable.gemm_mode("tune"):    #   `tunable run -- python app.py`)
        model(x)

The compiled work lives in libtunable.so, reached through ctypes (see docs/python.md for why).
"""
import contextlib

from . import _lib
from ._lib import GEMM_MODES, TunableError, library_path, preload_active

__version__ = "0.1.0"

try:
    import torch  # noqa: F401  (loads PyTorch's cuBLAS before libtunable.so needs it)
except ImportError:  # the GEMM controls work without PyTorch; the ops and hf need it
    torch = None

if torch is not None:
    from . import hf, ops  # noqa: F401


def current_gemm_mode():
    """(mode, results file) of the cuBLAS interposer: mode is off, use, record or tune."""
    return _lib.gemm_mode()


def enable(mode="use", results_file=None, untuned_file=None):
    """Serves this program's cuBLAS GEMMs from now on: 'use' stored results only, 'record' also
    writes misses to the untuned file (for `tunable tune-file`), 'tune' tunes a miss at its first
    call outside a CUDA-graph capture. Files default to TUNABLE_FILENAME / TUNABLE_UNTUNED_FILENAME.
    Raises TunableError when the program was not started under the preload."""
    if mode == "off":
        raise ValueError("enable() takes use, record or tune; call disable() to stop serving GEMMs")
    _lib.set_gemm_mode(mode, results_file, untuned_file)


def disable():
    """Every GEMM goes to cuBLAS unchanged from now on."""
    _lib.set_gemm_mode("off")


@contextlib.contextmanager
def gemm_mode(mode, results_file=None, untuned_file=None):
    """Within the block GEMMs run in `mode` (off, use, record, tune); the previous mode and results
    file come back after it, also when it raises."""
    prev_mode, prev_file = _lib.gemm_mode()
    prev_untuned = _lib.untuned_file()
    _lib.set_gemm_mode(mode, results_file, untuned_file)
    try:
        yield
    finally:
        _lib.set_gemm_mode(prev_mode, prev_file, prev_untuned)

