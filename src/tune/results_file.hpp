// Results and untuned files in TunableOp's CSV grammar, and the thread-safe store behind them.
//
//   Validator,KEY,VALUE                          (identify everything that makes a result invalid)
//   op_signature,params_signature,solution,time_ms   (time may be absent: 3-field lines)
//
// Files are appended one line at a time under an advisory lock on "<file>.lock", so several
// processes tuning into one file lose nothing. A file whose validators do not match is never
// overwritten: it is renamed to a backup and a fresh one is started.
#pragma once

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
inline constexpr std::size_t kMaxFileBytes = 256u << 20;

/// Parses a results file's text. Never throws; bad lines are skipped with a diagnostic.
ParsedResults parse_results(const std::string& text);
/// Parses an untuned file: "op_signature,params_signature" per line.
std::vector<std::pair<std::string, std::string>> parse_untuned(const std::string& text,
                                                               std::vector<ParseDiagnostic>* diags);
/// One CSV line (no newline) for a record; time printed with 6 significant digits.
std::string format_record(const ResultRecord& r);
/// Validator values must not contain separators; commas and control bytes become ' '.
std::string sanitize_field(std::string s);

/// "%d" -> ordinal, else the ordinal ("_cpu" on the CPU) before the extension.
std::string insert_ordinal(const std::string& path, Device device);

/// The first mismatch between what a file has and what this build expects, or nullopt.
std::optional<std::string> validator_mismatch(const std::vector<Validator>& have,
                                              const std::vector<Validator>& want);

struct LoadReport {
  bool created = false;      ///< the file did not exist (or was empty) and a header was written
  std::string backup_path;   ///< set when a mismatching file was moved aside
  std::string mismatch;      ///< why
  std::vector<ParseDiagnostic> diagnostics;
};

/// Which file a ResultsFile last read or wrote, to notice it being replaced under it.
struct FileIdentity {
  unsigned long long dev = 0, ino = 0;
  long long size = 0;
};

class ResultsFile {
 public:
  ResultsFile(std::string path, std::vector<Validator> validators)
      : path_(std::move(path)), validators_(std::move(validators)) {}
  const std::string& path() const { return path_; }
  /// Reads the file under the lock, creating it with the validator header when absent or empty;
  /// moves a mismatching file to a backup and starts a fresh one. Only regular files are read. A file
  /// whose lock file cannot be created (a read-only directory) is still read, and then never written.
  Status load(std::vector<ResultRecord>* records, LoadReport* report);
  /// Appends one record under the lock (recreating the header if the file vanished). Refuses when the
  /// file was replaced since load() by one with other validators, so a result never lands under
  /// another build's or device's header.
  Status append(const ResultRecord& record);

 private:
  std::string path_;
  std::vector<Validator> validators_;
  FileIdentity identity_;
  bool read_only_ = false;
};

/// Untuned problems, appended and deduplicated across processes.
class UntunedFile {
 public:
  explicit UntunedFile(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  /// Appends unless the pair is already in the file (re-read under the lock).
  Status record(const std::string& op_sig, const std::string& params_sig);

 private:
  std::string path_;
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

/// Reads a whole file (up to kMaxFileBytes); kIoError names the path and errno text.
Status read_file(const std::string& path, std::string* text, bool* exists);

}  // namespace tunable
