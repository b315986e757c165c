// The `tunable` command line: one function per subcommand, each returning an exit code.
#pragma once

#include <string>

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

}  // namespace tunable::cli
