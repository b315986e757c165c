#include "tune/results_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

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

// Calls fn for every line with its 1-based number, after the checks every file kind shares.
template <class Fn>
void for_each_line(const std::string& text, std::vector<ParseDiagnostic>* diags, Fn fn) {
  std::size_t pos = 0, lineno = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string::npos ? text.size() : nl;
    ++lineno;
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
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

// Owns an flock on "<path>.lock"; the lock file is never removed, so every process locks the same
// inode. It is created 0666 (the umask decides) so that one user's lock does not lock others out of a
// shared results file; a lock file this process may not write is opened read-only (flock needs no
// write access). Where no lock file exists and none may be created (results shipped in a read-only
// directory), `read_only_place()` says so: the file may still be read, never written.
class FileLock {
 public:
  Status acquire(const std::string& path) {
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
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR)
        return Status(StatusCode::kIoError,
                      fmt::format("cannot lock '{}': {}", lock_path_, std::strerror(errno)));
    }
    return Status::ok();
  }
  bool read_only_place() const { return read_only_place_; }
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
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kIoError,
                    fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(w);
  }
  return Status::ok();
}

// Appends `text`; when the file does not end in a newline (a torn or hand-edited last line) one is
// added first, so the new line never fuses with the old one. `written` (optional) gets the file's
// identity after the write.
Status append_text(const std::string& path, const std::string& text, FileIdentity* written = nullptr) {
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  if (fd < 0)
    return Status(StatusCode::kIoError,
                  fmt::format("cannot open '{}' for appending: {}", path, std::strerror(errno)));
  if (Status st = require_regular(fd, path); !st.is_ok()) {
    ::close(fd);
    return st;
  }
  struct stat sb;
  char last = '\n';
  if (::fstat(fd, &sb) == 0 && sb.st_size > 0 && ::pread(fd, &last, 1, sb.st_size - 1) != 1)
    last = '\n';
  Status st = write_all(fd, last == '\n' ? text : "\n" + text, path);
  if (st.is_ok() && written != nullptr && ::fstat(fd, &sb) == 0)
    *written = FileIdentity{static_cast<unsigned long long>(sb.st_dev), static_cast<unsigned long long>(sb.st_ino),
                            static_cast<long long>(sb.st_size)};
  if (::close(fd) != 0 && st.is_ok())
    st = Status(StatusCode::kIoError, fmt::format("cannot close '{}': {}", path, std::strerror(errno)));
  return st;
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
  if (auto p = path.find("%d"); p != std::string::npos)
    return path.substr(0, p) + tag + path.substr(p + 2);
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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Status::ok();
    return Status(StatusCode::kIoError,
                  fmt::format("cannot open '{}' for reading: {}", path, std::strerror(errno)));
  }
  *exists = true;
  if (Status st = require_regular(fd, path); !st.is_ok()) {
    ::close(fd);
    return st;
  }
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      Status st(StatusCode::kIoError, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
      ::close(fd);
      return st;
    }
    if (r == 0) break;
    text->append(buf, static_cast<std::size_t>(r));
    if (text->size() > kMaxFileBytes) {
      ::close(fd);
      return Status(StatusCode::kIoError,
                    fmt::format("'{}' is larger than {} MiB; refusing to read it", path,
                                kMaxFileBytes >> 20));
    }
  }
  ::close(fd);
  return Status::ok();
}

Status ResultsFile::load(std::vector<ResultRecord>* records, LoadReport* report) {
  FileLock lock;
  const Status locked = lock.acquire(path_);
  // Without a lock file and no way to make one, the file is only read: nothing here writes.
  if (!locked.is_ok() && !lock.read_only_place()) return locked;
  std::string text;
  bool exists = false;
  Status st = read_file(path_, &text, &exists);
  if (!st.is_ok()) {
    // An unreadable or oversized file is kept where it is; say so, never clobber it.
    return st;
  }
  auto unlocked = [&](const char* what) {
    return Status(StatusCode::kIoError, fmt::format("'{}' {}, and {}", path_, what, locked.message()));
  };
  if (!exists || text.empty()) {
    if (!locked.is_ok()) return unlocked("cannot be created");
    report->created = true;
    return append_text(path_, header_text(validators_), &identity_);
  }
  ParsedResults parsed = parse_results(text);
  report->diagnostics = std::move(parsed.diagnostics);
  if (auto why = validator_mismatch(parsed.validators, validators_)) {
    report->mismatch = *why;
    if (!locked.is_ok()) return unlocked(fmt::format("has other validators ({}) and cannot be moved", *why).c_str());
    if (Status moved = move_to_backup(path_, &report->backup_path); !moved.is_ok()) {
      report->backup_path.clear();
      return Status(StatusCode::kIoError,
                    fmt::format("validators of '{}' do not match ({}) and it cannot be moved aside ({}); the "
                                "file is left untouched",
                                path_, *why, moved.message()));
    }
    report->created = true;
    return append_text(path_, header_text(validators_), &identity_);
  }
  read_only_ = !locked.is_ok();
  struct stat sb;
  if (::stat(path_.c_str(), &sb) == 0)
    identity_ = FileIdentity{static_cast<unsigned long long>(sb.st_dev), static_cast<unsigned long long>(sb.st_ino),
                             static_cast<long long>(sb.st_size)};
  *records = std::move(parsed.records);
  return Status::ok();
}

Status ResultsFile::append(const ResultRecord& record) {
  if (read_only_)
    return Status(StatusCode::kIoError,
                  fmt::format("'{}' was loaded read-only (its lock file '{}.lock' cannot be created)", path_, path_));
  FileLock lock;
  if (Status st = lock.acquire(path_); !st.is_ok()) return st;
  struct stat sb;
  std::string text;
  if (::stat(path_.c_str(), &sb) != 0 || sb.st_size == 0) {
    text = header_text(validators_);  // gone or emptied: start it again under our validators
  } else if (static_cast<unsigned long long>(sb.st_dev) != identity_.dev ||
             static_cast<unsigned long long>(sb.st_ino) != identity_.ino || sb.st_size < identity_.size) {
    // Replaced or rewritten since this process read it (another build or device moved it aside and
    // started its own): append only if its validators are still ours.
    std::string now;
    bool exists = false;
    TUNABLE_RETURN_IF_ERROR(read_file(path_, &now, &exists));
    if (auto why = validator_mismatch(parse_results(now).validators, validators_))
      return Status(StatusCode::kIoError,
                    fmt::format("'{}' was replaced since it was loaded and its validators are not this "
                                "process's ({}); the result is not written there",
                                path_, *why));
  }
  text += format_record(record) + "\n";
  return append_text(path_, text, &identity_);
}

Status UntunedFile::record(const std::string& op_sig, const std::string& params_sig) {
  std::lock_guard<std::mutex> guard(mu_);
  auto key = std::make_pair(op_sig, params_sig);
  if (seen_.count(key)) return Status::ok();
  FileLock lock;
  if (Status st = lock.acquire(path_); !st.is_ok()) return st;
  std::string text;
  bool exists = false;
  if (Status st = read_file(path_, &text, &exists); !st.is_ok()) return st;
  std::vector<ParseDiagnostic> diags;
  for (auto& p : parse_untuned(text, &diags)) seen_.insert(std::move(p));
  if (seen_.count(key)) return Status::ok();
  std::string line = op_sig + "," + params_sig + "\n";
  if (Status st = append_text(path_, line); !st.is_ok()) return st;
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
