// One error idiom for CUDA runtime, driver and cuBLAS(Lt) calls inside the library.
//
// TUNABLE_CHECK_GEN evaluates a call once; on failure it returns a Status from the enclosing
// function that records the statement, function, file, line and the library's error name.
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/error.hpp"

namespace tunable {

inline Status make_call_error(StatusCode code, const char* stmt, const char* func, const char* file,
                              int line, const std::string& what) {
  return Status(code, fmt::format("{} failed in {} ({}:{}): {}", stmt, func, file, line, what));
}

inline std::string cuda_error_text(cudaError_t e) {
  return fmt::format("{} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
}

}  // namespace tunable

#define TUNABLE_CHECK_GEN(call, success, code, text_fn)                                      \
  do {                                                                                       \
    auto tunable_err_ = (call);                                                              \
    if (tunable_err_ != (success))                                                           \
      return ::tunable::make_call_error((code), #call, __func__, __FILE__, __LINE__,         \
                                        text_fn(tunable_err_));                              \
  } while (0)

#define TUNABLE_CUDA_CHECK(call) \
  TUNABLE_CHECK_GEN(call, cudaSuccess, ::tunable::StatusCode::kCudaError, ::tunable::cuda_error_text)

/// After a kernel launch: picks up launch-configuration errors.
#define TUNABLE_CUDA_CHECK_LAUNCH() TUNABLE_CUDA_CHECK(cudaGetLastError())
