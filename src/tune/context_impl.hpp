// Internals of a Context: options, logger, results store and files, per-device resources and the
// tunable ops created for it.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "core/logger.hpp"
#include "tunable/context.hpp"
#include "tune/results_file.hpp"

namespace tunable {

/// Base of every TunableOp<Args>, so a context can own ops of different argument types.
class TunableOpBase {
 public:
  virtual ~TunableOpBase() = default;
};

class ContextImpl {
 public:
  ContextImpl(Device device, Options options, std::vector<Validator> validators);
  ~ContextImpl();

  Device device() const { return device_; }
  Options options() const;
  Status set_options(const Options& o);
  Logger& log() { return log_; }

  // Hot-path copies of the switches in options().
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  bool tuning() const { return tuning_.load(std::memory_order_relaxed); }

  std::string results_path() const;
  std::string untuned_path() const;
  const std::vector<Validator>& validators() const { return validators_; }

  /// Loads the results file once per path; a failure is logged as a warning once (results then stay
  /// in memory) and returned to every later call for that path.
  Status ensure_loaded();
  std::optional<ResultRecord> find(const std::string& op_sig, const std::string& params_sig);
  /// Stores a new result and appends it to the file. A write failure (or a results file that could
  /// not be loaded) is returned and logged as a warning; the result stays in memory either way.
  Status add_result(const ResultRecord& r);
  /// Appends a miss to the untuned file when record_untuned is on.
  void record_untuned(const std::string& op_sig, const std::string& params_sig);
  std::vector<ResultRecord> results() const { return store_.all(); }

  ContextStats stats() const;
  /// Held while any op of this context tunes: the context's tuning stream, timer and device memory
  /// serve one tuning at a time (two ops tuning from two threads would time each other's kernels).
  std::mutex& tuning_mutex() { return tuning_mu_; }
  void set_progress_callback(std::function<void(const TuneProgress&)> cb) {
    std::lock_guard<std::mutex> lock(opt_mu_);
    progress_ = std::move(cb);
  }
  std::function<void(const TuneProgress&)> progress_callback() const {
    std::lock_guard<std::mutex> lock(opt_mu_);
    return progress_;
  }
  void count_tuned() { ++tuned_; }
  void count_hit() { hits_.fetch_add(1, std::memory_order_relaxed); }
  void count_default() { defaults_.fetch_add(1, std::memory_order_relaxed); }
  void count_fallback() { ++fallbacks_; }

  /// A per-context resource (handles, streams, buffers), created by `make` on first use.
  template <class T>
  T& resource(const std::function<std::unique_ptr<T>()>& make) {
    std::lock_guard<std::mutex> lock(res_mu_);
    auto& slot = resources_[std::type_index(typeid(T))];
    if (!slot) slot = std::shared_ptr<void>(make().release(), [](void* p) { delete static_cast<T*>(p); });
    return *static_cast<T*>(slot.get());
  }

  /// The op registered under the integer `key` (a caller-chosen compact form of its signature,
  /// so the hot path formats no string), or nullptr.
  template <class Op>
  Op* find_op(std::int64_t key) {
    std::lock_guard<std::mutex> lock(ops_mu_);
    auto it = ops_by_key_.find(key);
    return it == ops_by_key_.end() ? nullptr : static_cast<Op*>(it->second);
  }

  /// The op registered under `op_signature`, created by `make` on first use; `key` is an
  /// alias for find_op().
  template <class Op>
  Op& op(const std::string& op_signature, std::int64_t key,
         const std::function<std::unique_ptr<Op>()>& make) {
    std::lock_guard<std::mutex> lock(ops_mu_);
    auto& slot = ops_[op_signature];
    if (!slot) slot = make();
    ops_by_key_[key] = slot.get();
    return static_cast<Op&>(*slot);
  }

  /// The op registered under `op_signature`, created by `make` on first use.
  template <class Op>
  Op& op(const std::string& op_signature, const std::function<std::unique_ptr<Op>()>& make) {
    std::lock_guard<std::mutex> lock(ops_mu_);
    auto& slot = ops_[op_signature];
    if (!slot) slot = make();
    return static_cast<Op&>(*slot);
  }

 private:
  /// The lock wait of the results and untuned files: Options::lock_timeout_ms, notices warned.
  LockWait lock_wait();

  Device device_;
  mutable std::mutex opt_mu_;
  Options options_;
  std::function<void(const TuneProgress&)> progress_;
  std::atomic<bool> enabled_{false}, tuning_{true};
  std::vector<Validator> validators_;
  Logger log_;

  std::mutex tuning_mu_;
  std::mutex file_mu_;
  std::string loaded_path_;  // results path the store was filled from
  Status load_status_;        // why loaded_path_ could not be used (warned once, not retried)
  std::unique_ptr<ResultsFile> file_;
  std::unique_ptr<UntunedFile> untuned_;
  ResultsStore store_;

  std::atomic<std::uint64_t> tuned_{0}, hits_{0}, defaults_{0}, fallbacks_{0};

  std::mutex res_mu_;
  std::map<std::type_index, std::shared_ptr<void>> resources_;
  std::mutex ops_mu_;
  std::map<std::string, std::unique_ptr<TunableOpBase>> ops_;
  std::unordered_map<std::int64_t, TunableOpBase*> ops_by_key_;
};

}  // namespace tunable
