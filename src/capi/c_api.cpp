// The C interface of include/tunable/c_api.h over the public C++ ops.
#include "tunable/c_api.h"

#include <fmt/format.h>

#include <exception>
#include <string>

#include "tunable/context.hpp"
#include "tunable/ops.hpp"

namespace tunable {
namespace {

thread_local std::string t_error;

int fail(StatusCode code, std::string message) {
  t_error = std::move(message);
  return static_cast<int>(code);
}

int result(const Status& st) {
  if (st.is_ok()) return 0;
  return fail(st.code(), st.message());
}

bool dtype_of(int code, DataType* out) {
  switch (code) {
    case 0: *out = DataType::kF32; return true;
    case 1: *out = DataType::kF16; return true;
    case 2: *out = DataType::kBF16; return true;
    default: return false;
  }
}

// Decodes the shared arguments; 0 or the failure's code.
int decode(int device, int dtype, int fp8, const float* scale, float* token_scales, DataType* dt, Fp8Output* f,
           Context** ctx) {
  if (device < 0) return fail(StatusCode::kInvalidArgument, fmt::format("device {} is not a CUDA ordinal", device));
  if (!dtype_of(dtype, dt))
    return fail(StatusCode::kNotSupported, fmt::format("dtype code {} (0 fp32, 1 fp16, 2 bf16)", dtype));
  switch (fp8) {
    case 0: *f = Fp8Output::none(); break;
    case 1: *f = Fp8Output::static_scale(scale); break;
    case 2: *f = Fp8Output::dynamic_per_token(token_scales); break;
    default: return fail(StatusCode::kInvalidArgument, fmt::format("fp8 code {} (0 none, 1 static, 2 dynamic)", fp8));
  }
  *ctx = &default_context(Device::cuda(device));
  return 0;
}

template <class Fn>
int guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::exception& e) {
    return fail(StatusCode::kInternal, e.what());
  } catch (...) {
    return fail(StatusCode::kInternal, "unknown exception");
  }
}

// The norms' shared arguments: the convention code, then decode()'s.
int decode_norm(int device, int dtype, int convention, int fp8, const float* scale, float* token_scales,
                DataType* dt, Fp8Output* f, Context** ctx) {
  if (convention != 0 && convention != 1)
    return fail(StatusCode::kInvalidArgument, fmt::format("convention code {} (0 Llama, 1 Gemma)", convention));
  return decode(device, dtype, fp8, scale, token_scales, dt, f, ctx);
}

NormWeight convention_of(int c) { return c == 1 ? NormWeight::kGemma : NormWeight::kLlama; }

}  // namespace
}  // namespace tunable

using namespace tunable;

extern "C" {

int tunable_c_abi(void) { return TUNABLE_C_ABI; }

const char* tunable_c_last_error(void) { return t_error.c_str(); }

int tunable_c_rms_norm(int device, void* out, const void* x, const void* weight, int64_t rows, int64_t hidden,
                       int64_t x_row_stride, int64_t out_row_stride, float eps, int dtype, int convention,
                       void* stream, int fp8, const float* scale, float* token_scales) {
  return guarded([&] {
    DataType dt;
    Fp8Output f;
    Context* ctx = nullptr;
    if (int rc = decode_norm(device, dtype, convention, fp8, scale, token_scales, &dt, &f, &ctx)) return rc;
    return result(rms_norm(*ctx, out, x, weight, rows, hidden, x_row_stride, out_row_stride, eps, dt,
                           convention_of(convention), static_cast<Stream>(stream), f));
  });
}

int tunable_c_fused_add_rms_norm(int device, void* out, const void* x, void* residual, const void* weight,
                                 int64_t rows, int64_t hidden, int64_t x_row_stride, int64_t residual_row_stride,
                                 int64_t out_row_stride, float eps, int dtype, int convention, void* stream, int fp8,
                                 const float* scale, float* token_scales) {
  return guarded([&] {
    DataType dt;
    Fp8Output f;
    Context* ctx = nullptr;
    if (int rc = decode_norm(device, dtype, convention, fp8, scale, token_scales, &dt, &f, &ctx)) return rc;
    return result(fused_add_rms_norm(*ctx, out, x, residual, weight, rows, hidden, x_row_stride, residual_row_stride,
                                     out_row_stride, eps, dt, convention_of(convention), static_cast<Stream>(stream),
                                     f));
  });
}

int tunable_c_act_and_mul(int device, void* out, const void* x, int64_t rows, int64_t d, int64_t x_row_stride,
                          int64_t out_row_stride, int dtype, int activation, void* stream, const float* fp8_scale) {
  return guarded([&] {
    if (activation != 0 && activation != 1)
      return fail(StatusCode::kInvalidArgument, fmt::format("activation code {} (0 SiLU, 1 GELU-tanh)", activation));
    DataType dt;
    Fp8Output f;
    Context* ctx = nullptr;
    if (int rc = decode(device, dtype, fp8_scale ? 1 : 0, fp8_scale, nullptr, &dt, &f, &ctx)) return rc;
    return result(act_and_mul(*ctx, out, x, rows, d, x_row_stride, out_row_stride, dt,
                              activation == 1 ? Activation::kGeluTanh : Activation::kSilu,
                              static_cast<Stream>(stream), f));
  });
}

}  // extern "C"
