#include "core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tunable {

PathState probe_path(const std::string& path, std::string* why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return PathState::kPresent;
  const int e = errno;
  // ENOTDIR: a component of the path is a file, so nothing of that name can exist below it.
  if (e == ENOENT || e == ENOTDIR) return PathState::kMissing;
  if (why) *why = std::strerror(e);
  return PathState::kError;
}

Status path_error(const std::string& path, const std::string& why) {
  return Status(StatusCode::kIoError, fmt::format("cannot access '{}': {}", path, why));
}

Status open_regular_file(const std::string& path, int* fd_out, std::size_t* size) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int e = errno;
    return Status(StatusCode::kIoError, fmt::format("cannot open '{}': {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return Status(StatusCode::kIoError, fmt::format("cannot stat '{}': {}", path, std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(StatusCode::kIoError, fmt::format("'{}' is not a regular file", path));
  }
  *fd_out = fd;
  *size = static_cast<std::size_t>(st.st_size);
  return Status::ok();
}

Status read_regular_file(const std::string& path, std::size_t max_bytes, const char* limit_what, std::string* out) {
  int fd = -1;
  std::size_t size = 0;
  Status st = open_regular_file(path, &fd, &size);
  if (!st.is_ok()) return st;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size > max_bytes)
    return Status(StatusCode::kParseError, fmt::format("'{}' is {} bytes; {} is at most {} MiB", path, size,
                                                       limit_what, max_bytes >> 20));
  out->clear();
  out->reserve(size);
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      return Status(StatusCode::kIoError, fmt::format("reading '{}' failed: {}", path, std::strerror(e)));
    }
    if (r == 0) break;
    out->append(buf, static_cast<std::size_t>(r));
    if (out->size() > max_bytes)  // it grew while being read
      return Status(StatusCode::kParseError,
                    fmt::format("'{}' grew past {} MiB while being read; {} is at most that", path, max_bytes >> 20,
                                limit_what));
  }
  return Status::ok();
}

}  // namespace tunable
