// Planted wrong candidates (issue 39, defect 3): a candidate that computes the right answer with a
// real kernel and then spoils it by a known, finite amount (planted_kernels.hpp), made the fastest
// of its problem by holding every other candidate back; and the check that the tuner marks it
// "incorrect" and does not choose it, with a control run (numerics check off) in which it wins.
// Shared by the GEMM and fused-op GPU tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/planted_kernels.hpp"
#include "tune/context_impl.hpp"
#include "tune/solution.hpp"
#include "tune/tuner.hpp"

namespace tunable::test {

/// How long a held-back candidate holds the GPU before its real work: far more than any planted
/// candidate's spoiling kernel takes (a few microseconds), so the planted one is the fastest.
inline constexpr double kHoldBackUs = 300;

/// A real candidate held back by kHoldBackUs. Its answer is the real one.
template <class Args>
class HeldBack final : public Solution<Args> {
 public:
  explicit HeldBack(SolutionPtr<Args> real) : real_(std::move(real)), name_("held_back_" + real_->name()) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const Args& a) const override { return real_->can_implement(a); }
  std::size_t workspace_bytes(const Args& a) const override { return real_->workspace_bytes(a); }
  Status run(const Args& a, void* ws, std::size_t ws_bytes, Stream stream) const override {
    TUNABLE_CUDA_CHECK(spin_us(kHoldBackUs, reinterpret_cast<cudaStream_t>(stream)));
    return real_->run(a, ws, ws_bytes, stream);
  }

 private:
  SolutionPtr<Args> real_;
  std::string name_;
};

/// Spoils the output(s) of `args` on `stream` (the op knows its layout).
template <class Args>
using Spoiler = std::function<cudaError_t(const Args& args, cudaStream_t stream)>;

/// The real candidate's answer, spoiled: as fast as the real kernel plus a tiny kernel.
template <class Args>
class Planted final : public Solution<Args> {
 public:
  Planted(SolutionPtr<Args> real, std::string what, Spoiler<Args> spoil)
      : real_(std::move(real)), spoil_(std::move(spoil)), name_("planted_" + what) {}
  const std::string& name() const override { return name_; }
  Status can_implement(const Args& a) const override { return real_->can_implement(a); }
  std::size_t workspace_bytes(const Args& a) const override { return real_->workspace_bytes(a); }
  Status run(const Args& a, void* ws, std::size_t ws_bytes, Stream stream) const override {
    TUNABLE_RETURN_IF_ERROR(real_->run(a, ws, ws_bytes, stream));
    TUNABLE_CUDA_CHECK(spoil_(a, reinterpret_cast<cudaStream_t>(stream)));
    return Status::ok();
  }

 private:
  SolutionPtr<Args> real_;
  Spoiler<Args> spoil_;
  std::string name_;
};

/// Options of the planted tunings: short timing caps, a small rotation.
inline Options planted_options() {
  Options o;
  o.enabled = true;
  o.filename = "";
  o.max_tuning_duration_ms = 5;
  o.max_tuning_iterations = 40;
  o.max_warmup_duration_ms = 1;
  o.max_warmup_iterations = 3;
  o.rotating_buffer_size_mib = 16;
  return o;
}

/// Every candidate's disposition, time and detail, one per line (for failure messages).
inline std::string outcome_table(const std::vector<CandidateOutcome>& v) {
  std::ostringstream os;
  for (const CandidateOutcome& c : v)
    os << "\n  " << c.name << ": " << to_string(c.disposition) << ", " << c.median_ms << " ms"
       << (c.detail.empty() ? "" : ", " + c.detail);
  return os.str();
}

/// The bad and non-finite element counts of an "incorrect" outcome's detail ("max abs err E, B bad
/// elements (N non-finite)"); false when the detail does not say.
inline bool bad_counts(const std::string& detail, std::size_t* bad, std::size_t* nonfinite) {
  static const std::regex re("([0-9]+) bad elements \\(([0-9]+) non-finite\\)");
  std::smatch m;
  if (!std::regex_search(detail, m, re)) return false;
  *bad = std::stoull(m[1]);
  *nonfinite = std::stoull(m[2]);
  return true;
}

/// Tunes `cands` (Default first; the planted one named `planted`) twice on `wl`: with the numerics
/// check off the planted candidate must win (else its rejection would prove nothing), with it on
/// the planted candidate must be recorded "incorrect" with finite bad elements (exactly one when
/// `one_bad`), must not be chosen, and the real candidates must pass.
template <class Args>
void expect_planted_rejected(ContextImpl& ctx, Workload<Args>& wl, const std::vector<SolutionPtr<Args>>& cands,
                             const std::string& planted, bool one_bad) {
  Options opt = planted_options();
  opt.numerical_check = false;
  TuneOutcome<Args> control;
  const Status c = tune_candidates(opt, ctx.log(), "control (numerics check off)", cands, wl, &control);
  ASSERT_TRUE(c.is_ok()) << c.to_string();
  ASSERT_TRUE(control.best != nullptr);
  ASSERT_EQ(control.best->name(), planted)
      << "control run: the planted candidate is not the fastest, so rejecting it proves nothing"
      << outcome_table(control.candidates);

  opt.numerical_check = true;
  TuneOutcome<Args> checked;
  const Status t = tune_candidates(opt, ctx.log(), "checked", cands, wl, &checked);
  ASSERT_TRUE(t.is_ok()) << t.to_string() << outcome_table(checked.candidates);
  ASSERT_TRUE(checked.best != nullptr);
  EXPECT_NE(checked.best->name(), planted) << outcome_table(checked.candidates);
  int found = 0, real_passed = 0;
  for (const CandidateOutcome& o : checked.candidates) {
    if (o.name == planted) {
      ++found;
      EXPECT_EQ(std::string(to_string(o.disposition)), "incorrect") << outcome_table(checked.candidates);
      std::size_t bad = 0, nonfinite = 0;
      ASSERT_TRUE(bad_counts(o.detail, &bad, &nonfinite)) << "detail: " << o.detail;
      EXPECT_EQ(nonfinite, 0u) << "the planted error is finite: " << o.detail;
      if (one_bad) EXPECT_EQ(bad, 1u) << o.detail;
      else EXPECT_GT(bad, 1u) << o.detail;
    } else {
      EXPECT_NE(o.disposition, Disposition::kIncorrect) << outcome_table(checked.candidates);
      EXPECT_NE(o.disposition, Disposition::kFailed) << outcome_table(checked.candidates);
      real_passed += o.disposition == Disposition::kPassed;
    }
  }
  EXPECT_EQ(found, 1) << outcome_table(checked.candidates);
  EXPECT_GE(real_passed, 1) << "no real candidate passed: the check rejects everything" << outcome_table(checked.candidates);
}

}  // namespace tunable::test
