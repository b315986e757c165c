// `tunable`: tune a GEMM like the TunableOp blog's Example 1, show results files, tune offline.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.hpp"
#include "tunable/status.hpp"

int main(int argc, char** argv) {
  using namespace tunable::cli;
  CLI::App app{"tunable: GEMM tuning runtime for NVIDIA GPUs (and CPU providers)"};
  app.require_subcommand(1);

  TuneArgs ta;
  auto* tune = app.add_subcommand(
      "tune", "Time one GEMM untuned, then tuned, then reloaded from the results file");
  tune->add_option("--m", ta.m, "rows of C (BLAS column-major m)")->capture_default_str();
  tune->add_option("--n", ta.n, "columns of C")->capture_default_str();
  tune->add_option("--k", ta.k, "inner dimension")->capture_default_str();
  tune->add_option("--dtype", ta.dtype, "fp32, fp64, tf32, fp16, bf16")->capture_default_str();
  tune->add_option("--trans", ta.trans, "transposes of A and B: nn, nt, tn, tt")->capture_default_str();
  tune->add_option("--device", ta.device, "cpu, cuda or auto")->capture_default_str();
  tune->add_option("--file", ta.file, "results file (the device ordinal is inserted)")
      ->capture_default_str();
  tune->add_option("--seconds", ta.seconds, "seconds per measured phase")->capture_default_str();
  tune->add_option("--verbose", ta.verbose, "tuning log level 0-3")->capture_default_str();

  ShowArgs sa;
  auto* show = app.add_subcommand("show", "Print a results file (ours or PyTorch TunableOp's)");
  show->add_option("file", sa.file, "results file")->required();

  TuneFileArgs tf;
  auto* tfile = app.add_subcommand("tune-file", "Tune every problem of an untuned file offline");
  tfile->add_option("untuned", tf.untuned, "file written with TUNABLE_RECORD_UNTUNED=1")->required();
  tfile->add_option("--device", tf.device, "cpu, cuda or auto")->capture_default_str();
  tfile->add_option("--file", tf.file, "results file to extend")->capture_default_str();
  tfile->add_option("--verbose", tf.verbose, "tuning log level 0-3")->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*tune) return run_tune(ta);
    if (*show) return run_show(sa);
    if (*tfile) return run_tune_file(tf);
  } catch (const tunable::Error& e) {
    std::fprintf(stderr, "tunable: %s\n", e.what());
    return 1;
  }
  return 2;
}
