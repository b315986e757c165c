"""The fused ops as PyTorch operators (torch.ops.tunable.*), tuned by libtunable.

    rms_norm(x, weight, eps, gemma=False) -> out
    fused_add_rms_norm(x, residual, weight, eps, gemma=False) -> out   (residual <- x + residual)
    act_and_mul(x, activation="silu") -> out                          (x = [gate | up] along the last dim)
    rms_norm_fp8(x, weight, eps, gemma=False, scale=None) -> (out fp8 e4m3, scales)
    fused_add_rms_norm_fp8(x, residual, weight, eps, gemma=False, scale=None) -> (out, scales)
    act_and_mul_fp8(x, scale, activation="silu") -> out fp8 e4m3

FP8: with a `scale` tensor (one float32 on the device) out = saturate(y / scale) and `scales` is that
scale; without one, per-token dynamic scaling and `scales` holds one float32 per row.

Registered with torch.library's define/impl (cheaper per call than custom_op) with fake (meta)
implementations, so they run in eager mode, under torch.compile(fullgraph=True) and inside CUDA
graphs; they launch on torch.cuda.current_stream(). Inputs are rows along the last dimension; a
view whose rows are not evenly strided is copied first. A bad argument (dtype, shape, device) raises
ValueError or TypeError naming it; an internal failure of the library warns once and computes the
op with PyTorch instead, so a program never breaks on our account.
"""
import ctypes
import warnings

import torch

from . import _lib

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_ACTS = {"silu": 0, "gelu_tanh": 1}
# StatusCode values (include/tunable/status.hpp) that mean the caller's arguments were refused.
_REFUSED = {1: ValueError, 2: TypeError, 3: ValueError}
_warned = set()

LIB = torch.library.Library("tunable", "DEF")
LIB.define("rms_norm(Tensor x, Tensor weight, float eps, bool gemma=False) -> Tensor")
LIB.define("fused_add_rms_norm(Tensor x, Tensor(a!) residual, Tensor weight, float eps, bool gemma=False) -> Tensor")
LIB.define("act_and_mul(Tensor x, str activation='silu') -> Tensor")
LIB.define("rms_norm_fp8(Tensor x, Tensor weight, float eps, bool gemma=False, Tensor? scale=None) "
           "-> (Tensor, Tensor)")
LIB.define("fused_add_rms_norm_fp8(Tensor x, Tensor(a!) residual, Tensor weight, float eps, bool gemma=False, "
           "Tensor? scale=None) -> (Tensor, Tensor)")
LIB.define("act_and_mul_fp8(Tensor x, Tensor scale, str activation='silu') -> Tensor")


def _check(x, name, dtype=None):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"tunable: {name} must be a tensor, not {type(x).__name__}")
    if x.device.type != "cuda":
        raise ValueError(f"tunable: {name} is on {x.device}; the ops run on CUDA tensors")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"tunable: {name} is {x.dtype}, expected {dtype} (as x)")


def _rows(x, name):
    """x as [rows, last] with unit stride along last and an even row stride: (tensor, rows, stride)."""
    if x.dim() == 0:
        raise ValueError(f"tunable: {name} must have at least one dimension")
    if x.dtype not in _DTYPES:
        raise TypeError(f"tunable: {name} is {x.dtype}; the ops take float32, float16 or bfloat16")
    last = x.shape[-1]
    if x.dim() == 1:
        x = x.unsqueeze(0)
    try:
        v = x.view(-1, last) if x.dim() > 2 else x
    except RuntimeError:
        v = None
    if v is None or (last > 1 and v.stride(1) != 1) or (v.shape[0] > 1 and v.stride(0) < last):
        v = x.reshape(-1, last).contiguous()
    return v, v.shape[0], v.stride(0) if v.shape[0] > 1 else last


def _call(fn, args, fallback, what):
    """Runs a libtunable entry; refusals raise, internal failures warn once and run `fallback`."""
    rc = fn(*args)
    if rc == 0:
        return True
    msg = _lib.last_error()
    if rc in _REFUSED:
        raise _REFUSED[rc](f"tunable.{what}: {msg}")
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"tunable.{what}: {msg}; computed with PyTorch instead", RuntimeWarning, stacklevel=3)
    fallback()
    return False


def _stream(x):
    return ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


# --- PyTorch reference computations (fallbacks and tests) ---------------------------------------

def reference_rms_norm(x, weight, eps, gemma=False):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    w = weight.float()
    return (y * (1.0 + w) if gemma else y * w).to(x.dtype)


def reference_act_and_mul(x, activation="silu"):
    d = x.shape[-1] // 2
    g, u = x[..., :d].float(), x[..., d:].float()
    a = torch.nn.functional.silu(g) if activation == "silu" else torch.nn.functional.gelu(g, approximate="tanh")
    return (a * u).to(x.dtype)


def _fp8_reference(y, scale):
    if scale is not None:
        return (y / scale.float()).clamp(-448, 448).to(torch.float8_e4m3fn), scale.float().reshape(1)
    s = (y.abs().amax(-1, keepdim=True) / 448).clamp(min=1.0 / (448 * 512))
    return (y / s).clamp(-448, 448).to(torch.float8_e4m3fn), s.reshape(-1)


# --- implementations -------------------------------------------------------------------------------

def _norm_args(x, weight, what):
    _check(x, "x")
    _check(weight, "weight", x.dtype)
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"tunable.{what}: weight has shape {tuple(weight.shape)}, expected ({x.shape[-1]},)")
    return weight.contiguous()


def _empty_result(x, fp8, width=None):
    """Outputs of an op on an empty tensor (nothing to launch), shaped as the fake implementations say."""
    shape = x.shape if width is None else x.shape[:-1] + (width,)
    out = torch.empty(shape, dtype=torch.float8_e4m3fn if fp8 is not None else x.dtype, device=x.device)
    if fp8 is None:
        return out, None
    rows = 1
    for s in x.shape[:-1]:
        rows *= s
    return out, (fp8.float().reshape(1).clone() if fp8 is not False
                 else torch.empty(rows, dtype=torch.float32, device=x.device))


def _rms_norm_impl(x, weight, eps, gemma=False, fp8=None):
    weight = _norm_args(x, weight, "rms_norm")
    if x.numel() == 0:
        return _empty_result(x, fp8)
    v, rows, stride = _rows(x, "x")
    out_dtype = torch.float8_e4m3fn if fp8 is not None else x.dtype
    out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    scales = None
    mode, sp, tp = 0, None, None
    if fp8 is not None:
        if fp8 is False:  # dynamic per token
            scales = torch.empty(rows, dtype=torch.float32, device=x.device)
            mode, tp = 2, _ptr(scales)
        else:
            _check(fp8, "scale", torch.float32)
            mode, sp, scales = 1, _ptr(fp8), fp8.reshape(1).clone()
    hidden = x.shape[-1]

    def fallback():
        y = reference_rms_norm(v, weight, eps, gemma)
        if fp8 is None:
            out.copy_(y.view(out.shape))
        else:
            q, s = _fp8_reference(reference_rms_norm(v.float(), weight.float(), eps, gemma), None if fp8 is False else fp8)
            out.copy_(q.view(out.shape))
            scales.copy_(s)

    _call(_lib.lib().tunable_c_rms_norm,
          (x.device.index, _ptr(out), _ptr(v), _ptr(weight), rows, hidden, stride, hidden, float(eps),
           _DTYPES[x.dtype], 1 if gemma else 0, _stream(x), mode, sp, tp), fallback, "rms_norm")
    return out, scales


def _fused_add_impl(x, residual, weight, eps, gemma=False, fp8=None):
    weight = _norm_args(x, weight, "fused_add_rms_norm")
    _check(residual, "residual", x.dtype)
    if residual.shape != x.shape:
        raise ValueError(f"tunable.fused_add_rms_norm: residual has shape {tuple(residual.shape)}, x "
                         f"{tuple(x.shape)}")
    if x.numel() == 0:
        return _empty_result(x, fp8)
    v, rows, stride = _rows(x, "x")
    r, _, rstride = _rows(residual, "residual")
    if r.data_ptr() != residual.data_ptr():  # _rows had to copy: the update would not reach residual
        raise ValueError("tunable.fused_add_rms_norm: residual is updated in place and must have evenly strided "
                         "rows (a contiguous tensor or a row slice of one)")
    out_dtype = torch.float8_e4m3fn if fp8 is not None else x.dtype
    out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    hidden = x.shape[-1]
    scales = None
    mode, sp, tp = 0, None, None
    if fp8 is not None:
        if fp8 is False:
            scales = torch.empty(rows, dtype=torch.float32, device=x.device)
            mode, tp = 2, _ptr(scales)
        else:
            _check(fp8, "scale", torch.float32)
            mode, sp, scales = 1, _ptr(fp8), fp8.reshape(1).clone()

    def fallback():
        r.copy_((v + r).to(x.dtype))
        if fp8 is None:
            out.copy_(reference_rms_norm(r, weight, eps, gemma).view(out.shape))
        else:
            q, s = _fp8_reference(reference_rms_norm(r.float(), weight.float(), eps, gemma), None if fp8 is False else fp8)
            out.copy_(q.view(out.shape))
            scales.copy_(s)

    _call(_lib.lib().tunable_c_fused_add_rms_norm,
          (x.device.index, _ptr(out), _ptr(v), _ptr(r), _ptr(weight), rows, hidden, stride, rstride, hidden,
           float(eps), _DTYPES[x.dtype], 1 if gemma else 0, _stream(x), mode, sp, tp), fallback,
          "fused_add_rms_norm")
    return out, scales


def _act_impl(x, activation="silu", scale=None):
    _check(x, "x")
    if activation not in _ACTS:
        raise ValueError(f"tunable.act_and_mul: activation must be one of {sorted(_ACTS)}, not {activation!r}")
    if x.shape[-1] % 2:
        raise ValueError(f"tunable.act_and_mul: the last dimension ({x.shape[-1]}) holds [gate | up] and must be even")
    if x.numel() == 0:
        return _empty_result(x, scale, x.shape[-1] // 2)[0]
    v, rows, stride = _rows(x, "x")
    d = x.shape[-1] // 2
    out = torch.empty(x.shape[:-1] + (d,), dtype=torch.float8_e4m3fn if scale is not None else x.dtype,
                      device=x.device)
    if scale is not None:
        _check(scale, "scale", torch.float32)

    def fallback():
        if scale is None:
            out.copy_(reference_act_and_mul(v, activation).view(out.shape))
        else:
            out.copy_(_fp8_reference(reference_act_and_mul(v.float(), activation), scale)[0].view(out.shape))

    _call(_lib.lib().tunable_c_act_and_mul,
          (x.device.index, _ptr(out), _ptr(v), rows, d, stride, d, _DTYPES[x.dtype], _ACTS[activation], _stream(x),
           None if scale is None else _ptr(scale)), fallback, "act_and_mul")
    return out


def _rms_norm(x, weight, eps, gemma=False):
    return _rms_norm_impl(x, weight, eps, gemma)[0]


def _fused_add(x, residual, weight, eps, gemma=False):
    return _fused_add_impl(x, residual, weight, eps, gemma)[0]


def _act(x, activation="silu"):
    return _act_impl(x, activation)


def _rms_norm_fp8(x, weight, eps, gemma=False, scale=None):
    return _rms_norm_impl(x, weight, eps, gemma, fp8=scale if scale is not None else False)


def _fused_add_fp8(x, residual, weight, eps, gemma=False, scale=None):
    return _fused_add_impl(x, residual, weight, eps, gemma, fp8=scale if scale is not None else False)


def _act_fp8(x, scale, activation="silu"):
    return _act_impl(x, activation, scale)


def _refuse_cpu(name):
    def refuse(x, *args, **kwargs):
        raise ValueError(f"tunable.{name}: x is on {x.device}; the ops run on CUDA tensors")
    return refuse


for _name in ("rms_norm", "fused_add_rms_norm", "act_and_mul", "rms_norm_fp8", "fused_add_rms_norm_fp8",
              "act_and_mul_fp8"):
    LIB.impl(_name, _refuse_cpu(_name), "CPU")  # a clear error, not the dispatcher's "no kernel for CPU"

LIB.impl("rms_norm", _rms_norm, "CUDA")
LIB.impl("fused_add_rms_norm", _fused_add, "CUDA")
LIB.impl("act_and_mul", _act, "CUDA")
LIB.impl("rms_norm_fp8", _rms_norm_fp8, "CUDA")
LIB.impl("fused_add_rms_norm_fp8", _fused_add_fp8, "CUDA")
LIB.impl("act_and_mul_fp8", _act_fp8, "CUDA")


def _rows_of(x):
    n = 1
    for s in x.shape[:-1]:
        n *= s
    return n


@torch.library.register_fake("tunable::rms_norm")
def _rms_norm_fake(x, weight, eps, gemma=False):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.register_fake("tunable::fused_add_rms_norm")
def _fused_add_fake(x, residual, weight, eps, gemma=False):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.register_fake("tunable::act_and_mul")
def _act_fake(x, activation="silu"):
    return x.new_empty(x.shape[:-1] + (x.shape[-1] // 2,))


@torch.library.register_fake("tunable::rms_norm_fp8")
def _rms_norm_fp8_fake(x, weight, eps, gemma=False, scale=None):
    s = x.new_empty((1,), dtype=torch.float32) if scale is not None else x.new_empty((_rows_of(x),),
                                                                                      dtype=torch.float32)
    return x.new_empty(x.shape, dtype=torch.float8_e4m3fn), s


@torch.library.register_fake("tunable::fused_add_rms_norm_fp8")
def _fused_add_fp8_fake(x, residual, weight, eps, gemma=False, scale=None):
    s = x.new_empty((1,), dtype=torch.float32) if scale is not None else x.new_empty((_rows_of(x),),
                                                                                      dtype=torch.float32)
    return x.new_empty(x.shape, dtype=torch.float8_e4m3fn), s


@torch.library.register_fake("tunable::act_and_mul_fp8")
def _act_fp8_fake(x, scale, activation="silu"):
    return x.new_empty(x.shape[:-1] + (x.shape[-1] // 2,), dtype=torch.float8_e4m3fn)


rms_norm = torch.ops.tunable.rms_norm
fused_add_rms_norm = torch.ops.tunable.fused_add_rms_norm
act_and_mul = torch.ops.tunable.act_and_mul
rms_norm_fp8 = torch.ops.tunable.rms_norm_fp8
fused_add_rms_norm_fp8 = torch.ops.tunable.fused_add_rms_norm_fp8
act_and_mul_fp8 = torch.ops.tunable.act_and_mul_fp8
