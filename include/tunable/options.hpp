// Tuning options: one struct, every field documented, filled from the environment in one place.
//
// Precedence (lowest to highest): the defaults below < the TUNABLE_* environment variables, read
// once when a Context is created (or by Options::from_environment) < values set through the C++
// API afterwards (Context::set_options / Context::options()). The environment never silently
// overrides something the program set explicitly.
#pragma once

#include <cstdint>
#include <string>

#include "tunable/status.hpp"

namespace tunable {

struct Options {
  /// TUNABLE_ENABLED (0/1, default 0). Off: every op runs its Default solution, no lookup at all.
  bool enabled = false;
  /// TUNABLE_TUNING (0/1, default 1). Off: existing results are used, misses run Default, nothing
  /// is ever tuned.
  bool tuning = true;
  /// TUNABLE_FILENAME (default "tunable_results.csv"). "%d" is replaced by the device ordinal;
  /// otherwise the ordinal ("_cpu" for the CPU) is inserted before the extension, as TunableOp does.
  /// Empty: results are kept in memory only.
  std::string filename = "tunable_results.csv";
  /// TUNABLE_VERBOSE (0-3, default 0). 1: file I/O, validators, one line per tuned problem and its
  /// top five; 2: the per-candidate tree; 3: every timing probe.
  int verbose = 0;
  /// TUNABLE_VERBOSE_FILENAME (default "err"): "err" = stderr, "out" = stdout, else a file path
  /// (appended to; the device ordinal is inserted like for `filename`).
  std::string verbose_filename = "err";
  /// TUNABLE_NUMERICAL_CHECK (default 1): 0, 1, or "ATOL_RTOL" (e.g. "1e-3_1e-3") to replace the
  /// per-dtype tolerances. A candidate passes when every element has |x - ref| <= atol * rms(ref)
  /// + rtol * |ref|; NaN or Inf always fails.
  bool numerical_check = true;
  /// Tolerance override from TUNABLE_NUMERICAL_CHECK=ATOL_RTOL; negative = per-dtype default.
  double atol = -1.0;
  double rtol = -1.0;
  /// TUNABLE_MAX_TUNING_DURATION_MS (ms, default 30; 0 = no duration cap). Caps the timed phase of
  /// one candidate, pruning probes included.
  double max_tuning_duration_ms = 30.0;
  /// TUNABLE_MAX_TUNING_ITERATIONS (default 100; 0 = no iteration cap). At least one iteration
  /// is always timed, even when a cap would allow none.
  int max_tuning_iterations = 100;
  /// TUNABLE_MAX_WARMUP_DURATION_MS (ms, default 5; 0 = no duration cap).
  double max_warmup_duration_ms = 5.0;
  /// TUNABLE_MAX_WARMUP_ITERATIONS (default 10; 0 = no iteration cap). When both warmup caps are 0
  /// no warmup runs.
  int max_warmup_iterations = 10;
  /// TUNABLE_GRAPH_TIEBREAK (0/1, default 1). GPU: the final round's finalists (the three fastest and
  /// Default) are also timed as replays of a CUDA graph of 8-64 calls (captured once, replayed six
  /// times, on top of the iteration caps above). Those within 1 % of the fastest back-to-back (a tie
  /// at the timer's resolution) are ranked by their graph time, and all finalists are when one of
  /// them runs in graphs in <= 80 % of its back-to-back time (the back-to-back times are then mostly
  /// launch overhead). Decode runs in graphs: GEMM picks tied back-to-back measured 2-3 % apart there,
  /// few-row fused ops up to 40 %. Off, or where the calls cannot be captured: the back-to-back
  /// choice, as TunableOp makes it.
  bool graph_tiebreak = true;
  /// TUNABLE_ROTATING_BUFFER_SIZE (MiB, default -1). -1: rotate enough input copies that their
  /// total exceeds eight times the L2 for GPU GEMMs (twice measured too fast on an H100), twice the
  /// L2 for the fused ops and twice the LLC on the CPU; 0: one copy, no rotation; N > 0: at least
  /// N MiB of copies. GPU GEMMs halve the copies while memory is short.
  int rotating_buffer_size_mib = -1;
  /// TUNABLE_RECORD_UNTUNED (0/1, default 0): append every miss to `untuned_filename`
  /// (deduplicated) for `tunable tune-file` to tune offline later.
  bool record_untuned = false;
  /// TUNABLE_UNTUNED_FILENAME (default "tunable_untuned.csv"); ordinal inserted like `filename`.
  std::string untuned_filename = "tunable_untuned.csv";
  /// TUNABLE_LOCK_TIMEOUT_MS (ms, default 10000; 0 = one try). How long a process waits for the lock
  /// another process holds on the results or untuned file ("waiting for the lock on ..." is warned
  /// after a second). Past it the process gives that file up: its results stay in memory, warned,
  /// and the program goes on.
  int lock_timeout_ms = 10000;
  /// TUNABLE_CUBLASLT_WORKSPACE_MIB (MiB, default 32): the largest workspace a GPU candidate may use.
  int workspace_mib = 32;
  /// TUNABLE_CUBLASLT_EXHAUSTIVE (default 64; 0 = off): how many configurations of cuBLASLt's
  /// exhaustive space (algo x tile x stages x split-K x reduction x swizzle x custom x cluster,
  /// AlgoCheck-filtered) are timed per problem, on top of its heuristic results.
  int exhaustive_candidates = 64;

  /// Defaults overlaid with the TUNABLE_* variables. An invalid value is an Error (kParseError)
  /// whose message names the variable and the value.
  static Options from_environment();
  /// Checks ranges (verbose 0-3, caps >= 0, ...); the message names the offending field.
  Status validate() const;
};

}  // namespace tunable
