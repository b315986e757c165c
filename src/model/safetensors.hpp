// Hugging Face safetensors files: the header parsed and validated in full before any tensor is
// used, the data memory-mapped. A bad file is a Status naming the file, the tensor and the problem;
// the parser takes arbitrary bytes (it is fuzzed) and never reads outside them.
//
// Format: 8 bytes little-endian header length N, N bytes of JSON (an object: tensor name ->
// {"dtype", "shape", "data_offsets": [begin, end]} relative to the data, plus an optional
// "__metadata__" object of strings), then the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tunable/status.hpp"

namespace tunable::model {

/// Element types of the safetensors format.
enum class StDtype { kF64, kF32, kF16, kBF16, kF8E4M3, kF8E5M2, kI64, kI32, kI16, kI8, kU8, kBool };
std::size_t st_size(StDtype t) noexcept;
const char* st_name(StDtype t) noexcept;

struct StTensor {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  ///< byte offsets in the data section
  std::int64_t elements() const;
};

struct StHeader {
  std::vector<StTensor> tensors;  ///< in order of their data offsets
  std::map<std::string, std::string> metadata;
  std::uint64_t data_offset = 0;  ///< where the data section starts in the file (8 + N)
};

/// Largest header accepted (the format's reference implementation caps it at 100 MB).
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;
/// Most entries (tensors and __metadata__) a header may have. The largest checkpoints hold a few
/// thousand tensors per file; 100 MB of header could otherwise name 1.5 million.
constexpr std::uint64_t kMaxHeaderEntries = 100000;

/// Parses and validates the first `size` bytes of a file named `what` (for messages): the header
/// length against the file, the JSON (nested at most kMaxJsonDepth deep, at most kMaxHeaderEntries
/// entries), every entry's dtype, shape and offsets (inside the data,
/// matching shape x dtype, no two tensors sharing a byte), duplicate names. Never throws.
Status parse_safetensors(const unsigned char* bytes, std::size_t size, const std::string& what, StHeader* out);

/// A safetensors file mapped read-only.
class SafetensorsFile {
 public:
  /// Opens, maps and validates `path`.
  static Status open(const std::string& path, std::unique_ptr<SafetensorsFile>* out);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const StHeader& header() const { return header_; }
  /// The tensor of that name, or null.
  const StTensor* find(const std::string& name) const;
  /// Its bytes in the mapping (end - begin of them).
  const unsigned char* data(const StTensor& t) const { return base_ + header_.data_offset + t.begin; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  const unsigned char* base_ = nullptr;
  std::size_t size_ = 0;
  StHeader header_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace tunable::model
