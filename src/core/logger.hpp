// Verbose output of a context, drawn as a tree like TunableOp's.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace tunable {

class Logger {
 public:
  Logger() = default;
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  /// target: "err", "out" or a file path (opened for append). Returns false if the file cannot be
  /// opened; output then goes to stderr and the reason is printed there once.
  bool open(int level, const std::string& target);
  /// Why the last open() returned false.
  std::string open_error() const;
  int level() const { return level_.load(std::memory_order_relaxed); }
  bool enabled(int level) const { return level_.load(std::memory_order_relaxed) >= level; }

  /// Writes one line when `level` <= the configured level.
  void line(int level, const std::string& text);
  /// Always written to the sink (or stderr when level 0): warnings that must not be silent.
  void warn(const std::string& text);

  template <class... Args>
  void log(int level, fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(level)) line(level, fmt::format(f, std::forward<Args>(args)...));
  }

  static constexpr const char* kBranch = "\u251c\u2500\u2500";  // "├──"
  static constexpr const char* kLast = "\u2514\u2500\u2500";    // "└──"

 private:
  void close();
  mutable std::mutex mu_;
  std::atomic<int> level_{0};  // read on every log call without the lock, set by open()
  std::string open_error_;
  std::FILE* sink_ = stderr;
  bool owned_ = false;
};

}  // namespace tunable
