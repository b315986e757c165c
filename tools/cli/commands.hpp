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

/// This executable's path (/proc/self/exe), or "" when it cannot be read.
std::string executable_path();

/// What both engine commands take: the model directory and how to load it.
struct ModelRunArgs {
  std::string model;
  int device = 0;
  long long max_seq_len = 0;  ///< 0: generate: the model's (at most 4096); bench-model: prompt + new tokens
  bool tune = false;          ///< tune every problem before capture, into the results file
  std::string file;           ///< results file (default: TUNABLE_FILENAME, else tunable_results.csv)
  bool no_graphs = false;
  bool fp8 = false;
  int prefill_chunk = 512;    ///< rows per prefill pass
};

/// `tunable generate`: text in, text streamed out (or token ids in and out), optionally a JSON dump
/// of the logits.
struct GenerateArgs {
  ModelRunArgs run;
  std::string prompt;      ///< text, tokenized with the model directory's tokenizer
  std::string prompt_ids;  ///< "1,2,3" (instead of text; ids are printed instead of text)
  bool prompt_ids_given = false;  ///< --prompt-ids was given, even as "" (an error, not a text prompt)
  int max_new_tokens = 64;
  float temperature = 0.f;
  int top_k = 0;
  float top_p = 1.f;
  unsigned long long seed = 0;
  int batch = 1;
  bool ignore_eos = false;
  std::string dump;        ///< JSON: tokens, prompt logits, every step's logits
};
int run_generate(const GenerateArgs& a);

/// `tunable bench-model`: prefill and decode tokens/s, bandwidth, GPU time by kernel kind, memory.
struct BenchModelArgs {
  ModelRunArgs run;
  int prompt_len = 128;
  int new_tokens = 256;
  std::string batch = "1,8";
  int runs = 3;
  std::string json;
};
int run_bench_model(const BenchModelArgs& a);

}  // namespace tunable::cli
