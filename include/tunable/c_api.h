/* A C interface to the fused ops, for callers that cannot use the C++ API: the Python package
 * loads libtunable.so with ctypes (a pure-Python layer works on every Python version and needs no
 * compiler at install time; docs/python.md has the per-call cost that argued for it).
 *
 * Every function validates its arguments as the C++ op does, never throws, never aborts, and
 * returns 0 or a tunable::StatusCode value; the message of the last failure on the calling thread
 * is tunable_c_last_error(). The ops run on the process-wide context of `device` (options from the
 * TUNABLE_* environment, as default_context()).
 *
 * Codes: dtype 0 fp32, 1 fp16, 2 bf16; convention 0 Llama (y * w), 1 Gemma (y * (1 + w));
 * activation 0 SiLU, 1 GELU-tanh; fp8 0 none, 1 static (scale: one float on the device),
 * 2 dynamic per token (token_scales: [rows] floats on the device, written). */
#ifndef TUNABLE_C_API_H
#define TUNABLE_C_API_H

#include <stdint.h>

#define TUNABLE_C_ABI 1

#ifdef __cplusplus
extern "C" {
#endif

int tunable_c_abi(void);
const char* tunable_c_last_error(void);

int tunable_c_rms_norm(int device, void* out, const void* x, const void* weight, int64_t rows, int64_t hidden,
                       int64_t x_row_stride, int64_t out_row_stride, float eps, int dtype, int convention,
                       void* stream, int fp8, const float* scale, float* token_scales);

int tunable_c_fused_add_rms_norm(int device, void* out, const void* x, void* residual, const void* weight,
                                 int64_t rows, int64_t hidden, int64_t x_row_stride, int64_t residual_row_stride,
                                 int64_t out_row_stride, float eps, int dtype, int convention, void* stream, int fp8,
                                 const float* scale, float* token_scales);

int tunable_c_act_and_mul(int device, void* out, const void* x, int64_t rows, int64_t d, int64_t x_row_stride,
                          int64_t out_row_stride, int dtype, int activation, void* stream, const float* fp8_scale);

#ifdef __cplusplus
}
#endif

#endif
