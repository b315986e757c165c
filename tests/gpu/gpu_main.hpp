// The two halves of the GPU test binaries' main() that need no GPU, so a CPU test can check them:
// whether a GPU is required (TUNABLE_REQUIRE_GPU), and a gtest run that counts the tests that
// skipped themselves (GTEST_SKIP) and lists them at the end, loudly when a GPU is required.
//
// Every line of the report starts with kReportTag so scripts can pick it out of a log.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tunable::test {

inline constexpr const char* kReportTag = "tunable-gpu-tests:";

/// TUNABLE_REQUIRE_GPU set to anything but "" or "0": a missing or unusable GPU is a failure
/// (exit 1), not a skip (exit 77). The GPU machine's scripts (lab/device/device_check.sh) set it.
inline bool gpu_required() {
  const char* v = std::getenv("TUNABLE_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

/// Counts skipped tests and prints them when the program ends.
class SkipReport final : public ::testing::EmptyTestEventListener {
 public:
  explicit SkipReport(bool required) : required_(required) {}

  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult* r = info.result();
    if (r == nullptr || !r->Skipped()) return;
    std::string why;
    for (int i = 0; i < r->total_part_count(); ++i) {
      const ::testing::TestPartResult& p = r->GetTestPartResult(i);
      if (p.skipped() && p.message() != nullptr && *p.message() != '\0') {
        why = p.message();
        break;
      }
    }
    if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    skipped_.push_back(std::string(info.test_suite_name()) + "." + info.name() + (why.empty() ? "" : ": " + why));
  }

  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    std::fflush(stdout);
    std::printf("%s %zu of %d tests skipped%s\n", kReportTag, skipped_.size(), unit.test_to_run_count(),
                skipped_.empty() ? "" : ":");
    for (const std::string& s : skipped_) std::printf("%s   SKIPPED %s\n", kReportTag, s.c_str());
    std::fflush(stdout);
    if (required_ && !skipped_.empty()) {
      // stderr as well: a required run's skips must not read as passes in a log that keeps only errors.
      std::fprintf(stderr,
                   "%s WARNING: TUNABLE_REQUIRE_GPU is set and %zu tests SKIPPED themselves on this GPU "
                   "machine: they did not run, and are not passes\n",
                   kReportTag, skipped_.size());
      for (const std::string& s : skipped_) std::fprintf(stderr, "%s   SKIPPED %s\n", kReportTag, s.c_str());
    }
  }

  std::size_t skipped() const { return skipped_.size(); }

 private:
  bool required_;
  std::vector<std::string> skipped_;
};

/// InitGoogleTest, the skip report, RUN_ALL_TESTS.
inline int run_tests_reporting_skips(int argc, char** argv, bool required) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new SkipReport(required));  // gtest owns it
  return RUN_ALL_TESTS();
}

}  // namespace tunable::test
