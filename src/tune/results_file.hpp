// Results and untuned files in TunableOp's CSV grammar, and the thread-safe store behind them.
//
//   Validator,KEY,VALUE                          (identify everything that makes a result invalid)
//   op_signature,params_signature,solution,time_ms   (time may be absent: 3-field lines)
//
// Files are appended one line at a time under an advisory lock on "<file>.lock", so several
// processes tuning into one file lose nothing. A file whose validators do not match is never
// overwritten: it is renamed to a backup and a fresh one is started. A last line without a newline
// is a write cut short (a full disk, a killed writer): it is reported and ignored when read, and
// removed by the next append; an append that fails is cut back to the size before it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tunable/context.hpp"
#include "tunable/status.hpp"
#include "tunable/types.hpp"

namespace tunable {

class Logger;

using Validator = std::pair<std::string, std::string>;

struct ParseDiagnostic {
  std::size_t line = 0;  ///< 1-based
  std::string message;
};

struct ParsedResults {
  std::vector<Validator> validators;
  std::vector<ResultRecord> records;
  std::vector<ParseDiagnostic> diagnostics;  ///< lines that were skipped, and why
};

inline constexpr std::size_t kMaxLineLength = 4096;
/// Larger files are refused before reading a byte of them: a results file holds one line of about
/// 100 bytes per problem, so 64 MiB is over half a million problems, and parsing one takes about
/// 8 bytes of memory per byte of file.
inline constexpr std::size_t kMaxFileBytes = 64u << 20;

/// Parses a results file's text. Never throws; bad lines are skipped with a diagnostic naming their
/// line. A leading UTF-8 byte order mark is ignored; a last line without a newline is torn (skipped).
ParsedResults parse_results(const std::string& text);
/// Parses an untuned file: "op_signature,params_signature" per line.
std::vector<std::pair<std::string, std::string>> parse_untuned(const std::string& text,
                                                               std::vector<ParseDiagnostic>* diags);
/// One CSV line (no newline) for a record; time printed with 6 significant digits.
std::string format_record(const ResultRecord& r);
/// Validator values must not contain separators; commas and control bytes become ' '.
std::string sanitize_field(std::string s);

/// Every "%d" -> ordinal, else the ordinal ("_cpu" on the CPU) before the extension.
std::string insert_ordinal(const std::string& path, Device device);

/// The first mismatch between what a file has and what this build expects, or nullopt.
std::optional<std::string> validator_mismatch(const std::vector<Validator>& have,
                                              const std::vector<Validator>& want);

struct LoadReport {
  bool created = false;      ///< the file did not exist (or was empty) and a header was written
  std::string backup_path;   ///< set when a mismatching file was moved aside
  std::string mismatch;      ///< why
  std::string read_only;     ///< set when the file was read but will not be written, and why
  std::vector<ParseDiagnostic> diagnostics;
};

/// How long the lock of a results or untuned file is waited for: another process holding it (a
/// stuck tuning run, or anything that took "<file>.lock") must not block the host program forever.
struct LockWait {
  int timeout_ms = 10000;      ///< then give up: nothing more is written to that file (0: one try)
  int notice_after_ms = 1000;  ///< `notice` is called once when the wait has lasted this long
  std::function<void(const std::string&)> notice;  ///< gets "waiting for the lock on ..."
};

/// Test seam: results and untuned files are written through this function (::write when null). A
/// test sets one that writes part of a buffer and then fails, to play a full disk or a writer killed
/// in the middle of a line.
using WriteFn = ssize_t (*)(int fd, const void* buf, std::size_t count);
void set_write_fn_for_testing(WriteFn fn);

class ResultsFile {
 public:
  ResultsFile(std::string path, std::vector<Validator> validators, LockWait wait = {})
      : path_(std::move(path)), validators_(std::move(validators)), wait_(std::move(wait)) {}
  const std::string& path() const { return path_; }
  /// Reads the file under the lock, creating it with the validator header when absent or empty;
  /// moves a mismatching file to a backup and starts a fresh one. Only regular files are read. A file
  /// whose lock cannot be had (no lock file can be created next to it, or another process held the
  /// lock past the timeout) is still read, and then never written (`report->read_only` says why).
  Status load(std::vector<ResultRecord>* records, LoadReport* report);
  /// Appends one record under the lock (recreating the header if the file vanished or was emptied).
  /// The file's validator lines are read again first: a result never lands under another build's or
  /// device's header (a file moved aside and started again, or copied over in place). A torn last
  /// line is removed first (`dropped` gets it); a failed write is cut back. After a lock timeout this
  /// file is given up: later appends fail at once.
  Status append(const ResultRecord& record, std::string* dropped = nullptr);

 private:
  std::string path_;
  std::vector<Validator> validators_;
  LockWait wait_;
  std::string header_;     // the file's leading validator lines as last read or written
  std::string read_only_;  // why this file is not written (empty: it is)
  Status gave_up_;         // a lock timeout: every later append returns it
};

/// Untuned problems, appended and deduplicated across processes.
class UntunedFile {
 public:
  explicit UntunedFile(std::string path, LockWait wait = {}) : path_(std::move(path)), wait_(std::move(wait)) {}
  const std::string& path() const { return path_; }
  /// Appends unless the pair is already in the file (re-read under the lock). A torn last line is
  /// removed first and a failed write cut back, as for results; after a lock timeout the file is
  /// given up (later records fail at once).
  Status record(const std::string& op_sig, const std::string& params_sig);

 private:
  std::string path_;
  LockWait wait_;
  Status gave_up_;
  std::mutex mu_;
  std::set<std::pair<std::string, std::string>> seen_;
};

/// Thread-safe op signature -> params signature -> record.
class ResultsStore {
 public:
  std::optional<ResultRecord> find(const std::string& op_sig, const std::string& params_sig) const;
  void put(const ResultRecord& r);
  std::vector<ResultRecord> all() const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, ResultRecord>> map_;
};

/// Reads a whole regular file; kIoError names the path and errno text. A file over kMaxFileBytes is
/// refused from its size, before anything is read.
Status read_file(const std::string& path, std::string* text, bool* exists);

}  // namespace tunable
