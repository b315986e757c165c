// The library's error idiom (core/cuda_check.hpp) for cuBLAS and cuBLASLt calls.
#pragma once

#include <cublas_v2.h>
#include <fmt/format.h>

#include <string>

#include "core/cuda_check.hpp"

namespace tunable {

inline std::string cublas_error_text(cublasStatus_t s) {
  return fmt::format("{} ({})", cublasGetStatusName(s), cublasGetStatusString(s));
}

}  // namespace tunable

#define TUNABLE_CUBLAS_CHECK(call)                                                     \
  TUNABLE_CHECK_GEN(call, CUBLAS_STATUS_SUCCESS, ::tunable::StatusCode::kCublasError, \
                    ::tunable::cublas_error_text)
