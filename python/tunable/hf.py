"""tunable.hf.patch(model): fused ops in a Hugging Face transformers (5.x) decoder.

For the Llama, Mistral, Qwen2 and Gemma families each decoder layer then runs
    h = rms_norm(x)                       (tunable.ops, Llama w or Gemma 1 + w)
    a = self_attn(h, ...)                 (unchanged)
    h = fused_add_rms_norm(x, a)          (a <- x + a, h = norm(a): one kernel for the add and the norm)
    m = down_proj(act_and_mul(gate_up(h)))  (gate and up projections as one GEMM, SiLU / GELU-tanh and
                                             the product in one kernel)
    return a + m
and the final norm is tunable.ops.rms_norm. Gate and up weights are concatenated once into one
tensor; the modules' gate_proj / up_proj weights become views of it, so the model's memory and
state_dict keys stay as they were. The layer's input is never written (HF may keep it, e.g. for
output_hidden_states); the attention output, a fresh tensor, takes the residual sum.

What the patch cannot serve it leaves alone, saying so (an MLP with biases, an exact-erf GELU); an
architecture it does not know is a ValueError naming it, before anything is changed.
"""
import inspect
import types
import warnings

import torch
import torch.nn.functional as F

from . import ops

FAMILIES = {"llama": False, "mistral": False, "qwen2": False, "gemma": True}  # model_type -> Gemma (1 + w) norms
_ACTIVATIONS = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_tanh": "gelu_tanh",
                "gelu_fast": None, "gelu": None}


def _eps(norm):
    for name in ("variance_epsilon", "eps", "epsilon"):
        if hasattr(norm, name):
            return float(getattr(norm, name))
    raise ValueError(f"tunable.hf.patch: {type(norm).__name__} has no eps attribute")


def _patch_norm(norm, gemma):
    eps = _eps(norm)

    def forward(self, x):
        return ops.rms_norm(x, self.weight, eps, gemma)

    norm.forward = types.MethodType(forward, norm)


def _patch_mlp(mlp, act_name, notes):
    act = _ACTIVATIONS.get(act_name)
    if act is None:
        notes.append(f"MLP left as is: activation {act_name!r} is not SiLU or GELU-tanh")
        return False
    g, u = mlp.gate_proj, mlp.up_proj
    if g.bias is not None or u.bias is not None:
        notes.append("MLP left as is: gate/up projections with bias")
        return False
    inter = g.weight.shape[0]
    fused = torch.cat([g.weight.detach(), u.weight.detach()], 0)
    g.weight = torch.nn.Parameter(fused[:inter], requires_grad=False)
    u.weight = torch.nn.Parameter(fused[inter:], requires_grad=False)
    # A non-persistent buffer: it moves with .to() but stays out of state_dict (whose keys and values
    # remain the model's own: gate_proj / up_proj are views of it).
    mlp.register_buffer("_tunable_gate_up", fused, persistent=False)

    def forward(self, x):
        return self.down_proj(ops.act_and_mul(F.linear(x, self._tunable_gate_up), act))

    mlp.forward = types.MethodType(forward, mlp)
    return True


def _patch_layer(layer, gemma):
    orig = type(layer).forward
    sig = inspect.signature(orig)
    ret = sig.return_annotation
    if ret is not torch.Tensor and ret != "torch.Tensor":
        raise ValueError(f"tunable.hf.patch: {type(layer).__name__}.forward returns {ret!r}, not a tensor: this "
                         "transformers version's decoder layer is not the 5.x layer the patch knows")
    names = [p for p in sig.parameters if p not in ("self", "hidden_states")]
    _patch_norm(layer.input_layernorm, gemma)
    post = layer.post_attention_layernorm
    post_eps = _eps(post)

    def forward(self, hidden_states, *args, **kwargs):
        kwargs.update(zip(names, args))
        h = self.input_layernorm(hidden_states)
        attn = self.self_attn(hidden_states=h, **kwargs)
        a = attn[0] if isinstance(attn, tuple) else attn
        h = ops.fused_add_rms_norm(hidden_states, a, post.weight, post_eps, gemma)  # a <- hidden_states + a
        return a + self.mlp(h)

    layer.forward = types.MethodType(forward, layer)


def patch(model):
    """Fuses the add + norm and the MLP activation of a Llama, Mistral, Qwen2 or Gemma model (in place,
    returns it). The model must be on a CUDA device in float32, float16 or bfloat16."""
    if getattr(model, "_tunable_patched", False):
        return model
    cfg = getattr(model, "config", None)
    kind = getattr(cfg, "model_type", None)
    if kind not in FAMILIES:
        raise ValueError(f"tunable.hf.patch: model_type {kind!r} is not one of {sorted(FAMILIES)}")
    gemma = FAMILIES[kind]
    base = getattr(model, "model", model)
    layers = getattr(base, "layers", None)
    if layers is None or not hasattr(base, "norm"):
        raise ValueError(f"tunable.hf.patch: {type(model).__name__} has no .model.layers / .model.norm")
    p = next(model.parameters())
    if p.device.type != "cuda" or p.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"tunable.hf.patch: the model is {p.dtype} on {p.device}; move it to a CUDA device in "
                         "float32, float16 or bfloat16 first")
    for m in model.modules():
        if hasattr(m, "_hf_hook"):
            raise ValueError("tunable.hf.patch: the model carries accelerate hooks (device_map or offloading); "
                             "load it onto one GPU without them to patch it")
    for layer in layers:  # check every layer before changing any
        for name in ("input_layernorm", "post_attention_layernorm", "self_attn", "mlp"):
            if not hasattr(layer, name):
                raise ValueError(f"tunable.hf.patch: {type(layer).__name__} has no {name}: a layout the patch "
                                 "does not know")
    act_name = getattr(cfg, "hidden_activation", None) or getattr(cfg, "hidden_act", None)
    notes = []
    for layer in layers:
        _patch_layer(layer, gemma)
        if hasattr(layer.mlp, "gate_proj"):
            _patch_mlp(layer.mlp, act_name, notes)
    _patch_norm(base.norm, gemma)
    for n in sorted(set(notes)):
        warnings.warn(f"tunable.hf.patch: {n}", RuntimeWarning, stacklevel=2)
    model._tunable_patched = True
    return model
