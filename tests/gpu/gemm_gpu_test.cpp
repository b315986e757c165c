// GPU GEMM tests: the device helpers of the tuning workloads, then every provider.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/cuda_util.hpp"

namespace tunable {
namespace {

TEST(CudaUtil, FillCompareAndPoison) {
  const std::size_t n = 1 << 16;
  DeviceBuffer a, got, ref;
  ASSERT_TRUE(a.allocate(n * 2).is_ok());
  ASSERT_TRUE(got.allocate(n * 8).is_ok());
  ASSERT_TRUE(ref.allocate(n * 8).is_ok());
  ASSERT_TRUE(fill_random(a.get(), DataType::kBF16, n, 1234, 1.0f, nullptr).is_ok());
  ASSERT_TRUE(to_double(a.get(), DataType::kBF16, 256, 256, 256, ref.as<double>(), nullptr).is_ok());
  std::vector<double> h(n);
  ASSERT_EQ(cudaMemcpy(h.data(), ref.get(), n * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  double lo = 1, hi = -1;
  for (double v : h) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
  EXPECT_LE(hi, 1.0);
  NumericsReport r;
  ASSERT_TRUE(compare_on_device(ref.as<double>(), ref.as<double>(), n, {1e-6, 1e-6}, &r, nullptr).is_ok());
  EXPECT_TRUE(r.passed);
  EXPECT_NEAR(r.ref_rms, std::sqrt(1.0 / 3), 0.01);
  ASSERT_TRUE(fill_nan(a.get(), DataType::kBF16, n, nullptr).is_ok());
  ASSERT_TRUE(to_double(a.get(), DataType::kBF16, 256, 256, 256, got.as<double>(), nullptr).is_ok());
  ASSERT_TRUE(compare_on_device(got.as<double>(), ref.as<double>(), n, {1, 1}, &r, nullptr).is_ok());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.nonfinite, n);
}

}  // namespace
}  // namespace tunable
