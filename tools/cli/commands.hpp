// The `tunable` command line: one function per subcommand, each returning an exit code.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tunable::cli {

struct TuneArgs {
  long long m = 512, n = 1024, k = 2048;
  std::string dtype = "fp32";
  std::string trans = "nn";
  std::string device = "auto";  ///< cpu, cuda, or auto (cuda when a GPU is visible)
  std::string file = "tunable_results.csv";
  double seconds = 1.0;         ///< wall time per measured phase
  int verbose = 1;
};
int run_tune(const TuneArgs& a);

struct ShowArgs {
  std::string file;
};
int run_show(const ShowArgs& a);

/// Offline tuning takes the TUNABLE_* environment like a program would; --file and --verbose, when
/// given, override it.
struct TuneFileArgs {
  std::string untuned;
  std::string device = "auto";
  std::string file;
  int verbose = 0;
  bool file_given = false, verbose_given = false;
  /// `--devices all|0,1,...`: one process per GPU, problems handed out biggest first, files merged.
  std::string devices;
  /// Internal (the processes `--devices` starts): take problems one at a time from this counter file.
  std::string claim;
};
int run_tune_file(const TuneFileArgs& a);
/// `tune-file --devices`: the parent of one tuning process per GPU (tools/cli/tune_devices.cpp).
int run_tune_file_on_devices(const TuneFileArgs& a);

/// An untuned file's problems, each once, in the order of its first line (files concatenated from
/// several runs repeat them). Bad lines are printed to stderr and counted in `bad_lines`.
std::vector<std::pair<std::string, std::string>> read_unique_problems(const std::string& path,
                                                                      std::size_t* duplicates,
                                                                      std::size_t* bad_lines);

/// `tunable run`: COMMAND under the cuBLAS interposer in one of three modes (use, record, tune).
struct RunArgs {
  std::string mode = "use";
  std::string file;     ///< TUNABLE_FILENAME for the program, when given
  std::string untuned;  ///< TUNABLE_UNTUNED_FILENAME, when given
  std::string report;   ///< where the interposer's report goes (default: a temporary file, printed)
  std::vector<std::string> command;
};
int run_program(const RunArgs& a);

}  // namespace tunable::cli
