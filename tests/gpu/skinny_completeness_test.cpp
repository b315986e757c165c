// Skinny completeness: every name the parser accepts (skinny_all_configs: every family, shape,
// dtype and K split, ks3, ks64 and ksw8 included) and every candidate the provider offers for the
// decode problems runs on the GPU against the fp64 reference at least once, or the test fails
// naming the ones that never ran. A fixed or cluster split that every problem refuses therefore
// fails too.
//
// Two problems per dtype (and two weight-only ones for that family's e4m3 names) are enough to run
// every name, each on the first that takes it: 8 tokens (within every family's tile), 40 weight
// rows (a partial 16-row tile and a 64-row wgmma tile hanging past m), bf16 output (so the fp8
// wgmma variants take it too), and K = 4096, or K long enough for 64 splits of the largest split
// granule (a 2 KB-per-row TMA stage of fp8) for the split counts the short K cannot hold (there
// every split still sums a short K).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_util.hpp"
#include "gemm/cuda/skinny_config.hpp"
#include "gemm/cuda/skinny_provider.hpp"
#include "skinny_problem.hpp"

namespace tunable {
namespace {

using skinny_test::Case;
using skinny_test::case_seed;
using skinny_test::current_cc;
using skinny_test::SkinnyProblem;
using skinny_test::test_provider;

/// The problems the names of dtype `t` run on, in the order they are tried.
std::vector<Case> sweep_cases(DataType t) {
  std::vector<Case> v;
  for (std::int64_t k : {4096, 131072}) {  // 131072: 64 splits of 2048 fp8 elements (mmt b16)
    Case c;
    c.in = t;
    c.out = t == DataType::kF16 ? DataType::kF16 : DataType::kBF16;  // fp16 GEMMs write fp16
    c.op = t == DataType::kF8E4M3 ? GemmOp::kScaledGemm : GemmOp::kGemm;
    c.rows = 40;
    c.tokens = 8;
    c.k = k;
    c.scale_a = t == DataType::kF8E4M3 ? 0.5f : 1.f;
    v.push_back(c);
  }
  // e4m3 names of the weight-only family take only the weight-only problem (bf16 tokens, row
  // scales), tried after the W8A8 ones refused them.
  if (t == DataType::kF8E4M3)
    for (std::int64_t k : {4096, 131072}) {
      Case c = v.front();
      c.k = k;
      c.weight_only = true;
      v.push_back(c);
    }
  return v;
}

/// Names the provider offers for the decode suite's problems (bench/llm_gemm_shapes.csv at 1-64
/// tokens): enumeration makes no CUDA call, so null operands do.
std::set<std::string> offered_for_decode_suite() {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {6144, 4096},   {4096, 4096},  {28672, 4096}, {4096, 14336},  {2560, 2048},
      {2048, 2048},   {32768, 2048}, {2048, 16384}, {256000, 2048}, {2304, 16384},
      {13312, 16384}, {16384, 6656}, {1024, 2048}};
  std::set<std::string> names;
  const auto provider = skinny_gemm_provider(nullptr);
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3})
    for (const auto& [rows, k] : shapes)
      for (std::int64_t tokens : {1, 2, 8, 9, 16, 17, 32, 33, 64}) {
        GemmArgs a;
        a.desc = GemmDesc::make(t, Transpose::kT, Transpose::kN, rows, tokens, k);
        if (t == DataType::kF8E4M3) {
          a.desc.op = GemmOp::kScaledGemm;
          a.desc.out_dtype = DataType::kBF16;
        }
        std::vector<SolutionPtr<GemmArgs>> sols;
        EXPECT_TRUE(provider->enumerate(a, &sols).is_ok());
        if (t == DataType::kF8E4M3) {  // and the weight-only problem (bf16 tokens)
          a.desc.dtype_b = DataType::kBF16;
          a.desc.scale_mode = ScaleMode::kRowwise;
          EXPECT_TRUE(provider->enumerate(a, &sols).is_ok());
        }
        for (const auto& s : sols) names.insert(s->name());
      }
  return names;
}

/// Up to `most` names of `names`, then how many more.
std::string list(const std::vector<std::string>& names, std::size_t most = 40) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < most; ++i) s += "\n  " + names[i];
  if (names.size() > most) s += fmt::format("\n  ... and {} more", names.size() - most);
  return s;
}

TEST(SkinnyCompleteness, EveryParsableAndOfferedNameRunsAgainstTheReference) {
  if (current_cc() != 90)
    GTEST_SKIP() << "the completeness sweep runs every family, wgmma (sm_90a) included: it needs a "
                    "compute capability 9.0 device";
  // TUNABLE_SKINNY_ONLY=<substring>: only the names that hold it (the sanitizer runs); completeness
  // is then not checked.
  const char* only = std::getenv("TUNABLE_SKINNY_ONLY");

  std::map<std::string, std::string> never_ran;  // name -> why (refusal or failure)
  std::set<std::string> parsable;
  for (const SkinnyConfig& c : skinny_all_configs()) {
    parsable.insert(c.name());
    never_ran.emplace(c.name(), "no problem of its dtype was run");
  }
  const auto provider = test_provider();
  DeviceBuffer ws;
  std::vector<std::uint8_t> got;
  std::size_t ran = 0;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF8E4M3}) {
    std::vector<std::unique_ptr<SkinnyProblem>> problems;
    for (const Case& c : sweep_cases(t)) {
      problems.push_back(std::make_unique<SkinnyProblem>(c, case_seed(c.name())));
      ASSERT_EQ(problems.back()->setup_error(), "") << problems.back()->label();
    }
    for (const SkinnyConfig& cfg : skinny_all_configs()) {
      if (cfg.dtype != t) continue;
      const std::string name = cfg.name();
      if (only != nullptr && name.find(only) == std::string::npos) continue;
      SCOPED_TRACE(name);
      std::string refused;
      for (const auto& problem : problems) {
        SCOPED_TRACE(problem->label());
        const GemmArgs& args = problem->args();
        const auto sol = provider->from_name(name, args);
        ASSERT_NE(sol, nullptr);
        const Status can = sol->can_implement(args);
        if (!can.is_ok()) {
          refused += fmt::format("{}refused at K = {}: {}", refused.empty() ? "" : "; ",
                                 args.desc.k, can.to_string());
          continue;
        }
        const std::size_t wsb = sol->workspace_bytes(args);
        if (wsb > ws.size()) ASSERT_TRUE(ws.allocate(wsb).is_ok());
        void* wsp = wsb > 0 ? ws.get() : nullptr;
        const Status st = problem->run(*sol, wsp, wsb, &got);
        if (!st.is_ok()) {
          never_ran[name] = "run failed: " + st.to_string();
          ADD_FAILURE() << "run failed after can_implement passed: " << st.to_string();
        } else if (const std::string wrong = problem->mismatch(got); !wrong.empty()) {
          never_ran[name] = "wrong: " + wrong;
          ADD_FAILURE() << wrong;
        } else {
          never_ran.erase(name);
          ++ran;
        }
        refused.clear();
        break;  // the first problem that takes the name decides
      }
      if (!refused.empty()) never_ran[name] = refused;
    }
  }
  if (only != nullptr) return;

  std::vector<std::string> missing;
  for (const auto& [name, why] : never_ran) missing.push_back(name + ": " + why);
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << parsable.size()
                               << " names the parser accepts never ran against the reference:"
                               << list(missing);
  // What the provider offers is among what the parser accepts, so it ran above.
  std::vector<std::string> offered_not_run;
  for (const std::string& name : offered_for_decode_suite())
    if (parsable.count(name) == 0 || never_ran.count(name) != 0) offered_not_run.push_back(name);
  EXPECT_TRUE(offered_not_run.empty())
      << offered_not_run.size()
      << " candidates the provider offers never ran against the reference:"
      << list(offered_not_run);
  std::printf("skinny completeness: %zu of %zu parsable names ran against the fp64 reference\n",
              ran, parsable.size());
}

}  // namespace
}  // namespace tunable
