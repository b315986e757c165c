// Facts about the host the validators and rotating buffers need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tunable {

/// "model name" of /proc/cpuinfo (or the architecture when absent).
std::string cpu_model();
/// Size of the largest cache level reported by sysfs/sysconf; 32 MiB when unknown.
std::size_t cpu_last_level_cache_bytes();
/// Fresh seed for random inputs (random_device mixed with a counter).
std::uint64_t fresh_seed();

/// splitmix64: fast, good enough for test/tuning data.
struct SplitMix64 {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0; }
};

}  // namespace tunable
