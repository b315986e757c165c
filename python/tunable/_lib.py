"""libtunable.so through ctypes: finding it, its C functions, and the interposer's controls.

One library instance per process: when the cuBLAS preload shim is present it names the
libtunable.so it serves GEMMs with, and this module loads that same file (dlopen returns the same
handle), so the GEMM interposer, the fused ops and the results file share one runtime.
"""
import ctypes
import os

C_ABI = 1  # include/tunable/c_api.h: TUNABLE_C_ABI

GEMM_MODES = {"off": 0, "use": 1, "record": 2, "tune": 3}
_MODE_NAMES = {v: k for k, v in GEMM_MODES.items()}

_lib = None
_lib_path = None


class TunableError(RuntimeError):
    """A call into libtunable failed; the message names the problem."""


def _shim():
    """The preload shim's controls when it is loaded in this process, else None."""
    try:
        g = ctypes.CDLL(None)
        lib_fn = g.tunable_preload_library
        attach = g.tunable_preload_attach
    except (AttributeError, OSError):
        return None
    lib_fn.restype = ctypes.c_char_p
    lib_fn.argtypes = []
    attach.restype = ctypes.c_int
    attach.argtypes = []
    return lib_fn, attach


def preload_active():
    """True when the program runs under the cuBLAS preload (`tunable run`, or LD_PRELOAD)."""
    return _shim() is not None


def library_path():
    """Which libtunable.so this process uses: the preload's, TUNABLE_LIBRARY, or the package's."""
    shim = _shim()
    if shim is not None:
        return shim[0]().decode()
    env = os.environ.get("TUNABLE_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libtunable.so")


def _declare(lib):
    i64, vp, cvp, f32, i32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_int
    fp = ctypes.c_void_p
    lib.tunable_c_abi.restype = i32
    lib.tunable_c_last_error.restype = ctypes.c_char_p
    lib.tunable_c_rms_norm.argtypes = [i32, vp, cvp, cvp, i64, i64, i64, i64, f32, i32, i32, vp, i32, fp, fp]
    lib.tunable_c_rms_norm.restype = i32
    lib.tunable_c_fused_add_rms_norm.argtypes = [i32, vp, cvp, vp, cvp, i64, i64, i64, i64, i64, f32, i32, i32, vp,
                                                 i32, fp, fp]
    lib.tunable_c_fused_add_rms_norm.restype = i32
    lib.tunable_c_act_and_mul.argtypes = [i32, vp, cvp, i64, i64, i64, i64, i32, i32, vp, fp]
    lib.tunable_c_act_and_mul.restype = i32
    lib.tunable_preload_configure.argtypes = [i32, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_size_t]
    lib.tunable_preload_configure.restype = i32
    lib.tunable_preload_mode.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.tunable_preload_mode.restype = i32
    lib.tunable_preload_untuned_file.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.tunable_preload_untuned_file.restype = i32


def lib():
    """The loaded library (loaded at the first call). Raises TunableError naming what is wrong."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    path = library_path()
    if not os.path.exists(path):
        raise TunableError(
            f"libtunable.so not found at {path}: install the package (pip install .) or set TUNABLE_LIBRARY "
            "to the library's path")
    try:
        # RTLD_GLOBAL is not needed: every entry point is looked up on this handle.
        handle = ctypes.CDLL(path)
    except OSError as e:
        raise TunableError(f"cannot load {path}: {e}") from None
    try:
        _declare(handle)
    except AttributeError as e:
        raise TunableError(f"{path} lacks an entry point this package needs ({e}): a library of another version")
    if handle.tunable_c_abi() != C_ABI:
        raise TunableError(f"{path} has C ABI {handle.tunable_c_abi()}, this package needs {C_ABI}")
    _lib, _lib_path = handle, path
    return _lib


def last_error():
    return lib().tunable_c_last_error().decode(errors="replace")


def gemm_mode():
    """(mode name, results file) of the interposer; ('off', '') without the preload."""
    if not preload_active():
        return "off", ""
    buf = ctypes.create_string_buffer(4096)
    m = lib().tunable_preload_mode(buf, len(buf))
    return _MODE_NAMES.get(m, "off"), buf.value.decode()


def untuned_file():
    """The interposer's untuned file ('' without the preload)."""
    if not preload_active():
        return ""
    buf = ctypes.create_string_buffer(4096)
    lib().tunable_preload_untuned_file(buf, len(buf))
    return buf.value.decode()


def set_gemm_mode(mode, results_file=None, untuned_file=None):
    """Switches the interposer's GEMM mode. Raises TunableError when the preload is not active."""
    if mode not in GEMM_MODES:
        raise ValueError(f"GEMM mode must be one of {sorted(GEMM_MODES)}, not {mode!r}")
    shim = _shim()
    if shim is None:
        raise TunableError(
            "the cuBLAS preload is not active in this process, so its GEMMs cannot be served: start the program "
            "with `tunable run -- python ...` (or LD_PRELOAD=/path/to/libtunable_preload.so)")
    if GEMM_MODES[mode] != 0 and shim[1]() != 1:
        raise TunableError(f"the preload could not load {shim[0]().decode()} (its warning above says why)")
    err = ctypes.create_string_buffer(1024)
    enc = lambda s: None if s is None else os.fsencode(s)
    rc = lib().tunable_preload_configure(GEMM_MODES[mode], enc(results_file), enc(untuned_file), err, len(err))
    if rc != 0:
        raise TunableError(f"setting GEMM mode {mode!r}: {err.value.decode(errors='replace')}")
