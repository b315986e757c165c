// The `tunable` command line: one function per subcommand, each returning an exit code.
#pragma once

#include <string>
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
};
int run_tune_file(const TuneFileArgs& a);

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
