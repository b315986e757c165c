// Status and the one exception type of the public API.
//
// Library functions report failure as a Status (never exit/abort). Entry points that cannot return
// a Status (constructors, the CLI glue) throw tunable::Error, which carries the same code.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace tunable {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  ///< bad dims, strides, null pointers, unknown names
  kNotSupported,     ///< a valid request this solution/provider/build cannot serve
  kMisaligned,       ///< a pointer or leading dimension breaks an alignment requirement
  kCudaError,        ///< CUDA runtime or driver call failed
  kCublasError,      ///< cuBLAS / cuBLASLt call failed
  kIoError,          ///< results file, lock or log could not be read/written
  kParseError,       ///< malformed results file, signature or environment value
  kNumericsMismatch, ///< a candidate's output disagreed with the reference
  kNoDevice,         ///< no CUDA device is visible
  kInternal,
};

/// Stable lower-case name of a code ("invalid_argument", ...).
const char* to_string(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const noexcept { return code_ == StatusCode::kOk; }
  explicit operator bool() const noexcept { return is_ok(); }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  /// "invalid_argument: m must be positive (got -1)"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

class Error : public std::runtime_error {
 public:
  explicit Error(Status status);
  Error(StatusCode code, const std::string& message) : Error(Status(code, message)) {}
  StatusCode code() const noexcept { return status_.code(); }
  const Status& status() const noexcept { return status_; }

 private:
  Status status_;
};

/// Throws tunable::Error when `s` is not ok.
inline void throw_if_error(const Status& s) {
  if (!s.is_ok()) throw Error(s);
}

}  // namespace tunable
