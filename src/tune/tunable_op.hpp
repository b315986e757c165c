// TunableOp<Args>: lookup -> tune on a miss (if enabled) or Default -> dispatch.
//
// The hot path is a hash lookup on a fixed-size problem key under a shared lock; strings
// (signatures) are only built on a miss.
#pragma once

#include <fmt/format.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tune/context_impl.hpp"
#include "tune/solution.hpp"
#include "tune/tuner.hpp"
#include "tune/workload.hpp"

namespace tunable {

/// Everything that makes two problems of one op different, as integers.
using ProblemKey = std::array<std::int64_t, 20>;

struct ProblemKeyHash {
  std::size_t operator()(const ProblemKey& k) const noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (std::int64_t v : k) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }
};

template <class Args>
struct OpHooks {
  std::string op_signature;
  SolutionPtr<Args> default_solution;  ///< handles every valid problem (on a device that can); always candidate 0
  std::vector<std::shared_ptr<const Provider<Args>>> providers;
  std::function<ProblemKey(const Args&)> key;
  std::function<std::string(const Args&)> params_signature;
  /// Builds the tuning inputs (fresh random data, rotated copies) for a problem.
  std::function<Status(const Args&, const Options&, std::unique_ptr<Workload<Args>>*)> make_workload;
  /// For a problem with no stored result while tuning is off: which of this op's stored params
  /// signatures (`stored`) may lend their result, best first. The first whose solution takes the
  /// call serves it (a Default there means Default); the miss is still recorded for offline
  /// tuning. Unset: no problem borrows another's result. (GEMM: the same problem at other token
  /// counts, gemm_neighbours in gemm/signature.)
  std::function<std::vector<std::string>(const Args&, const std::vector<ResultRecord>& stored)> neighbours;
  /// True while `stream` is being captured into a CUDA graph (nothing may tune then).
  std::function<bool(Stream)> capturing = [](Stream) { return false; };
  /// Workspace for dispatching a solution on `stream`; ok with nullptr when bytes == 0.
  std::function<Status(std::size_t, Stream, void**)> dispatch_workspace =
      [](std::size_t bytes, Stream, void** p) {
        *p = nullptr;
        return bytes == 0 ? Status::ok()
                          : Status(StatusCode::kNotSupported, "no dispatch workspace available");
      };
};

template <class Args>
class TunableOp final : public TunableOpBase {
 public:
  TunableOp(ContextImpl& ctx, OpHooks<Args> hooks) : ctx_(ctx), h_(std::move(hooks)) {}
  const std::string& op_signature() const { return h_.op_signature; }

  Status run(const Args& args, Stream stream) {
    if (!ctx_.enabled()) {
      ctx_.count_default();
      return dispatch(*h_.default_solution, args, stream);
    }
    Choice c;
    TUNABLE_RETURN_IF_ERROR(resolve(args, stream, /*force_tune=*/false, &c));
    // A tuned solution may not take these particular pointers (alignment); Default always can.
    if (c.from_result && (c.sol == h_.default_solution || c.sol->can_implement(args).is_ok())) {
      const Status st = dispatch(*c.sol, args, stream);
      if (st.code() != StatusCode::kNotSupported || c.sol == h_.default_solution) {
        ctx_.count_hit();
        return st;
      }
      // What can_implement cannot see may still refuse the launch before it starts (the stream's
      // state: a first call inside graph capture that would have to allocate; the driver): the call
      // runs Default instead, logged and counted as a fallback.
      ctx_.log().log(1, "{} refused {}({}) at run time ({}): Default", c.sol->name(), h_.op_signature,
                     h_.params_signature(args), st.message());
      ctx_.count_fallback();
      return dispatch(*h_.default_solution, args, stream);
    }
    ctx_.count_default();
    return dispatch(*h_.default_solution, args, stream);
  }

  /// For callers with their own fallback (the cuBLAS interposer): runs `args` only with a result
  /// (stored, or tuned now when the context tunes and the stream is not being captured) that is not
  /// Default and takes these operands. Otherwise launches nothing and leaves `served` false: a miss
  /// is recorded as untuned as run() records it. `ws` (ws_bytes) is the caller's workspace, used
  /// when large enough; else the op's own, which is never allocated during capture.
  Status run_if_result(const Args& args, Stream stream, void* ws, std::size_t ws_bytes, bool* served) {
    *served = false;
    if (!ctx_.enabled()) return Status::ok();
    Choice c;
    TUNABLE_RETURN_IF_ERROR(resolve(args, stream, /*force_tune=*/false, &c));
    if (!c.from_result || c.sol == h_.default_solution || !c.sol->can_implement(args).is_ok()) return Status::ok();
    const std::size_t need = c.sol->workspace_bytes(args);
    void* w = ws;
    if (need > ws_bytes || (need > 0 && ws == nullptr)) {
      // Refused inside a capture when it would allocate: the caller's own path serves the call.
      if (!h_.dispatch_workspace(need, stream, &w).is_ok()) return Status::ok();
    }
    const Status st = c.sol->run(args, w, need > ws_bytes ? need : ws_bytes, stream);
    if (st.code() == StatusCode::kNotSupported || st.code() == StatusCode::kMisaligned) return Status::ok();
    TUNABLE_RETURN_IF_ERROR(st);
    ctx_.count_hit();
    *served = true;
    return Status::ok();
  }

  /// Tunes args' problem unless a result exists (also when the context is disabled).
  /// A result that could not be written to the results file is an error here, with `chosen` set.
  Status tune(const Args& args, std::string* chosen) {
    Choice c;
    const Status st = resolve(args, nullptr, /*force_tune=*/true, &c);
    if (chosen && c.sol) *chosen = c.sol->name();
    return st;
  }

  /// Runs the candidate `name` on `args` (rebuilt from its name as a stored result is), bypassing
  /// lookup and tuning. kInvalidArgument when no provider knows the name.
  Status run_named(const std::string& name, const Args& args, Stream stream) {
    // Rebuilding from a name can cost a provider's validity check (cuBLASLt's AlgoCheck), so each
    // (name, problem) is rebuilt once.
    const std::string key = name + '|' + h_.params_signature(args);
    SolutionPtr<Args> sol;
    {
      std::lock_guard<std::mutex> lock(named_mu_);
      auto it = named_.find(key);
      if (it != named_.end()) sol = it->second;
    }
    if (!sol) {
      sol = rebuild(name, args);
      if (!sol)
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("no provider of {} knows a candidate named '{}'", h_.op_signature, name));
      std::lock_guard<std::mutex> lock(named_mu_);
      named_.emplace(key, sol);
    }
    if (sol != h_.default_solution) TUNABLE_RETURN_IF_ERROR(sol->can_implement(args));
    return dispatch(*sol, args, stream);
  }

  /// Candidates for `args`: Default first, then every provider's, names deduplicated. `providers`,
  /// when given, receives each candidate's provider name ("default" for Default).
  Status candidates(const Args& args, std::vector<SolutionPtr<Args>>* out,
                    std::vector<std::string>* providers = nullptr) const {
    out->clear();
    out->push_back(h_.default_solution);
    if (providers) *providers = {"default"};
    for (const auto& p : h_.providers) {
      std::vector<SolutionPtr<Args>> got;
      Status st = p->enumerate(args, &got);
      if (!st.is_ok()) {
        ctx_.log().log(1, "{}provider {} enumerated nothing: {}", Logger::kBranch, p->name(),
                       st.message());
        continue;
      }
      for (auto& s : got) {
        bool dup = false;
        for (const auto& o : *out) dup |= o->name() == s->name();
        if (dup) continue;
        out->push_back(std::move(s));
        if (providers) providers->push_back(p->name());
      }
    }
    return Status::ok();
  }

 private:
  /// What a problem resolved to; from_result: a stored or freshly tuned result (not a miss).
  struct Choice {
    SolutionPtr<Args> sol;
    bool from_result = false;
  };

  Status dispatch(const Solution<Args>& sol, const Args& args, Stream stream) {
    const std::size_t bytes = sol.workspace_bytes(args);
    void* ws = nullptr;
    TUNABLE_RETURN_IF_ERROR(h_.dispatch_workspace(bytes, stream, &ws));
    return sol.run(args, ws, bytes, stream);
  }

  SolutionPtr<Args> rebuild(const std::string& name, const Args& args) const {
    if (name == h_.default_solution->name()) return h_.default_solution;
    for (const auto& p : h_.providers) {
      if (auto s = p->from_name(name, args)) return s;
    }
    return nullptr;
  }

  Status resolve(const Args& args, Stream stream, bool force_tune, Choice* out) {
    const ProblemKey key = h_.key(args);
    // The tune API wants a result: a cached Default that no tuning chose (tuning was off, or failed)
    // does not answer it.
    auto cached = [&](Choice* c) {
      std::shared_lock<std::shared_mutex> lock(cache_mu_);
      auto it = cache_.find(key);
      if (it == cache_.end() || (force_tune && !it->second.from_result)) return false;
      *c = it->second;
      return true;
    };
    if (cached(out)) return Status::ok();
    const std::string ps = h_.params_signature(args);
    if (h_.capturing(stream)) {
      // Inside stream capture nothing tunes, synchronizes or allocates: run Default, remember
      // the problem as untuned, and do not cache so a later uncaptured call can tune it.
      ctx_.log().log(1, "{}({}) missed during stream capture: Default, recorded as untuned",
                     h_.op_signature, ps);
      ctx_.record_untuned(h_.op_signature, ps);
      *out = Choice{h_.default_solution, false};
      return Status::ok();
    }
    std::lock_guard<std::mutex> tune_lock(tune_mu_);  // one tuning per op at a time
    if (cached(out)) return Status::ok();
    Choice chosen;
    Persisted persisted;  // whether a freshly tuned result reached the results file
    if (auto rec = ctx_.find(h_.op_signature, ps)) {
      chosen.sol = rebuild(rec->solution, args);
      Status why = chosen.sol ? chosen.sol->can_implement(args)
                              : Status(StatusCode::kNotSupported, "unknown to this build");
      if (why.code() == StatusCode::kMisaligned) {
        // Only this call's pointers (or row strides, which the fused ops' key leaves out) are
        // refused: the result stays the problem's choice, and run() gives every call it cannot take
        // to Default (a misaligned first call must not turn the tuned kernel off for the aligned
        // calls after it).
        ctx_.log().log(1, "{}({}) found {} (not for this call's pointers or strides: {})", h_.op_signature, ps,
                       rec->solution, why.message());
        chosen.from_result = true;
      } else if (!why.is_ok()) {
        ctx_.log().warn(fmt::format("stored solution {} for {}({}) no longer applies ({}); using {}",
                                    rec->solution, h_.op_signature, ps, why.message(),
                                    h_.default_solution->name()));
        ctx_.count_fallback();
        chosen.sol = h_.default_solution;
      } else {
        ctx_.log().log(2, "{}({}) found {}", h_.op_signature, ps, rec->solution);
        chosen.from_result = true;
      }
    } else if (ctx_.tuning() || force_tune) {
      const Status tuned = tune_now(args, ps, &chosen.sol, &persisted);
      if (tuned.is_ok()) {
        chosen.from_result = true;
      } else if (force_tune) {
        return tuned;
      } else if (Status why = h_.default_solution->can_implement(args); !why.is_ok()) {
        return why;  // Default cannot run it either: its reason (nothing cached, nothing recorded)
      } else {
        // A call must not fail because its problem could not be tuned (no memory for the tuning
        // buffers, say): it runs Default, the problem is left for a later process to tune, and this
        // one does not retry it on every call.
        ctx_.log().warn(fmt::format("tuning {}({}) failed ({}); it runs {} and is recorded as untuned",
                                    h_.op_signature, ps, tuned.message(), h_.default_solution->name()));
        ctx_.record_untuned(h_.op_signature, ps);
        chosen.sol = h_.default_solution;
      }
    } else {
      ctx_.record_untuned(h_.op_signature, ps);
      chosen.sol = h_.default_solution;
      if (!borrow(args, ps, &chosen)) ctx_.log().log(2, "{}({}) missing, tuning off: Default", h_.op_signature, ps);
    }
    {
      std::unique_lock<std::shared_mutex> lock(cache_mu_);
      cache_[key] = chosen;
    }
    *out = chosen;
    // The explicit tune API reports a result it could not write; a call that dispatches has its
    // output to compute, and the failed write was logged as a warning.
    return force_tune ? persisted.status : Status::ok();
  }

  /// A neighbour's stored result for a miss (OpHooks::neighbours): true when one decided the choice.
  bool borrow(const Args& args, const std::string& ps, Choice* chosen) {
    if (!h_.neighbours) return false;
    std::vector<ResultRecord> stored;
    for (ResultRecord& r : ctx_.results())
      if (r.op_signature == h_.op_signature && r.params_signature != ps) stored.push_back(std::move(r));
    if (stored.empty()) return false;
    for (const std::string& n : h_.neighbours(args, stored)) {
      const auto rec = ctx_.find(h_.op_signature, n);
      if (!rec) continue;
      SolutionPtr<Args> s = rebuild(rec->solution, args);
      if (!s || (s != h_.default_solution && !s->can_implement(args).is_ok())) continue;
      ctx_.log().log(1, "{}({}) missing, tuning off: {} as tuned for {}", h_.op_signature, ps, s->name(), n);
      *chosen = Choice{s, s != h_.default_solution};
      return true;
    }
    return false;
  }

  /// The results file's answer to a new result. (A wrapper: nvcc warns on assigning a [[nodiscard]]
  /// Status itself, as its operator= returns one.)
  struct Persisted {
    Status status;
  };

  /// Tunes and stores the winner; `persisted` gets whether it reached the results file.
  Status tune_now(const Args& args, const std::string& ps, SolutionPtr<Args>* chosen, Persisted* persisted) {
    std::lock_guard<std::mutex> one_at_a_time(ctx_.tuning_mutex());
    const Options opt = ctx_.options();
    TuneOutcome<Args> oc;
    const std::string label = fmt::format("{}({})", h_.op_signature, ps);
    // Workloads estimate their buffers against the memory there is, but an allocation may still fail
    // (another thread took the memory, a limit they cannot see): that is a problem this process cannot
    // tune, never a failed call. The workload is freed before Default runs.
    try {
      std::vector<SolutionPtr<Args>> cands;
      TUNABLE_RETURN_IF_ERROR(candidates(args, &cands));
      std::unique_ptr<Workload<Args>> wl;
      TUNABLE_RETURN_IF_ERROR(h_.make_workload(args, opt, &wl));
      TUNABLE_RETURN_IF_ERROR(tune_candidates(opt, ctx_.log(), label, cands, *wl, &oc, ctx_.progress_callback()));
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kNotSupported, fmt::format("out of host memory while tuning {}", label));
    } catch (const std::length_error& e) {
      return Status(StatusCode::kNotSupported, fmt::format("tuning {} asked for too large a buffer ({})", label, e.what()));
    }
    ctx_.count_tuned();
    *persisted = Persisted{ctx_.add_result(ResultRecord{h_.op_signature, ps, oc.best->name(), oc.best_ms})};
    *chosen = oc.best;
    return Status::ok();
  }

  ContextImpl& ctx_;
  OpHooks<Args> h_;
  std::shared_mutex cache_mu_;
  std::unordered_map<ProblemKey, Choice, ProblemKeyHash> cache_;
  std::mutex tune_mu_;
  std::mutex named_mu_;
  std::map<std::string, SolutionPtr<Args>> named_;  // run_named's rebuilt solutions
};

}  // namespace tunable
