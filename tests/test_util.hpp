// Helpers shared by the tests: temporary directories and scoped environment variables.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace tunable::test {

/// A fresh scratch directory under $TMPDIR (or /tmp), made by mkdtemp and removed with everything
/// in it when the object dies. A directory that cannot be made throws std::runtime_error, which
/// fails the test that wanted it (gtest reports the message). Removal only ever touches the exact
/// path mkdtemp returned to this object: never a fallback, never the parent.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) throw std::runtime_error("TempDir: no temporary directory ($TMPDIR or /tmp): " + ec.message());
    std::string tmpl = (base / "tunable_test_XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      const int err = errno;
      throw std::runtime_error("TempDir: mkdtemp(" + tmpl + ") failed: " + std::strerror(err));
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;  // noexcept: a failed removal leaves the directory, it never throws
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  // One owner per directory: a copy would remove it twice (or remove it under the other's feet).
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;  ///< exactly what mkdtemp created; empty only while constructing
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

/// The seed of a test's random data: TUNABLE_TEST_SEED when set (to replay a failure), else a
/// fresh one. Print it with SCOPED_TRACE(seed_trace(seed)) so every failure names it.
inline std::uint64_t test_seed() {
  if (const char* v = getenv("TUNABLE_TEST_SEED"); v != nullptr && *v != '\0') return std::strtoull(v, nullptr, 0);
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}
inline std::string seed_trace(std::uint64_t seed) {
  return "random seed " + std::to_string(seed) + " (replay with TUNABLE_TEST_SEED=" + std::to_string(seed) + ")";
}

}  // namespace tunable::test
