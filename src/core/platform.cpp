#include "core/platform.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <string>

namespace tunable {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        std::string v = line.substr(p + 1);
        while (!v.empty() && v.front() == ' ') v.erase(v.begin());
        return v;
      }
    }
  }
  struct utsname u;
  if (uname(&u) == 0) return u.machine;
  return "unknown";
}

std::size_t cpu_last_level_cache_bytes() {
  std::size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/size");
    std::string s;
    if (!(f >> s) || s.empty()) continue;
    std::size_t mult = 1;
    if (s.back() == 'K') mult = 1024;
    if (s.back() == 'M') mult = 1024 * 1024;
    try {
      best = std::max(best, static_cast<std::size_t>(std::stoull(s)) * mult);
    } catch (...) {
    }
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) best = std::max(best, static_cast<std::size_t>(l3));
#endif
  return best > 0 ? best : (32u << 20);
}

std::uint64_t fresh_seed() {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ (++counter * 0x9E3779B97F4A7C15ull);
}

}  // namespace tunable
