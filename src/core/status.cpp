// Status, Error and the small enum helpers of the public headers.
#include "tunable/status.hpp"

#include <fmt/format.h>

#include "tunable/types.hpp"

namespace tunable {

const char* to_string(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kNotSupported: return "not_supported";
    case StatusCode::kMisaligned: return "misaligned";
    case StatusCode::kCudaError: return "cuda_error";
    case StatusCode::kCublasError: return "cublas_error";
    case StatusCode::kIoError: return "io_error";
    case StatusCode::kParseError: return "parse_error";
    case StatusCode::kNumericsMismatch: return "numerics_mismatch";
    case StatusCode::kNoDevice: return "no_device";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return fmt::format("{}: {}", tunable::to_string(code_), message_);
}

Error::Error(Status status) : std::runtime_error(status.to_string()), status_(std::move(status)) {}

std::size_t size_of(DataType t) noexcept {
  switch (t) {
    case DataType::kF64: return 8;
    case DataType::kF32:
    case DataType::kTF32: return 4;
    case DataType::kF16:
    case DataType::kBF16: return 2;
    case DataType::kF8E4M3:
    case DataType::kF8E5M2: return 1;
  }
  return 0;
}

const char* short_name(DataType t) noexcept {
  switch (t) {
    case DataType::kF64: return "fp64";
    case DataType::kF32: return "fp32";
    case DataType::kTF32: return "tf32";
    case DataType::kF16: return "fp16";
    case DataType::kBF16: return "bf16";
    case DataType::kF8E4M3: return "fp8e4m3";
    case DataType::kF8E5M2: return "fp8e5m2";
  }
  return "?";
}

const char* tunableop_name(DataType t) noexcept {
  switch (t) {
    case DataType::kF64: return "double";
    case DataType::kF32: return "float";
    case DataType::kTF32: return "tf32";
    case DataType::kF16: return "Half";
    case DataType::kBF16: return "BFloat16";
    case DataType::kF8E4M3: return "Float8_e4m3fn";
    case DataType::kF8E5M2: return "Float8_e5m2";
  }
  return "?";
}

std::optional<DataType> parse_data_type(std::string_view s) noexcept {
  static constexpr DataType kAll[] = {DataType::kF64,  DataType::kF32,    DataType::kTF32,
                                      DataType::kF16,  DataType::kBF16,   DataType::kF8E4M3,
                                      DataType::kF8E5M2};
  for (DataType t : kAll) {
    if (s == short_name(t) || s == tunableop_name(t)) return t;
  }
  if (s == "fp8") return DataType::kF8E4M3;
  if (s == "f32") return DataType::kF32;
  if (s == "f16" || s == "half") return DataType::kF16;
  if (s == "f64" || s == "float64") return DataType::kF64;
  return std::nullopt;
}

std::optional<Transpose> parse_transpose(char c) noexcept {
  if (c == 'n' || c == 'N') return Transpose::kN;
  if (c == 't' || c == 'T') return Transpose::kT;
  return std::nullopt;
}

std::string Device::to_string() const {
  return kind == DeviceKind::kCpu ? std::string("cpu") : fmt::format("cuda:{}", ordinal);
}

}  // namespace tunable
