#include "tune/results_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "core/error.hpp"
#include "core/numbers.hpp"

namespace tunable {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

bool has_binary(const std::string& s) {
  for (unsigned char c : s) {
    if (c == '\t') continue;
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

constexpr char kBom[] = "\xEF\xBB\xBF";  // UTF-8 byte order mark, as some editors save files

// Calls fn for every line with its 1-based number, after the checks every file kind shares. A last
// line without a newline is a write cut short (a full disk, a killed writer): its text may be a
// prefix of a valid line ("openblas_t16" cut to "openblas_t1"), so it is never used.
template <class Fn>
void for_each_line(const std::string& text, std::vector<ParseDiagnostic>* diags, Fn fn) {
  std::size_t pos = text.compare(0, 3, kBom) == 0 ? 3 : 0, lineno = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string::npos ? text.size() : nl;
    ++lineno;
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (nl == std::string::npos) {
      diags->push_back({lineno, fmt::format("last line has no newline (a write cut short: a full disk or a "
                                            "killed process); ignored ({} bytes)", line.size())});
      break;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLineLength) {
      diags->push_back({lineno, fmt::format("line longer than {} characters ({}); skipped",
                                            kMaxLineLength, line.size())});
      continue;
    }
    if (line.empty()) continue;
    if (has_binary(line)) {
      diags->push_back({lineno, "line holds binary (control) bytes; skipped"});
      continue;
    }
    fn(lineno, line);
  }
}

// The leading run of complete "Validator," lines of a file's text (a leading BOM included), as bytes.
std::string leading_validators(const std::string& text) {
  std::size_t pos = text.compare(0, 3, kBom) == 0 ? 3 : 0;
  for (;;) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos || text.compare(pos, 10, "Validator,") != 0) break;
    pos = nl + 1;
  }
  return pos == 3 ? std::string() : text.substr(0, pos);
}

std::atomic<WriteFn> g_write_fn{nullptr};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Owns an flock on "<path>.lock"; the lock file is never removed, so every process locks the same
// inode. It is created 0666 (the umask decides) so that one user's lock does not lock others out of a
// shared results file; a lock file this process may not write is opened read-only (flock needs no
// write access). Where no lock file exists and none may be created (results shipped in a read-only
// directory), `read_only_place()` says so: the file may still be read, never written. The lock is
// polled, never waited for without bound: another process holding it past `wait.timeout_ms` makes
// acquire() fail with `timed_out()` set.
class FileLock {
 public:
  Status acquire(const std::string& path, const LockWait& wait) {
    lock_path_ = path + ".lock";
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
    if (fd_ < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
      const int create_errno = errno;
      fd_ = ::open(lock_path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd_ < 0 && errno == ENOENT) {
        read_only_place_ = true;
        errno = create_errno;
      }
    }
    if (fd_ < 0)
      return Status(StatusCode::kIoError,
                    fmt::format("cannot open lock file '{}': {}", lock_path_, std::strerror(errno)));
    const auto t0 = std::chrono::steady_clock::now();
    bool noticed = false;
    int sleep_us = 100;  // doubles up to 20 ms: quick for a short append, cheap for a long hold
    for (;;) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return Status::ok();
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK)
        return Status(StatusCode::kIoError,
                      fmt::format("cannot lock '{}': {}", lock_path_, std::strerror(errno)));
      const double waited = ms_since(t0);
      if (waited >= wait.timeout_ms) {
        timed_out_ = true;
        return Status(StatusCode::kIoError,
                      fmt::format("gave up waiting for the lock on '{}' after {:.3g} s: another process holds it "
                                  "(TUNABLE_LOCK_TIMEOUT_MS)", lock_path_, wait.timeout_ms / 1000.0));
      }
      if (!noticed && waited >= wait.notice_after_ms) {
        noticed = true;
        if (wait.notice)
          wait.notice(fmt::format("waiting for the lock on '{}': another process holds it (giving up after "
                                  "{:.3g} s)", lock_path_, wait.timeout_ms / 1000.0));
      }
      const double left_us = (wait.timeout_ms - waited) * 1000.0;
      std::this_thread::sleep_for(std::chrono::microseconds(
          static_cast<long long>(std::max(1.0, std::min<double>(sleep_us, left_us)))));
      sleep_us = std::min(2 * sleep_us, 20000);
    }
  }
  bool read_only_place() const { return read_only_place_; }
  bool timed_out() const { return timed_out_; }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }

 private:
  std::string lock_path_;
  int fd_ = -1;
  bool read_only_place_ = false;
  bool timed_out_ = false;
};

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  /// Closes now and says whether that worked (a network file system may report a write error here).
  Status close(const std::string& path) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0)
      return Status(StatusCode::kIoError, fmt::format("cannot close '{}': {}", path, std::strerror(errno)));
    return Status::ok();
  }

 private:
  int fd_;
};

// Only regular files are results files: a FIFO would block the reader (holding the lock), a device
// would be read forever.
Status require_regular(int fd, const std::string& path) {
  struct stat sb;
  if (::fstat(fd, &sb) != 0)
    return Status(StatusCode::kIoError, fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  if (S_ISDIR(sb.st_mode)) return Status(StatusCode::kIoError, fmt::format("'{}' is a directory", path));
  if (!S_ISREG(sb.st_mode))
    return Status(StatusCode::kIoError, fmt::format("'{}' is not a regular file", path));
  return Status::ok();
}

Status write_all(int fd, const std::string& data, const std::string& path) {
  const WriteFn write_fn = g_write_fn.load();
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t w = write_fn ? write_fn(fd, data.data() + done, data.size() - done)
                         : ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kIoError,
                    fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(w);
  }
  return Status::ok();
}

long long file_size(int fd) {
  struct stat sb;
  return ::fstat(fd, &sb) == 0 ? static_cast<long long>(sb.st_size) : -1;
}

// Reads all of `fd` into `text`; refuses a file over kMaxFileBytes from its size, before reading.
Status read_fd(int fd, const std::string& path, std::string* text) {
  text->clear();
  const long long size = file_size(fd);
  if (size > static_cast<long long>(kMaxFileBytes))
    return Status(StatusCode::kIoError,
                  fmt::format("'{}' is {:.1f} MiB, over the {} MiB a results file may have; it is not read", path,
                              size / 1048576.0, kMaxFileBytes >> 20));
  if (size > 0) text->reserve(static_cast<std::size_t>(size));
  char buf[1 << 16];
  for (off_t at = 0;;) {
    ssize_t r = ::pread(fd, buf, sizeof buf, at);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kIoError, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    }
    if (r == 0) break;
    text->append(buf, static_cast<std::size_t>(r));
    at += r;
    if (text->size() > kMaxFileBytes)  // it grew while being read
      return Status(StatusCode::kIoError,
                    fmt::format("'{}' is larger than {} MiB; refusing to read it", path, kMaxFileBytes >> 20));
  }
  return Status::ok();
}

// Opens `path` for appending (created if absent), refusing anything but a regular file.
Status open_for_append(const std::string& path, int* fd_out) {
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  if (fd < 0)
    return Status(StatusCode::kIoError,
                  fmt::format("cannot open '{}' for appending: {}", path, std::strerror(errno)));
  if (Status st = require_regular(fd, path); !st.is_ok()) {
    ::close(fd);
    return st;
  }
  *fd_out = fd;
  return Status::ok();
}

// Where the file's last line starts when it has no newline (a write cut short; 0 when the whole file
// is that line), or -1 when the file ends in a newline, is empty, or holds no newline in its last
// kMaxLineLength + 2 bytes and is longer than that (then there is no line to cut back to).
long long torn_tail_start(int fd, long long size) {
  if (size <= 0) return -1;
  std::string tail(static_cast<std::size_t>(std::min<long long>(size, kMaxLineLength + 2)), '\0');
  const long long from = size - static_cast<long long>(tail.size());
  if (::pread(fd, tail.data(), tail.size(), from) != static_cast<ssize_t>(tail.size()) || tail.back() == '\n')
    return -1;
  const std::size_t nl = tail.rfind('\n');
  if (nl == std::string::npos) return from == 0 ? 0 : -1;
  return from + static_cast<long long>(nl) + 1;
}

// Appends `text` to `fd` (opened by open_for_append) under the caller's lock. A torn last line is
// removed first: completed by a newline it would parse, and a cut name may be another valid name.
// `dropped` (optional) gets it. Where no line can be cut back to, a newline is added instead so the
// new line never fuses with the old text. A write that fails (a full disk) is cut back to the size
// before it, so it leaves no torn line either.
Status append_locked(int fd, const std::string& path, const std::string& text, std::string* dropped) {
  long long keep = file_size(fd);
  if (keep < 0) return Status(StatusCode::kIoError, fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  std::string data = text;
  if (const long long torn = torn_tail_start(fd, keep); torn >= 0) {
    std::string cut(static_cast<std::size_t>(keep - torn), '\0');
    if (::pread(fd, cut.data(), cut.size(), torn) != static_cast<ssize_t>(cut.size())) cut.clear();
    if (::ftruncate(fd, torn) != 0)
      return Status(StatusCode::kIoError, fmt::format("cannot remove the torn last line of '{}': {}", path,
                                                      std::strerror(errno)));
    if (dropped != nullptr) *dropped = std::move(cut);
    keep = torn;
  } else if (keep > 0) {
    char last = '\n';
    if (::pread(fd, &last, 1, keep - 1) == 1 && last != '\n') data = "\n" + data;
  }
  Status st = write_all(fd, data, path);
  if (!st.is_ok()) {
    const int e = ::ftruncate(fd, keep) == 0 ? 0 : errno;
    st = Status(st.code(), e == 0 ? st.message() + "; the partial line was removed"
                                  : fmt::format("{}; the partial line could not be removed: {}", st.message(),
                                                std::strerror(e)));
  }
  return st;
}

// Opens, appends under the caller's lock, and closes.
Status append_to(const std::string& path, const std::string& text, std::string* dropped = nullptr) {
  int raw = -1;
  TUNABLE_RETURN_IF_ERROR(open_for_append(path, &raw));
  Fd fd(raw);
  TUNABLE_RETURN_IF_ERROR(append_locked(fd.get(), path, text, dropped));
  return fd.close(path);
}

std::string header_text(const std::vector<Validator>& v) {
  std::string s;
  for (const auto& [k, val] : v) s += fmt::format("Validator,{},{}\n", k, val);
  return s;
}

std::string backup_base(const std::string& path) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
  return fmt::format("{}.{}.bak", path, ts);
}

// Moves `path` to the first free "<path>.<UTC time>.bak[.N]" without ever replacing a file there
// (another program may create one between a check and a plain rename): renameat2's NOREPLACE, or a
// hard link and an unlink where the file system lacks it. On failure `path` is where it was.
Status move_to_backup(const std::string& path, std::string* backup) {
  const std::string base = backup_base(path);
  for (int i = 0; i < 10000; ++i) {
    const std::string name = i == 0 ? base : fmt::format("{}.{}", base, i);
    if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, name.c_str(), RENAME_NOREPLACE) == 0) {
      *backup = name;
      return Status::ok();
    }
    if (errno == EEXIST) continue;
    if (errno != EINVAL && errno != ENOSYS)
      return Status(StatusCode::kIoError,
                    fmt::format("cannot move '{}' to '{}': {}", path, name, std::strerror(errno)));
    if (::link(path.c_str(), name.c_str()) != 0) {
      if (errno == EEXIST) continue;
      // No hard links either (vfat, some network mounts): a plain rename to a name seen free, the
      // only move such a file system offers.
      struct stat sb;
      if (::stat(name.c_str(), &sb) == 0) continue;
      if (::rename(path.c_str(), name.c_str()) != 0)
        return Status(StatusCode::kIoError,
                      fmt::format("cannot move '{}' to '{}': {}", path, name, std::strerror(errno)));
      *backup = name;
      return Status::ok();
    }
    if (::unlink(path.c_str()) != 0) {
      const int e = errno;
      ::unlink(name.c_str());  // the original is still in place: drop the second name
      return Status(StatusCode::kIoError,
                    fmt::format("cannot move '{}' to '{}': {}", path, name, std::strerror(e)));
    }
    *backup = name;
    return Status::ok();
  }
  return Status(StatusCode::kIoError, fmt::format("no free backup name for '{}' after {}.*", path, base));
}

}  // namespace

std::string sanitize_field(std::string s) {
  for (char& c : s) {
    if (c == ',' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

ParsedResults parse_results(const std::string& text) {
  ParsedResults out;
  // (op, params) -> line and solution of its latest record: a later line wins (appends are newer),
  // and one that disagrees with an earlier line says so.
  std::map<std::pair<std::string, std::string>, std::pair<std::size_t, std::string>> seen;
  for_each_line(text, &out.diagnostics, [&](std::size_t lineno, const std::string& line) {
    auto f = split(line, ',');
    if (f[0] == "Validator") {
      if (f.size() != 3 || f[1].empty()) {
        out.diagnostics.push_back(
            {lineno, fmt::format("validator line needs 3 fields (Validator,KEY,VALUE), has {}",
                                 f.size())});
        return;
      }
      out.validators.emplace_back(f[1], f[2]);
      return;
    }
    if (f.size() != 3 && f.size() != 4) {
      out.diagnostics.push_back(
          {lineno, fmt::format("result line needs 3 or 4 fields (op,params,solution[,time_ms]), "
                               "has {}", f.size())});
      return;
    }
    for (std::size_t i = 0; i < 3; ++i) {
      if (f[i].empty()) {
        out.diagnostics.push_back({lineno, fmt::format("field {} is empty", i + 1)});
        return;
      }
    }
    ResultRecord r{f[0], f[1], f[2], -1.0};
    if (f.size() == 4) {
      errno = 0;
      char* end = nullptr;
      double t = std::strtod(f[3].c_str(), &end);
      // As format_record writes it ({:.6g}); a sign is refused by the t < 0 test below.
      if (!plain_decimal(f[3], true) || end != f[3].c_str() + f[3].size() || errno == ERANGE ||
          !std::isfinite(t) || t < 0) {
        out.diagnostics.push_back(
            {lineno, fmt::format("time '{}' is not a finite non-negative number", f[3])});
        return;
      }
      r.time_ms = t;
    }
    auto [it, fresh] = seen.try_emplace({r.op_signature, r.params_signature}, lineno, r.solution);
    if (!fresh) {
      if (it->second.second != r.solution)
        out.diagnostics.push_back(
            {lineno, fmt::format("{},{} was {} on line {}; this later line's {} is used", r.op_signature,
                                 r.params_signature, it->second.second, it->second.first, r.solution)});
      it->second = {lineno, r.solution};
    }
    out.records.push_back(std::move(r));
  });
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_untuned(const std::string& text,
                                                               std::vector<ParseDiagnostic>* diags) {
  std::vector<std::pair<std::string, std::string>> out;
  for_each_line(text, diags, [&](std::size_t lineno, const std::string& line) {
    auto f = split(line, ',');
    if (f[0] == "Validator") return;  // tolerated: a results file given by mistake
    if (f.size() < 2 || f[0].empty() || f[1].empty()) {
      diags->push_back({lineno, "untuned line needs op_signature,params_signature"});
      return;
    }
    out.emplace_back(f[0], f[1]);
  });
  return out;
}

std::string format_record(const ResultRecord& r) {
  if (r.time_ms < 0) return fmt::format("{},{},{}", r.op_signature, r.params_signature, r.solution);
  return fmt::format("{},{},{},{:.6g}", r.op_signature, r.params_signature, r.solution, r.time_ms);
}

std::string insert_ordinal(const std::string& path, Device device) {
  const std::string tag =
      device.kind == DeviceKind::kCpu ? std::string("cpu") : std::to_string(device.ordinal);
  if (path.find("%d") != std::string::npos) {
    std::string out;
    for (std::size_t at = 0;;) {
      const std::size_t p = path.find("%d", at);
      out += path.substr(at, p == std::string::npos ? std::string::npos : p - at);
      if (p == std::string::npos) return out;
      out += tag;
      at = p + 2;
    }
  }
  const std::string ins = device.kind == DeviceKind::kCpu ? "_cpu" : tag;
  std::size_t slash = path.find_last_of('/');
  std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return path + ins;
  return path.substr(0, dot) + ins + path.substr(dot);
}

std::optional<std::string> validator_mismatch(const std::vector<Validator>& have,
                                              const std::vector<Validator>& want) {
  std::map<std::string, std::string> h;
  for (const auto& [k, v] : have) {
    auto [it, fresh] = h.emplace(k, v);
    if (!fresh && it->second != v)
      return fmt::format("validator {} appears twice with different values", k);
  }
  if (h.empty()) return std::string("the file has no validators");
  for (const auto& [k, v] : want) {
    auto it = h.find(k);
    if (it == h.end()) return fmt::format("validator {} is missing (expected '{}')", k, v);
    if (it->second != v)
      return fmt::format("validator {} is '{}', expected '{}'", k, it->second, v);
  }
  for (const auto& [k, v] : h) {
    bool known = false;
    for (const auto& w : want) known |= w.first == k;
    if (!known) return fmt::format("unexpected validator {}='{}'", k, v);
  }
  return std::nullopt;
}

Status read_file(const std::string& path, std::string* text, bool* exists) {
  *exists = false;
  text->clear();
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) {
    if (errno == ENOENT) return Status::ok();
    return Status(StatusCode::kIoError,
                  fmt::format("cannot open '{}' for reading: {}", path, std::strerror(errno)));
  }
  Fd fd(raw);
  *exists = true;
  TUNABLE_RETURN_IF_ERROR(require_regular(fd.get(), path));
  return read_fd(fd.get(), path, text);
}

void set_write_fn_for_testing(WriteFn fn) { g_write_fn.store(fn); }

Status ResultsFile::load(std::vector<ResultRecord>* records, LoadReport* report) {
  FileLock lock;
  const Status locked = lock.acquire(path_, wait_);
  // Without a lock file and no way to make one, or with the lock held elsewhere past the timeout, the
  // file is only read: nothing here writes.
  if (!locked.is_ok() && !lock.read_only_place() && !lock.timed_out()) return locked;
  std::string text;
  bool exists = false;
  Status st = read_file(path_, &text, &exists);
  if (!st.is_ok()) {
    // An unreadable or oversized file is kept where it is; say so, never clobber it.
    return st;
  }
  auto unlocked = [&](const std::string& what) {
    return Status(StatusCode::kIoError, fmt::format("'{}' {}, and {}", path_, what, locked.message()));
  };
  header_ = header_text(validators_);
  // Empty, or our own header cut short (its writer died, or the disk was full): started again.
  const bool torn_header = text.size() < header_.size() && header_.compare(0, text.size(), text) == 0;
  if (!exists || torn_header) {
    if (!locked.is_ok()) return unlocked("cannot be created");
    report->created = true;
    int raw_fd = -1;
    TUNABLE_RETURN_IF_ERROR(open_for_append(path_, &raw_fd));
    Fd fd(raw_fd);
    if (::ftruncate(fd.get(), 0) != 0)
      return Status(StatusCode::kIoError, fmt::format("cannot start '{}' again: {}", path_, std::strerror(errno)));
    TUNABLE_RETURN_IF_ERROR(append_locked(fd.get(), path_, header_, nullptr));
    return fd.close(path_);
  }
  ParsedResults parsed = parse_results(text);
  report->diagnostics = std::move(parsed.diagnostics);
  if (auto why = validator_mismatch(parsed.validators, validators_)) {
    report->mismatch = *why;
    if (!locked.is_ok()) return unlocked(fmt::format("has other validators ({}) and cannot be moved", *why));
    if (Status moved = move_to_backup(path_, &report->backup_path); !moved.is_ok()) {
      report->backup_path.clear();
      return Status(StatusCode::kIoError,
                    fmt::format("validators of '{}' do not match ({}) and it cannot be moved aside ({}); the "
                                "file is left untouched",
                                path_, *why, moved.message()));
    }
    report->created = true;
    return append_to(path_, header_);
  }
  if (!locked.is_ok()) {
    read_only_ = lock.timed_out() ? locked.message()
                                  : fmt::format("its lock file '{}.lock' cannot be created", path_);
    report->read_only = read_only_;
  }
  header_ = leading_validators(text);
  *records = std::move(parsed.records);
  return Status::ok();
}

Status ResultsFile::append(const ResultRecord& record, std::string* dropped) {
  if (!read_only_.empty())
    return Status(StatusCode::kIoError, fmt::format("'{}' was loaded read-only ({})", path_, read_only_));
  if (!gave_up_.is_ok()) return gave_up_;
  FileLock lock;
  if (Status st = lock.acquire(path_, wait_); !st.is_ok()) {
    if (lock.timed_out())
      gave_up_ = Status(st.code(), st.message() + "; this process writes no more results there");
    return st;
  }
  int raw = -1;
  TUNABLE_RETURN_IF_ERROR(open_for_append(path_, &raw));
  Fd fd(raw);
  const long long size = file_size(fd.get());
  std::string text;
  if (size <= 0) {
    header_ = header_text(validators_);  // gone or emptied: start it again under our validators
    text = header_;
  } else {
    // The validator lines, every time (a few hundred bytes): the file may have been moved aside and
    // started again by another build or device, or copied over in place (same inode, any size).
    std::string prefix(static_cast<std::size_t>(std::min<long long>(size, 64 << 10)), '\0');
    const ssize_t got = ::pread(fd.get(), prefix.data(), prefix.size(), 0);
    prefix.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    const std::string head = leading_validators(prefix);
    const std::string ours = header_text(validators_);
    if (static_cast<long long>(prefix.size()) == size && prefix.size() < ours.size() &&
        ours.compare(0, prefix.size(), prefix) == 0) {
      // The whole file is our own header cut short (its writer died, or the disk was full): it is
      // started again.
      if (::ftruncate(fd.get(), 0) != 0)
        return Status(StatusCode::kIoError, fmt::format("cannot restart '{}' after its torn header: {}", path_,
                                                        std::strerror(errno)));
      header_ = ours;
      text = header_;
    } else if (head != header_ || head.empty()) {
      std::string now;
      TUNABLE_RETURN_IF_ERROR(read_fd(fd.get(), path_, &now));
      if (auto why = validator_mismatch(parse_results(now).validators, validators_))
        return Status(StatusCode::kIoError,
                      fmt::format("'{}' was replaced or rewritten since it was loaded and its validators are not "
                                  "this process's ({}); the result is not written there",
                                  path_, *why));
      header_ = head;
    }
  }
  text += format_record(record) + "\n";
  TUNABLE_RETURN_IF_ERROR(append_locked(fd.get(), path_, text, dropped));
  return fd.close(path_);
}

Status UntunedFile::record(const std::string& op_sig, const std::string& params_sig) {
  std::lock_guard<std::mutex> guard(mu_);
  auto key = std::make_pair(op_sig, params_sig);
  if (seen_.count(key)) return Status::ok();
  if (!gave_up_.is_ok()) return gave_up_;
  FileLock lock;
  if (Status st = lock.acquire(path_, wait_); !st.is_ok()) {
    if (lock.timed_out())
      gave_up_ = Status(st.code(), st.message() + "; this process records no more untuned problems there");
    return st;
  }
  int raw = -1;
  TUNABLE_RETURN_IF_ERROR(open_for_append(path_, &raw));
  Fd fd(raw);
  std::string text;
  TUNABLE_RETURN_IF_ERROR(read_fd(fd.get(), path_, &text));
  std::vector<ParseDiagnostic> diags;
  for (auto& p : parse_untuned(text, &diags)) seen_.insert(std::move(p));
  if (seen_.count(key)) return Status::ok();
  TUNABLE_RETURN_IF_ERROR(append_locked(fd.get(), path_, op_sig + "," + params_sig + "\n", nullptr));
  TUNABLE_RETURN_IF_ERROR(fd.close(path_));
  seen_.insert(key);
  return Status::ok();
}

std::optional<ResultRecord> ResultsStore::find(const std::string& op_sig,
                                               const std::string& params_sig) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(op_sig);
  if (it == map_.end()) return std::nullopt;
  auto jt = it->second.find(params_sig);
  if (jt == it->second.end()) return std::nullopt;
  return jt->second;
}

void ResultsStore::put(const ResultRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  map_[r.op_signature][r.params_signature] = r;
}

std::vector<ResultRecord> ResultsStore::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ResultRecord> out;
  for (const auto& [op, m] : map_)
    for (const auto& [p, r] : m) out.push_back(r);
  return out;
}

std::size_t ResultsStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [op, m] : map_) n += m.size();
  return n;
}

}  // namespace tunable
