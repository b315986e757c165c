#include "core/logger.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tunable {

Logger::~Logger() { close(); }

void Logger::close() {
  if (owned_ && sink_ != nullptr) std::fclose(sink_);
  sink_ = stderr;
  owned_ = false;
}

bool Logger::open(int level, const std::string& target) {
  std::lock_guard<std::mutex> lock(mu_);
  close();
  level_.store(level, std::memory_order_relaxed);
  open_error_.clear();
  if (target.empty() || target == "err") return true;
  if (target == "out") {
    sink_ = stdout;
    return true;
  }
  // Opened without blocking: a FIFO with no reader fails at once (ENXIO) instead of hanging the
  // program in open(); once open, writes block as they do on stderr.
  const int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  std::FILE* f = nullptr;
  if (fd >= 0 && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0) f = ::fdopen(fd, "a");
  if (f == nullptr) {
    open_error_ = errno == ENXIO ? std::string("a FIFO with no reader") : std::strerror(errno);
    if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "tunable: cannot open verbose file '%s' (%s); logging to stderr\n",
                 target.c_str(), open_error_.c_str());
    return false;
  }
  sink_ = f;
  owned_ = true;
  return true;
}

std::string Logger::open_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_error_;
}

void Logger::line(int level, const std::string& text) {
  if (!enabled(level)) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::fprintf(sink_, "%s\n", text.c_str());
  std::fflush(sink_);
}

void Logger::warn(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  std::FILE* out = level_.load(std::memory_order_relaxed) > 0 ? sink_ : stderr;
  std::fprintf(out, "tunable: warning: %s\n", text.c_str());
  std::fflush(out);
}

}  // namespace tunable
