// A stand-in for a GPU test binary that needs no GPU: the ctest entries gpu_main_skip_report*
// (tests/CMakeLists.txt) run it to check that tests which skip themselves are counted and listed,
// and listed loudly (stderr too) when TUNABLE_REQUIRE_GPU is set.
#include <gtest/gtest.h>

#include "gpu/gpu_main.hpp"

namespace {

TEST(SkipReportProbe, Passes) { SUCCEED(); }
TEST(SkipReportProbe, SkipsForWantOfASecondGpu) { GTEST_SKIP() << "needs two GPUs (one visible)"; }
TEST(SkipReportProbe, SkipsWithoutAReason) { GTEST_SKIP(); }

}  // namespace

int main(int argc, char** argv) {
  return tunable::test::run_tests_reporting_skips(argc, argv, tunable::test::gpu_required());
}
