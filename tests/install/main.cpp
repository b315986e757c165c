// Downstream use of an installed tunable: one CPU GEMM through the public API.
#include <tunable/gemm.hpp>
#include <cstdio>
#include <vector>
int main() {
  tunable::Options o; o.enabled = true; o.filename = "";
  tunable::Context ctx(tunable::Device::cpu(), o);
  auto d = tunable::GemmDesc::make(tunable::DataType::kF32, tunable::Transpose::kN, tunable::Transpose::kN, 8, 8, 8);
  std::vector<float> a(64, 1.f), b(64, 2.f), c(64);
  tunable::Status s = tunable::gemm(ctx, d, {a.data(), b.data(), c.data()});
  std::printf("%s c[0]=%g\n", s.to_string().c_str(), c[0]);
  return s.is_ok() && c[0] == 16.f ? 0 : 1;
}
