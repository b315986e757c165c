// A tuning context: options, the results store and file, and the tunable ops of one device.
//
// Contexts are independent objects (two devices, or two configurations in one process, are
// fine). default_context() gives the process-wide one per device that the environment-variable
// path uses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tunable/options.hpp"
#include "tunable/types.hpp"

namespace tunable {

/// One line of a results file: op signature, params signature, solution name, time in ms
/// (negative when the file had no time field).
struct ResultRecord {
  std::string op_signature;
  std::string params_signature;
  std::string solution;
  double time_ms = -1.0;
};

/// Counters of what a context did since it was created.
struct ContextStats {
  std::uint64_t tuned = 0;      ///< problems tuned (a tuning loop ran)
  std::uint64_t hits = 0;       ///< calls served by a stored result
  std::uint64_t defaults = 0;   ///< calls that ran Default (disabled, tuning off, or in capture)
  std::uint64_t fallbacks = 0;  ///< stored results that no longer applied, or refused a call at run time
                                ///< (kNotSupported before launching), and ran Default instead
};

/// Progress of a tuning loop, reported after every candidate.
struct TuneProgress {
  std::string problem;      ///< "GemmTunableOp_float_NN(nn_512_1024_2048_ld_512_2048_512)"
  std::size_t done = 0;     ///< candidates finished
  std::size_t total = 0;    ///< candidates in this problem
  double elapsed_ms = 0;    ///< since this problem's tuning began
};

class ContextImpl;

class Context {
 public:
  /// Options come from the environment (Options::from_environment); throws Error on a bad value.
  explicit Context(Device device);
  /// Options as given; the environment is not read.
  Context(Device device, Options options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Device device() const;
  /// A copy of the current options.
  Options options() const;
  /// Replaces the options (validated first). A changed filename takes effect at the next lookup.
  /// kIoError when the verbose file cannot be opened: the options are applied, the log goes to stderr.
  Status set_options(const Options& options);

  /// The results file path after ordinal insertion ("" when results stay in memory).
  std::string results_path() const;
  std::string untuned_path() const;
  /// Loads the results file now (otherwise it is loaded at the first lookup). Idempotent.
  Status load_results();
  /// Everything the store holds.
  std::vector<ResultRecord> results() const;
  /// The validators this context writes and expects, as (key, value) pairs.
  std::vector<std::pair<std::string, std::string>> validators() const;
  ContextStats stats() const;
  /// Called after each candidate while tuning (from the tuning thread, holding the context's tuning
  /// lock: the callback must not call this context's ops, which could need to tune); empty to disable.
  void set_progress_callback(std::function<void(const TuneProgress&)> callback);

  ContextImpl& impl() { return *impl_; }

 private:
  std::unique_ptr<ContextImpl> impl_;
};

/// Process-wide context of `device`, created on first use with options from the environment.
/// Throws Error if the environment holds an invalid value.
Context& default_context(Device device);

}  // namespace tunable
