// Host-only parts of the fused ops, testable without a GPU: signatures and their parsing,
// candidate names, argument validation (which runs before any CUDA call), the Default choice and
// the candidate lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ops/ops_args.hpp"
#include "ops/ops_workload.hpp"
#include "test_bounds.hpp"
#include "test_util.hpp"
#include "tunable/context.hpp"
#include "tunable/ops.hpp"

namespace tunable {
namespace {

/// A fake device address, never dereferenced: the checks only look at its value.
template <class T = void>
T* fake(std::uintptr_t addr) {
  return reinterpret_cast<T*>(addr);
}

constexpr std::uintptr_t kTiB = std::uintptr_t{1} << 40;

NormArgs norm_args(DataType t, bool fused, std::int64_t rows, std::int64_t hidden,
                   Fp8Scaling fp8 = Fp8Scaling::kNone) {
  NormArgs a;
  a.prob = NormProblem{fused, t, NormWeight::kLlama, fp8, rows, hidden};
  a.x_stride = a.residual_stride = a.out_stride = hidden;
  // 1 TiB apart: no operand of any size a test uses reaches the next one.
  a.x = fake(kTiB);
  a.residual = fused ? fake(2 * kTiB) : nullptr;
  a.weight = fake(3 * kTiB);
  a.out = fake(4 * kTiB);
  a.scale = fp8 == Fp8Scaling::kStatic ? fake<const float>(5 * kTiB) : nullptr;
  a.token_scales = fp8 == Fp8Scaling::kDynamicPerToken ? fake<float>(6 * kTiB) : nullptr;
  return a;
}

ActArgs act_args(DataType t, std::int64_t rows, std::int64_t d, Fp8Scaling fp8 = Fp8Scaling::kNone) {
  ActArgs a;
  a.prob = ActProblem{t, Activation::kSilu, fp8, rows, d};
  a.x_stride = 2 * d;
  a.out_stride = d;
  a.x = fake(kTiB);
  a.out = fake(4 * kTiB);
  a.scale = fp8 == Fp8Scaling::kStatic ? fake<const float>(5 * kTiB) : nullptr;
  return a;
}

void expect_error(const Status& st, StatusCode code, const std::string& mentions) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(mentions), std::string::npos)
      << "'" << st.message() << "' does not mention '" << mentions << "'";
}

// ---- signatures ---------------------------------------------------------------------------------

TEST(OpsSignature, NormFormats) {
  EXPECT_EQ(op_signature(NormProblem{false, DataType::kBF16, NormWeight::kLlama, Fp8Scaling::kNone, 1, 8}),
            "RmsNormTunableOp_BFloat16");
  EXPECT_EQ(op_signature(NormProblem{true, DataType::kBF16, NormWeight::kGemma,
                                     Fp8Scaling::kDynamicPerToken, 1, 8}),
            "FusedAddRmsNormTunableOp_BFloat16_gemma_fp8dyn");
  EXPECT_EQ(op_signature(NormProblem{false, DataType::kF16, NormWeight::kLlama, Fp8Scaling::kStatic, 1, 8}),
            "RmsNormTunableOp_Half_fp8static");
  EXPECT_EQ(op_signature(NormProblem{true, DataType::kF32, NormWeight::kGemma, Fp8Scaling::kNone, 1, 8}),
            "FusedAddRmsNormTunableOp_float_gemma");
  NormProblem p;
  p.hidden = 4096;
  for (auto [rows, want] : {std::pair<std::int64_t, const char*>{1, "rows_1_hidden_4096"},
                            {3, "rows_4_hidden_4096"},
                            {1000, "rows_1024_hidden_4096"},
                            {1024, "rows_1024_hidden_4096"},
                            {1025, "rows_2048_hidden_4096"}}) {
    p.rows = rows;
    EXPECT_EQ(params_signature(p), want);
  }
}

TEST(OpsSignature, ActFormats) {
  EXPECT_EQ(op_signature(ActProblem{DataType::kBF16, Activation::kSilu, Fp8Scaling::kNone, 1, 8}),
            "ActAndMulTunableOp_BFloat16_silu");
  EXPECT_EQ(op_signature(ActProblem{DataType::kF16, Activation::kGeluTanh, Fp8Scaling::kStatic, 1, 8}),
            "ActAndMulTunableOp_Half_gelutanh_fp8static");
  EXPECT_EQ(params_signature(ActProblem{DataType::kBF16, Activation::kSilu, Fp8Scaling::kNone, 16, 14336}),
            "rows_16_d_14336");
}

TEST(OpsSignature, RoundTripsEveryNormProblem) {
  for (bool fused : {false, true})
    for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32})
      for (NormWeight w : {NormWeight::kLlama, NormWeight::kGemma})
        for (Fp8Scaling f : {Fp8Scaling::kNone, Fp8Scaling::kStatic, Fp8Scaling::kDynamicPerToken}) {
          const NormProblem p{fused, t, w, f, 777, 5120};
          NormProblem back;
          const std::string op = op_signature(p), params = params_signature(p);
          ASSERT_TRUE(parse_norm_signature(op, params, &back).is_ok()) << op << " " << params;
          EXPECT_EQ(back.fused, fused);
          EXPECT_EQ(back.dtype, t);
          EXPECT_EQ(back.weight, w);
          EXPECT_EQ(back.fp8, f);
          EXPECT_EQ(back.rows, 1024);
          EXPECT_EQ(back.hidden, 5120);
          EXPECT_EQ(op_signature(back), op);
          EXPECT_EQ(params_signature(back), params);
        }
}

TEST(OpsSignature, RoundTripsEveryActProblem) {
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32})
    for (Activation act : {Activation::kSilu, Activation::kGeluTanh})
      for (Fp8Scaling f : {Fp8Scaling::kNone, Fp8Scaling::kStatic}) {
        const ActProblem p{t, act, f, 16, 14336};
        ActProblem back;
        ASSERT_TRUE(parse_act_signature(op_signature(p), params_signature(p), &back).is_ok());
        EXPECT_EQ(back.dtype, t);
        EXPECT_EQ(back.act, act);
        EXPECT_EQ(back.fp8, f);
        EXPECT_EQ(back.rows, 16);
        EXPECT_EQ(back.d, 14336);
      }
}

TEST(OpsSignature, RejectsMalformed) {
  NormProblem p;
  const char* good_params = "rows_16_hidden_4096";
  for (const char* op : {"RmsNormTunableOp_double", "RmsNormTunableOp_BFloat16_fp8dyn_gemma",
                         "RmsNormTunableOp_BFloat16_llama", "RmsNormTunableOp_", "GemmTunableOp_BFloat16_TN",
                         "FusedAddRmsNormTunableOp_Float8_e4m3fn"}) {
    EXPECT_EQ(parse_norm_signature(op, good_params, &p).code(), StatusCode::kParseError) << op;
  }
  for (const char* params : {"rows_1000_hidden_4096", "rows_0_hidden_4096", "rows_16_hidden_",
                             "rows_16_d_4096", "rows_16_hidden_04096", "rows_16_hidden_-1",
                             "rows_16_hidden_4096_x", "hidden_4096"}) {
    EXPECT_EQ(parse_norm_signature("RmsNormTunableOp_BFloat16", params, &p).code(), StatusCode::kParseError)
        << params;
  }
  ActProblem a;
  for (const char* op : {"ActAndMulTunableOp_BFloat16", "ActAndMulTunableOp_BFloat16_relu",
                         "ActAndMulTunableOp_BFloat16_silu_fp8dyn", "ActAndMulTunableOp_Half_gelu_tanh"}) {
    EXPECT_EQ(parse_act_signature(op, "rows_16_d_4096", &a).code(), StatusCode::kParseError) << op;
  }
  EXPECT_EQ(parse_act_signature("ActAndMulTunableOp_BFloat16_silu", "rows_16_hidden_4096", &a).code(),
            StatusCode::kParseError);
}

TEST(OpsSignature, RowsBucket) {
  EXPECT_EQ(rows_bucket(1), 1);
  EXPECT_EQ(rows_bucket(2), 2);
  EXPECT_EQ(rows_bucket(3), 4);
  EXPECT_EQ(rows_bucket(64), 64);
  EXPECT_EQ(rows_bucket(65), 128);
  EXPECT_EQ(rows_bucket(4097), 8192);
}

// ---- candidate names ------------------------------------------------------------------------------

/// `c` is named `name`, and `name` parses back to `c`.
void expect_norm_round_trip(const NormConfig& c, const char* name) {
  EXPECT_EQ(config_name(c), name);
  const auto back = parse_norm_config(name);
  ASSERT_TRUE(back.has_value()) << name;
  EXPECT_TRUE(*back == c) << name;
}

TEST(OpsConfigNames, NormRoundTrip) {
  NormConfig c;
  c.vec16 = true;
  c.threads_per_row = 256;
  c.rows_per_block = 2;
  c.items = 4;
  expect_norm_round_trip(c, "rms_vec16_t256_r2_i4");
  NormConfig s;
  s.vec16 = false;
  s.staged = true;
  s.threads_per_row = 1024;
  expect_norm_round_trip(s, "rms_scalar_staged_t1024");
  for (const char* bad : {"Default", "rms_vec16_t250_r1_i2", "rms_vec16_t256_r1_i3", "rms_vec16_t0256_r1_i2",
                          "rms_vec8_t256_r1_i2", "rms_vec16_t1024_r2_i1", "rms_vec16_t256_r1", "rms_vec16_staged",
                          "rms_vec16_staged_t2048", "rms_vec16_t256_r0_i1", "act_vec16_t256_i1", ""}) {
    EXPECT_FALSE(parse_norm_config(bad).has_value()) << bad;
  }
}

TEST(OpsConfigNames, NormEarlyWeightClusterAndStreamRoundTrip) {
  NormConfig e;
  e.threads_per_row = 128;
  e.rows_per_block = 4;
  e.items = 4;
  e.early_weight = true;
  expect_norm_round_trip(e, "rms_vec16_t128_r4_i4_ew");
  NormConfig k;
  k.cluster = 4;
  k.threads_per_row = 256;
  k.items = 2;
  expect_norm_round_trip(k, "rms_vec16_c4_t256_i2");
  NormConfig s;
  s.stream = 2;
  s.threads_per_row = 512;
  s.items = 4;
  expect_norm_round_trip(s, "rms_vec16_w2_t512_i4");
  for (const char* bad : {"rms_vec16_t128_r4_i8_ew", "rms_scalar_t128_r4_i4_ew", "rms_vec16_t128_r4_i4_x",
                          "rms_vec16_c3_t256_i1", "rms_vec16_c16_t256_i1", "rms_scalar_c4_t256_i1",
                          "rms_vec16_c4_t256_i4", "rms_vec16_c4_t256", "rms_vec16_c4_r1_t256_i1",
                          "rms_vec16_w3_t256_i1", "rms_scalar_w2_t256_i1", "rms_vec16_w2_t1024_i4",
                          "rms_vec16_w2_t256_i8", "rms_vec16_w2_t256_i3", "rms_vec16_w2_t256", "rms_vec16_w0_t256_i1",
                          "rms_vec16_w1_t256_i1", "rms_vec16_w8_t256_i1", "rms_vec16_s2_t256_i1"}) {
    EXPECT_FALSE(parse_norm_config(bad).has_value()) << bad;
  }
}

TEST(OpsConfigNames, ActRowsRoundTrip) {
  ActConfig c{true, 256, 1, true};
  c.rows_per_thread = 4;
  EXPECT_EQ(config_name(c), "act_vec16_t256_i1_r4_fastsigmoid");
  auto back = parse_act_config("act_vec16_t256_i1_r4_fastsigmoid");
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == c);
  c.fast = false;
  c.rows_per_thread = 2;
  EXPECT_EQ(config_name(c), "act_vec16_t256_i1_r2");
  back = parse_act_config("act_vec16_t256_i1_r2");
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == c);
  for (const char* bad : {"act_vec16_t256_i2_r2", "act_scalar_t256_i1_r2", "act_vec16_t256_i1_r3",
                          "act_vec16_t256_i1_fastsigmoid_r2", "act_vec16_t256_i1_r2_r2", "act_vec16_t256_i1_r"}) {
    EXPECT_FALSE(parse_act_config(bad).has_value()) << bad;
  }
}

TEST(OpsConfigNames, ActRoundTrip) {
  const ActConfig c{true, 128, 2, true};
  EXPECT_EQ(config_name(c), "act_vec16_t128_i2_fastsigmoid");
  auto back = parse_act_config("act_vec16_t128_i2_fastsigmoid");
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == c);
  EXPECT_EQ(config_name(ActConfig{false, 64, 1, false}), "act_scalar_t64_i1");
  for (const char* bad : {"act_vec16_t256_i8", "act_scalar_t64_i1_fast", "act_vec16_t100_i1",
                          "act_vec16_t256", "rms_vec16_t256_r1_i1", "act_vec16_t256_i1_fastsigmoid_x"}) {
    EXPECT_FALSE(parse_act_config(bad).has_value()) << bad;
  }
}

// ---- validation -----------------------------------------------------------------------------------

TEST(OpsValidate, AcceptsGoodArgs) {
  for (bool fused : {false, true})
    for (Fp8Scaling f : {Fp8Scaling::kNone, Fp8Scaling::kStatic, Fp8Scaling::kDynamicPerToken})
      EXPECT_TRUE(validate(norm_args(DataType::kBF16, fused, 7, 4100, f)).is_ok());
  EXPECT_TRUE(validate(act_args(DataType::kF32, 3, 24, Fp8Scaling::kStatic)).is_ok());
  NormArgs in_place = norm_args(DataType::kF16, true, 4, 128);
  in_place.out = const_cast<void*>(in_place.x);
  EXPECT_TRUE(validate(in_place).is_ok());
  // Two slices of one wider buffer (x in columns [0, 128), out in [128, 256) of 256-wide rows) share
  // no byte and are accepted; moved by one element they would.
  NormArgs slices = norm_args(DataType::kF16, false, 4, 128);
  slices.x_stride = slices.out_stride = 256;
  slices.out = fake(kTiB + 128 * 2);
  EXPECT_TRUE(validate(slices).is_ok()) << validate(slices).to_string();
  slices.out = fake(kTiB + 127 * 2);
  EXPECT_EQ(validate(slices).code(), StatusCode::kInvalidArgument);
  ActArgs act_slices = act_args(DataType::kBF16, 8, 64);  // out beside x in rows of 3 x 64
  act_slices.x_stride = act_slices.out_stride = 192;
  act_slices.out = fake(kTiB + 128 * 2);
  EXPECT_TRUE(validate(act_slices).is_ok()) << validate(act_slices).to_string();
}

TEST(OpsValidate, NormErrorsNameTheArgument) {
  NormArgs a = norm_args(DataType::kBF16, true, 0, 4096);
  expect_error(validate(a), StatusCode::kInvalidArgument, "rows");
  a = norm_args(DataType::kBF16, true, 4, 0);
  expect_error(validate(a), StatusCode::kInvalidArgument, "hidden");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.x = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "x must not be null");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.residual = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "residual");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.weight = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "weight");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.out = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "out");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.x = fake(0x100001);
  expect_error(validate(a), StatusCode::kMisaligned, "x (");
  a = norm_args(DataType::kF64, false, 4, 4096);
  expect_error(validate(a), StatusCode::kNotSupported, "fp64");
  a = norm_args(DataType::kF8E4M3, false, 4, 4096);
  expect_error(validate(a), StatusCode::kNotSupported, "fp8e4m3");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.x_stride = 4095;
  expect_error(validate(a), StatusCode::kInvalidArgument, "x_row_stride");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.residual_stride = 100;
  expect_error(validate(a), StatusCode::kInvalidArgument, "residual_row_stride");
  a = norm_args(DataType::kBF16, true, 4, 4096, Fp8Scaling::kStatic);
  a.scale = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "scale");
  a = norm_args(DataType::kBF16, true, 4, 4096, Fp8Scaling::kDynamicPerToken);
  a.token_scales = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "token_scales");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.out = const_cast<void*>(a.x);
  a.out_stride = 8192;
  expect_error(validate(a), StatusCode::kInvalidArgument, "in place");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.eps = std::numeric_limits<float>::quiet_NaN();
  expect_error(validate(a), StatusCode::kInvalidArgument, "eps");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.residual = a.out;
  expect_error(validate(a), StatusCode::kInvalidArgument, "out and residual overlap");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.eps = 0;
  expect_error(validate(a), StatusCode::kInvalidArgument, "eps must be finite and > 0");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.weight = a.residual;  // read non-coherently while the kernel writes the residual
  expect_error(validate(a), StatusCode::kInvalidArgument, "weight and residual overlap");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.out = fake(kTiB + 16);  // 8 elements into x: not in place, not apart
  expect_error(validate(a), StatusCode::kInvalidArgument, "out and x overlap");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.weight = fake(4 * kTiB + 2 * 4096 * 3);  // inside out's last row
  expect_error(validate(a), StatusCode::kInvalidArgument, "out and weight overlap");
  a = norm_args(DataType::kBF16, false, 4, 4096, Fp8Scaling::kDynamicPerToken);
  a.token_scales = fake<float>(kTiB + 64);
  expect_error(validate(a), StatusCode::kInvalidArgument, "x and fp8 token_scales overlap");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.prob.weight = static_cast<NormWeight>(5);
  expect_error(validate(a), StatusCode::kInvalidArgument, "weight convention 5");
  a = norm_args(DataType::kBF16, false, 4, 4096);
  a.prob.fp8 = static_cast<Fp8Scaling>(7);
  expect_error(validate(a), StatusCode::kInvalidArgument, "fp8 scaling 7");
  a = norm_args(DataType::kBF16, false, (std::int64_t{1} << 30) + 1, 8);
  expect_error(validate(a), StatusCode::kInvalidArgument, "rows");
  a = norm_args(DataType::kBF16, true, 4, std::int64_t{1} << 40);
  expect_error(validate(a), StatusCode::kInvalidArgument, "hidden");
}

TEST(OpsValidate, ActErrorsNameTheArgument) {
  ActArgs a = act_args(DataType::kBF16, 4, 0);
  expect_error(validate(a), StatusCode::kInvalidArgument, "d must be positive");
  a = act_args(DataType::kBF16, 0, 64);
  expect_error(validate(a), StatusCode::kInvalidArgument, "rows");
  a = act_args(DataType::kBF16, 4, 64);
  a.x_stride = 100;
  expect_error(validate(a), StatusCode::kInvalidArgument, "x_row_stride");
  a = act_args(DataType::kBF16, 4, 64, Fp8Scaling::kDynamicPerToken);
  expect_error(validate(a), StatusCode::kNotSupported, "dynamic");
  a = act_args(DataType::kBF16, 4, 64);
  a.out = const_cast<void*>(a.x);
  expect_error(validate(a), StatusCode::kInvalidArgument, "out and x overlap");
  a = act_args(DataType::kBF16, 4, 64);
  a.out = fake(kTiB + 2);  // one element into x
  expect_error(validate(a), StatusCode::kInvalidArgument, "out and x overlap");
  a = act_args(DataType::kBF16, 4, 64);
  a.prob.act = static_cast<Activation>(9);
  expect_error(validate(a), StatusCode::kInvalidArgument, "activation 9");
  a = act_args(DataType::kF32, 4, 64);
  a.out = fake(0x400002);
  expect_error(validate(a), StatusCode::kMisaligned, "out");
  a = act_args(DataType::kBF16, 4, 64, Fp8Scaling::kStatic);
  a.scale = nullptr;
  expect_error(validate(a), StatusCode::kInvalidArgument, "scale");
}

/// The public entry points validate before they look at the device: a CPU context (which any
/// machine can create) gets the argument errors, and kNotSupported for valid arguments.
TEST(OpsValidate, PublicApiValidatesBeforeTheDevice) {
  Options o;
  o.filename = "";
  Context ctx(Device::cpu(), o);
  void* x = fake(0x100000);
  void* r = fake(0x200000);
  void* w = fake(0x300000);
  void* out = fake(0x400000);
  expect_error(rms_norm(ctx, out, nullptr, w, 4, 4096, 4096, 4096, 1e-6f, DataType::kBF16),
               StatusCode::kInvalidArgument, "x must not be null");
  expect_error(rms_norm(ctx, out, x, w, 0, 4096, 4096, 4096, 1e-6f, DataType::kBF16),
               StatusCode::kInvalidArgument, "rows");
  expect_error(fused_add_rms_norm(ctx, out, x, r, w, 4, 0, 4096, 4096, 4096, 1e-6f, DataType::kBF16),
               StatusCode::kInvalidArgument, "hidden");
  expect_error(fused_add_rms_norm(ctx, out, x, fake(0x200001), w, 4, 4096, 4096, 4096, 4096, 1e-6f,
                                  DataType::kBF16),
               StatusCode::kMisaligned, "residual");
  expect_error(act_and_mul(ctx, out, x, 4, 64, 128, 64, DataType::kF64), StatusCode::kNotSupported, "fp64");
  expect_error(rms_norm(ctx, out, x, w, 4, 4096, 4096, 4096, 1e-6f, DataType::kBF16, NormWeight::kGemma,
                        nullptr, Fp8Output::static_scale(nullptr)),
               StatusCode::kInvalidArgument, "scale");
  expect_error(rms_norm(ctx, out, x, w, 4, 4096, 4096, 4096, 1e-6f, DataType::kBF16),
               StatusCode::kNotSupported, "CUDA");
  expect_error(act_and_mul(ctx, out, x, 4, 64, 128, 64, DataType::kBF16, Activation::kGeluTanh),
               StatusCode::kNotSupported, "CUDA");
  expect_error(tune_fused_op(ctx, "GemmTunableOp_float_NN", "nn_1_1_1"), StatusCode::kParseError,
               "not a fused-op signature");
  expect_error(tune_fused_op(ctx, "RmsNormTunableOp_BFloat16", "rows_3_hidden_4096"),
               StatusCode::kParseError, "power of two");
  expect_error(tune_fused_op(ctx, "FusedAddRmsNormTunableOp_BFloat16_gemma_fp8dyn", "rows_1024_hidden_4096"),
               StatusCode::kNotSupported, "CUDA");
}

// ---- Default and candidates -------------------------------------------------------------------------

std::vector<std::int64_t> hidden_sizes() {
  std::vector<std::int64_t> h;
  for (std::int64_t i = 1; i <= 300; ++i) h.push_back(i);
  for (std::int64_t v : {2048, 4095, 4096, 4100, 5120, 8192, 14336, 16384, 16385, 32768, 65536, 100000,
                         1 << 20})
    h.push_back(v);
  return h;
}

TEST(OpsDefault, NormDefaultFitsEveryProblem) {
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32})
    for (Fp8Scaling f : {Fp8Scaling::kNone, Fp8Scaling::kDynamicPerToken})
      for (std::int64_t h : hidden_sizes())
        for (std::int64_t rows : {1, 16, 17, 64, 65, 1024, 2048, 4096})
          for (bool misaligned : {false, true}) {
            NormArgs a = norm_args(t, true, rows, h, f);
            if (misaligned) a.x = fake(0x100000 + size_of(t));
            for (bool clusters : {false, true}) {
              const NormConfig c = default_config(a, clusters);
              const Status st = config_fits(a, c);
              ASSERT_TRUE(st.is_ok()) << short_name(t) << " hidden " << h << " rows " << rows << " "
                                      << config_name(c) << ": " << st.to_string();
              if (misaligned) EXPECT_FALSE(c.vec16);
              if (!clusters) EXPECT_EQ(c.cluster, 1);
            }
          }
}

TEST(OpsDefault, NormDefaultPicks) {
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 4096, 4096), false)), "rms_vec16_t512_r1_i1");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 1, 16384), false)), "rms_vec16_t1024_r1_i2");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 4096, 16384), false)), "rms_vec16_t512_r1_i4");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 4096, 128), false)), "rms_vec16_t32_r8_i1");
  EXPECT_FALSE(default_config(norm_args(DataType::kBF16, true, 16, 4100), false).vec16);
  EXPECT_TRUE(default_config(norm_args(DataType::kBF16, true, 16, 1 << 20), false).staged);
  // 512 < rows <= 2048: the measured H100 winners (docs/fused-ops.md).
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 1024, 4096), false)), "rms_vec16_t128_r4_i4");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 2048, 4096), false)), "rms_vec16_t128_r2_i4");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 2048, 8192), false)), "rms_vec16_t256_r1_i4");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 2048, 16384), false)), "rms_vec16_t512_r1_i4");
  // 513-1024 rows of 1024-2048 vectors: blocks walking two rows (H100: 3-7 % faster in graphs, docs/fused-ops.md).
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 1024, 8192), false)), "rms_vec16_w2_t512_i2");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 513, 16384), false)), "rms_vec16_w2_t1024_i2");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kF32, true, 1024, 8192), false)), "rms_vec16_w2_t1024_i2");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 512, 16384), false)), "rms_vec16_t512_r1_i4");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 128, 4096), false)), "rms_vec16_t512_r1_i1");
  // <= 64 rows on an sm_90 device: the cluster kernel, shaped as the H100 winners (docs/fused-ops.md).
  const auto pick = [](std::int64_t rows, std::int64_t hidden, DataType t = DataType::kBF16) {
    return config_name(default_config(norm_args(t, true, rows, hidden), true));
  };
  EXPECT_EQ(pick(1, 4096), "rms_vec16_c4_t128_i1");
  EXPECT_EQ(pick(1, 8192), "rms_vec16_c8_t128_i1");
  EXPECT_EQ(pick(16, 16384), "rms_vec16_c8_t256_i1");
  EXPECT_EQ(pick(17, 4096), "rms_vec16_c2_t256_i1");
  EXPECT_EQ(pick(64, 8192), "rms_vec16_c2_t256_i2");
  EXPECT_EQ(pick(64, 16384), "rms_vec16_c2_t512_i2");
  EXPECT_EQ(pick(65, 4096), "rms_vec16_t512_r1_i1");  // the register kernel above 64 rows
  EXPECT_EQ(pick(1, 2048), "rms_vec16_t256_r1_i1");   // and below 512 vectors
  EXPECT_EQ(pick(1, 4096, DataType::kF32), "rms_vec16_c8_t128_i1");
  EXPECT_EQ(config_name(default_config(norm_args(DataType::kBF16, true, 1, 4100), true)).rfind("rms_scalar_t", 0), 0u);
}

TEST(OpsDefault, ActDefaultFitsEveryProblem) {
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32})
    for (std::int64_t d : hidden_sizes())
      for (std::int64_t rows : {1, 64, 65, 4096})
        for (bool misaligned : {false, true}) {
          ActArgs a = act_args(t, rows, d, Fp8Scaling::kStatic);
          if (misaligned) a.out = fake(0x400001);
          const ActConfig c = default_config(a);
          ASSERT_TRUE(config_fits(a, c).is_ok()) << short_name(t) << " d " << d << " " << config_name(c);
          if (misaligned) EXPECT_FALSE(c.vec16);
        }
}

TEST(OpsCandidates, NormCandidatesFitAndParseBack) {
  for (DataType t : {DataType::kBF16, DataType::kF32})
    for (std::int64_t h : {8, 24, 128, 2048, 4096, 4100, 5120, 16384, 65536})
      for (std::int64_t rows : {1, 37, 4096}) {
        const NormArgs a = norm_args(t, true, rows, h, Fp8Scaling::kDynamicPerToken);
        const std::vector<NormConfig> cs = candidate_configs(a);
        ASSERT_FALSE(cs.empty());
        std::set<std::string> names;
        for (const NormConfig& c : cs) {
          const std::string n = config_name(c);
          EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
          EXPECT_TRUE(config_fits(a, c).is_ok()) << n << " hidden " << h;
          auto back = parse_norm_config(n);
          ASSERT_TRUE(back.has_value()) << n;
          EXPECT_TRUE(*back == c) << n;
          EXPECT_EQ(c.vec16, h % (16 / static_cast<std::int64_t>(size_of(t))) == 0) << n;
        }
      }
}

TEST(OpsCandidates, ActCandidatesFitAndParseBack) {
  for (DataType t : {DataType::kBF16, DataType::kF32})
    for (std::int64_t d : {8, 24, 4096, 4100, 14336}) {
      const ActArgs a = act_args(t, 64, d);
      const std::vector<ActConfig> cs = candidate_configs(a);
      ASSERT_FALSE(cs.empty());
      bool fast = false, accurate = false;
      std::set<std::string> names;
      for (const ActConfig& c : cs) {
        const std::string n = config_name(c);
        EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
        EXPECT_TRUE(config_fits(a, c).is_ok()) << n;
        auto back = parse_act_config(n);
        ASSERT_TRUE(back.has_value()) << n;
        EXPECT_TRUE(*back == c) << n;
        (c.fast ? fast : accurate) = true;
      }
      EXPECT_TRUE(fast && accurate) << "both sigmoid flavours are candidates";
    }
}

TEST(OpsCandidates, NewVariantsAreCandidatesWhereTheyShouldBe) {
  auto count = [](const std::vector<NormConfig>& cs, bool ew, bool cl) {
    return std::count_if(cs.begin(), cs.end(), [&](const NormConfig& c) {
      return (!ew || c.early_weight) && (!cl || c.cluster > 1);
    });
  };
  EXPECT_GT(count(candidate_configs(norm_args(DataType::kBF16, true, 1, 16384)), false, true), 0);
  EXPECT_GT(count(candidate_configs(norm_args(DataType::kBF16, true, 16, 4096)), false, true), 0);
  EXPECT_EQ(count(candidate_configs(norm_args(DataType::kBF16, true, 1024, 4096)), false, true), 0);
  EXPECT_EQ(count(candidate_configs(norm_args(DataType::kBF16, true, 16, 4100)), false, true), 0);
  EXPECT_GT(count(candidate_configs(norm_args(DataType::kBF16, true, 1024, 4096)), true, false), 0);
  for (std::int64_t d : {8, 24, 4096, 8192, 14336}) {
    const ActArgs a = act_args(DataType::kBF16, 1024, d);
    std::set<std::string> names;
    int rows = 0;
    for (const ActConfig& c : candidate_configs(a)) {
      const std::string n = config_name(c);
      EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
      EXPECT_TRUE(config_fits(a, c).is_ok()) << n;
      auto back = parse_act_config(n);
      ASSERT_TRUE(back.has_value()) << n;
      EXPECT_TRUE(*back == c) << n;
      rows += c.rows_per_thread > 1;
    }
    if (d >= 4096) EXPECT_GT(rows, 0) << "d " << d;
  }
  for (const ActConfig& c : candidate_configs(act_args(DataType::kBF16, 64, 8192))) EXPECT_EQ(c.rows_per_thread, 1);
}

TEST(OpsCandidates, NormStreamingCandidatesAboveTwoHundredFiftySixRows) {
  auto streaming = [](const NormArgs& a) {
    int n = 0;
    for (const NormConfig& c : candidate_configs(a)) n += c.stream > 0;
    return n;
  };
  // bf16 4096: 512 vectors, t512_i1 / t256_i2 / t128_i4 walking 2 or 4 rows.
  EXPECT_EQ(streaming(norm_args(DataType::kBF16, true, 600, 4096)), 6);
  EXPECT_EQ(streaming(norm_args(DataType::kBF16, true, 257, 4096)), 6) << "rows bucket 512";
  EXPECT_EQ(streaming(norm_args(DataType::kBF16, true, 256, 4096)), 0) << "rows bucket 256";
  EXPECT_EQ(streaming(norm_args(DataType::kBF16, true, 4096, 2048)), 0) << "256 vectors: one block covers the row";
  EXPECT_EQ(streaming(norm_args(DataType::kBF16, true, 4096, 4100)), 0) << "scalar rows";
  // 16384 bf16: 2048 vectors fit only as t1024_i2 and t512_i4.
  EXPECT_EQ(streaming(norm_args(DataType::kBF16, true, 1024, 16384)), 4);

  NormArgs a = norm_args(DataType::kBF16, true, 1024, 16384);
  NormConfig c;
  c.stream = 2;
  c.threads_per_row = 512;
  c.items = 2;  // 1024 vectors of 2048
  expect_error(config_fits(a, c), StatusCode::kNotSupported, "more than 512 threads x 2 items");
  c.items = 4;
  ASSERT_TRUE(config_fits(a, c).is_ok());
  c.threads_per_row = 1024;  // 4 items hold 1024 threads' registers only at <= 512 threads
  expect_error(config_fits(a, c), StatusCode::kNotSupported, "limit of 512");
  c.threads_per_row = 512;
  c.stream = 3;
  expect_error(config_fits(a, c), StatusCode::kNotSupported, "not in 2, 4");
  c.stream = 2;
  c.vec16 = false;
  expect_error(config_fits(norm_args(DataType::kBF16, true, 1024, 4100), c), StatusCode::kNotSupported,
               "16-byte vectors");
}

TEST(OpsCandidates, Vec16RejectsMisalignedWithReason) {
  NormArgs a = norm_args(DataType::kBF16, true, 4, 4096);
  NormConfig c;  // vec16
  c.threads_per_row = 512;
  ASSERT_TRUE(config_fits(a, c).is_ok());
  a.residual = fake(0x200002);
  expect_error(config_fits(a, c), StatusCode::kMisaligned, "residual");
  a = norm_args(DataType::kBF16, true, 4, 4096);
  a.x_stride = 4100;
  expect_error(config_fits(a, c), StatusCode::kMisaligned, "stride");
  a = norm_args(DataType::kBF16, true, 4, 4100);
  expect_error(config_fits(a, c), StatusCode::kNotSupported, "multiple of 8");
  ActArgs b = act_args(DataType::kBF16, 4, 4096, Fp8Scaling::kStatic);
  const ActConfig ac{true, 256, 1, false};
  ASSERT_TRUE(config_fits(b, ac).is_ok());
  b.out = fake(0x400004);  // e4m3 output of bf16 needs 8-byte alignment
  expect_error(config_fits(b, ac), StatusCode::kMisaligned, "out");
}

// ---- the tests' bounds against the library's tolerance (issue 39, defect 5) ----------------------

// The tuner may accept only what the tests accept (tests/gpu/ops_gpu_test.cpp judges every output
// with test::fused_bound): the library's tolerance is no looser for any dtype. A library tolerance
// loosened 2x fails here.
TEST(ToleranceOwnership, FusedLibraryToleranceIsNoLooserThanTheTestsBound) {
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    const Tolerance lib = fused_tolerance(t);
    const test::Bound b = test::fused_bound(t);
    EXPECT_GT(b.rtol, 0) << short_name(t);
    EXPECT_LE(lib.atol, b.atol) << short_name(t) << ": the library accepts more than the tests' bound";
    EXPECT_LE(lib.rtol, b.rtol) << short_name(t) << ": the library accepts more than the tests' bound";
  }
}

// Near-misses at 1.5x the tests' bound fail the library's comparison with its own tolerance (and
// the tests' check); at half the bound both pass. A 2x looser library tolerance would pass them.
TEST(ToleranceOwnership, FusedNearMissesFailTheLibraryCheck) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE(test::seed_trace(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  // Like a normalized row times a weight: |y| up to sqrt(3).
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> ref(4096);
  for (double& y : ref) y = std::sqrt(3.0) * u(rng) * u(rng);
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    SCOPED_TRACE(short_name(t));
    const Tolerance lib = fused_tolerance(t);
    const test::Bound b = test::fused_bound(t);
    for (double factor : {1.5, 0.5}) {
      const bool miss = factor > 1;
      const std::vector<double> one = test::plant_one(ref, 777, b, factor);
      const NumericsReport r1 = compare_outputs(one.data(), ref.data(), ref.size(), lib);
      EXPECT_EQ(r1.passed, !miss) << "one element at " << factor << "x the tests' bound";
      EXPECT_EQ(r1.bad_elements, miss ? 1u : 0u);
      EXPECT_EQ(test::check_close(one.data(), ref.data(), ref.size(), b).passed(), !miss);
      const std::vector<double> all = test::plant_all(ref, b, factor);
      const NumericsReport r2 = compare_outputs(all.data(), ref.data(), ref.size(), lib);
      EXPECT_EQ(r2.passed, !miss) << "every element scaled by 1 + " << factor << " rtol";
      EXPECT_EQ(test::check_close(all.data(), ref.data(), ref.size(), b).passed(), !miss);
    }
  }
}

}  // namespace
}  // namespace tunable
