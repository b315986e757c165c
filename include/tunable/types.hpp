// Element types, transposes and devices shared by every op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Same type as cudaStream_t, without pulling CUDA headers into the public API.
struct CUstream_st;

namespace tunable {

using Stream = CUstream_st*;

enum class DataType {
  kF64,
  kF32,
  kTF32,  ///< fp32 storage, TF32 tensor-core math; tuned and keyed apart from kF32
  kF16,
  kBF16,
  kF8E4M3,
  kF8E5M2,
};

/// Bytes per element in memory (tf32 is stored as fp32).
std::size_t size_of(DataType t) noexcept;
/// Short CLI name: fp64, fp32, tf32, fp16, bf16, fp8e4m3, fp8e5m2.
const char* short_name(DataType t) noexcept;
/// TunableOp's spelling in op signatures: double, float, tf32, Half, BFloat16, Float8_e4m3fn, Float8_e5m2.
const char* tunableop_name(DataType t) noexcept;
/// Accepts short names and TunableOp spellings (also "bf16"/"BFloat16", "fp8" = e4m3).
std::optional<DataType> parse_data_type(std::string_view s) noexcept;

enum class Transpose : char { kN = 'n', kT = 't' };

inline char to_char(Transpose t) noexcept { return static_cast<char>(t); }
std::optional<Transpose> parse_transpose(char c) noexcept;

enum class DeviceKind { kCpu, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int ordinal = 0;  ///< CUDA device ordinal; 0 for the CPU

  static Device cpu() { return {DeviceKind::kCpu, 0}; }
  static Device cuda(int ordinal = 0) { return {DeviceKind::kCuda, ordinal}; }
  bool operator==(const Device& o) const { return kind == o.kind && ordinal == o.ordinal; }
  std::string to_string() const;  ///< "cpu", "cuda:0"
};

}  // namespace tunable
