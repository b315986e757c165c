// `tunable`: tune a GEMM like the TunableOp blog's Example 1, show results files, tune offline.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "cli/commands.hpp"
#include "tunable/status.hpp"

namespace {

// CLI::Range compares with < and >, which NaN passes: an option read as a double must first be a
// finite number.
const CLI::Validator kFinite(
    [](std::string& v) {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      return end != v.c_str() && *end == '\0' && std::isfinite(d) ? std::string() : "'" + v + "' is not a finite number";
    },
    "FINITE", "finite");

// A 64-bit seed in plain decimal: the default conversion takes "-1" as 2^64 - 1 and saturates
// values past 2^64 - 1 without a word.
const CLI::Validator kSeed(
    [](std::string& v) {
      const std::string bad = "'" + v + "' is not a seed (a decimal integer from 0 to 18446744073709551615)";
      if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos) return bad;
      errno = 0;
      (void)std::strtoull(v.c_str(), nullptr, 10);
      return errno == ERANGE ? bad : std::string();
    },
    "SEED", "seed");

int run_main(int argc, char** argv) {
  using namespace tunable::cli;
  CLI::App app{"tunable: GEMM tuning runtime for NVIDIA GPUs (and CPU providers)"};
  // At most one; none is reported below. (require_subcommand(1) would answer an unknown word
  // with "A subcommand is required" instead of naming it.)
  app.require_subcommand(0, 1);

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
  tune->add_option("--seconds", ta.seconds, "seconds per measured phase")
      ->check(CLI::Range(1e-3, 3600.0))
      ->capture_default_str();
  tune->add_option("--verbose", ta.verbose, "tuning log level 0-3")->check(CLI::Range(0, 3))->capture_default_str();

  ShowArgs sa;
  auto* show = app.add_subcommand("show", "Print a results file (ours or PyTorch TunableOp's) or an interposer "
                                         "report (tunable run --report)");
  show->add_option("file", sa.file, "results file")->required();

  TuneFileArgs tf;
  auto* tfile = app.add_subcommand("tune-file", "Tune every problem of an untuned file offline");
  tfile->add_option("untuned", tf.untuned, "file written with TUNABLE_RECORD_UNTUNED=1")->required();
  auto* tf_device = tfile->add_option("--device", tf.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  tfile->add_option("--devices", tf.devices,
                    "tune on several GPUs at once: 'all' or ordinals (0,1); one process per GPU, the results "
                    "merged into every GPU's results file")
      ->excludes(tf_device);
  // The processes --devices starts take their problems from a shared counter file.
  tfile->add_option("--claim", tf.claim)->group("");
  auto* tf_file = tfile->add_option("--file", tf.file, "results file to extend (default: TUNABLE_FILENAME, else "
                                    "tunable_results.csv)");
  auto* tf_verbose = tfile->add_option("--verbose", tf.verbose, "tuning log level 0-3 (default: TUNABLE_VERBOSE)")
                         ->check(CLI::Range(0, 3));

  RunArgs ra;
  auto* run = app.add_subcommand("run", "Run a program (e.g. python app.py) with its cuBLAS GEMMs served by tuned "
                                        "solutions: tunable run [--use|--record|--tune] -- COMMAND ...");
  auto* mode = run->add_option_group("mode", "what to do with a GEMM that has no stored result");
  mode->add_flag_callback("--use", [&] { ra.mode = "use"; }, "stored results only; misses go to cuBLAS (default)");
  mode->add_flag_callback("--record", [&] { ra.mode = "record"; },
                          "as --use, and write each miss to the untuned file (for tune-file)");
  mode->add_flag_callback("--tune", [&] { ra.mode = "tune"; }, "tune each miss at its first call");
  mode->require_option(0, 1);
  run->add_option("--file", ra.file, "results file (default: TUNABLE_FILENAME, else tunable_results.csv)");
  run->add_option("--untuned", ra.untuned, "untuned file for --record (default: TUNABLE_UNTUNED_FILENAME)");
  run->add_option("--report", ra.report, "append the interposer's report to this file instead of printing it");
  run->add_option("command", ra.command, "the program and its arguments, after --")->required()->expected(-1);

  auto model_opts = [](CLI::App* c, ModelRunArgs& m) {
    c->add_option("--model", m.model, "Hugging Face model directory (config.json, *.safetensors)")->required();
    c->add_option("--device", m.device, "CUDA device ordinal")->check(CLI::Range(0, 1023))->capture_default_str();
    c->add_option("--max-seq-len", m.max_seq_len, "positions the KV cache holds per sequence")
        ->check(CLI::Range(0LL, 1LL << 24));
    c->add_flag("--tune", m.tune, "tune every GEMM and fused op the model runs (before any graph capture)");
    c->add_option("--file", m.file, "results file (default: TUNABLE_FILENAME, else tunable_results.csv)");
    c->add_option("--prefill-chunk", m.prefill_chunk, "rows per prefill forward pass (longer prompts take several)")
        ->check(CLI::Range(16, 16384))->capture_default_str();
    c->add_flag("--no-graphs", m.no_graphs, "launch decode steps one kernel at a time instead of as CUDA graphs");
    c->add_flag("--fp8", m.fp8,
                "FP8 e4m3 weights with per-channel scales, quantized at load (half the weight bytes per token)");
  };
  GenerateArgs ga;
  auto* gen = app.add_subcommand("generate", "Generate tokens with the decode engine");
  model_opts(gen, ga.run);
  auto* prompt_text = gen->add_option("--prompt", ga.prompt, "prompt text (the model's tokenizer.json or tokenizer.model "
                                      "tokenizes it; a BOS is added where the tokenizer adds one)");
  auto* prompt_ids = gen->add_option("--prompt-ids", ga.prompt_ids, "prompt as comma-separated token ids (ids are "
                                     "printed, not text)");
  prompt_text->excludes(prompt_ids);
  auto* prompt_group = gen->add_option_group("prompt");
  prompt_group->add_option(prompt_text);
  prompt_group->add_option(prompt_ids);
  prompt_group->require_option(1);
  gen->add_option("--max-new-tokens", ga.max_new_tokens)->check(CLI::Range(1, 1 << 24))->capture_default_str();
  gen->add_option("--temperature", ga.temperature, "0: greedy")->check(kFinite)->check(CLI::Range(0.0, 1e6))->capture_default_str();
  gen->add_option("--top-k", ga.top_k, "0: off")->check(CLI::Range(0, 1 << 30))->capture_default_str();
  gen->add_option("--top-p", ga.top_p, "1: off")->check(kFinite)->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  gen->add_option("--seed", ga.seed)->check(kSeed)->capture_default_str();
  gen->add_option("--batch", ga.batch, "copies of the prompt generated together")->check(CLI::Range(1, 256))->capture_default_str();
  gen->add_flag("--ignore-eos", ga.ignore_eos, "generate --max-new-tokens even past an end-of-sequence token");
  gen->add_option("--dump", ga.dump, "write tokens, prompt logits and each step's logits as JSON (slow; for checks)");

  BenchModelArgs ba;
  auto* bench = app.add_subcommand("bench-model", "Prefill and decode tokens/s of the decode engine on random prompts");
  model_opts(bench, ba.run);
  bench->add_option("--prompt-len", ba.prompt_len, "prompt tokens (padded to a multiple of 8)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  bench->add_option("--new-tokens", ba.new_tokens)->check(CLI::Range(2, 1 << 20))->capture_default_str();
  bench->add_option("--batch", ba.batch, "batch sizes, comma-separated")->capture_default_str();
  bench->add_option("--runs", ba.runs, "timed runs per batch size (medians)")->check(CLI::Range(1, 100))->capture_default_str();
  bench->add_option("--json", ba.json, "also write the results as JSON");

  CLI11_PARSE(app, argc, argv);
  tf.file_given = tf_file->count() > 0;
  ga.prompt_ids_given = prompt_ids->count() > 0;
  tf.verbose_given = tf_verbose->count() > 0;
  int rc = 2;
  try {
    if (*tune) rc = run_tune(ta);
    else if (*show) rc = run_show(sa);
    else if (*tfile) rc = run_tune_file(tf);
    else if (*run) rc = run_program(ra);
    else if (*gen) rc = run_generate(ga);
    else if (*bench) rc = run_bench_model(ba);
    else std::fprintf(stderr, "tunable: a subcommand is required (tune, show, tune-file, run, generate or bench-model); see --help\n");
  } catch (const tunable::Error& e) {
    std::fprintf(stderr, "tunable: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // e.g. no memory for a --m --n --k this large
    std::fprintf(stderr, "tunable: %s\n", e.what());
    return 1;
  }
  // Output that could not be written (a full disk, a closed pipe) is a failure, not a success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "tunable: writing the output failed\n");
    return 1;
  }
  return rc;
}

}  // namespace

// The process ends without running the libraries' exit code: under an address-space limit
// (`ulimit -v`) too tight for OpenBLAS's per-thread buffer (128 MiB), Debian's OpenBLAS 0.3.21 has
// each worker thread retry the allocation forever, and its library destructor joins those threads,
// so the CLI printed its error and then never ended. Everything the CLI owns is released when
// run_main returns (results are appended as found, locks are the kernel's to drop); what is left to
// do is flushing the C streams.
int main(int argc, char** argv) {
  const int rc = run_main(argc, argv);
  std::fflush(nullptr);
  std::_Exit(rc);
}
