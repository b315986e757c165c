#include <gtest/gtest.h>

#include <cmath>

#include "gemm/gemm_args.hpp"

namespace tunable {
namespace {

/// An e4m3 ScaledGemm in F.linear's layout writing bf16.
GemmDesc scaled_gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmDesc d = GemmDesc::make(DataType::kF8E4M3, Transpose::kT, Transpose::kN, m, n, k);
  d.op = GemmOp::kScaledGemm;
  d.out_dtype = DataType::kBF16;
  return d;
}

TEST(GemmSignature, MatchesTunableOpSpelling) {
  GemmDesc d = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 4096, 1, 4096);
  d.ldc = 4096;
  EXPECT_EQ(op_signature(d), "GemmTunableOp_BFloat16_TN");
  EXPECT_EQ(params_signature(d), "tn_4096_1_4096_ld_4096_4096_4096");
  GemmDesc f = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 1024, 512, 2048);
  EXPECT_EQ(op_signature(f), "GemmTunableOp_float_NN");
  EXPECT_EQ(params_signature(f), "nn_1024_512_2048_ld_1024_2048_1024");
  GemmDesc t = GemmDesc::make(DataType::kTF32, Transpose::kN, Transpose::kT, 8, 8, 8);
  EXPECT_EQ(op_signature(t), "GemmTunableOp_tf32_NT");
  EXPECT_EQ(t.out_dtype, DataType::kF32);
}

GemmDesc variant(int i) {
  GemmDesc d = GemmDesc::make(i % 2 ? DataType::kF16 : DataType::kF64,
                              i % 3 ? Transpose::kT : Transpose::kN,
                              i % 5 ? Transpose::kN : Transpose::kT, 33 + i, 7 + 3 * i, 129 + i);
  d.lda += i;
  d.ldc += 2 * i;
  switch (i % 4) {
    case 1:
      d.op = GemmOp::kGemmStridedBatched;
      d.batch = 3 + i;
      d.stride_a = span(d.lda, a_rows(d), a_cols(d));
      d.stride_b = span(d.ldb, b_rows(d), b_cols(d));
      d.stride_c = span(d.ldc, d.m, d.n);
      break;
    case 2:
      d.op = GemmOp::kGemmAndBias;
      d.epilogue = i % 3 == 0 ? Epilogue::kBiasGelu : Epilogue::kBiasRelu;
      break;
    case 3:
      d.op = GemmOp::kScaledGemm;
      d.dtype = i % 2 ? DataType::kF8E4M3 : DataType::kF8E5M2;
      if (i % 3 == 1) d.dtype_b = i % 2 ? DataType::kF8E5M2 : DataType::kF8E4M3;  // mixed fp8
      d.out_dtype = DataType::kBF16;
      d.epilogue = i % 3 ? Epilogue::kBias : Epilogue::kNone;
      if (i % 8 == 7) d.scale_mode = ScaleMode::kRowwise;
      break;
  }
  return d;
}

TEST(GemmSignature, RoundTripsEveryOp) {
  for (int i = 0; i < 24; ++i) {
    GemmDesc d = variant(i);
    ASSERT_TRUE(validate(d).is_ok()) << i << " " << validate(d).to_string();
    GemmDesc back;
    Status st = parse_gemm_signature(op_signature(d), params_signature(d), &back);
    ASSERT_TRUE(st.is_ok()) << st.to_string() << " for " << op_signature(d) << " "
                            << params_signature(d);
    EXPECT_EQ(op_signature(back), op_signature(d));
    EXPECT_EQ(params_signature(back), params_signature(d));
    EXPECT_EQ(gemm_key({back, {}}), gemm_key({d, {}})) << i;
  }
}

TEST(GemmSignature, MixedFp8TypesAreNamedAndKeyed) {
  const GemmDesc d = scaled_gemm(4096, 16, 4096);
  GemmDesc mixed = d;
  mixed.dtype_b = DataType::kF8E5M2;
  ASSERT_TRUE(validate(mixed).is_ok()) << validate(mixed).to_string();
  EXPECT_EQ(op_signature(mixed), "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e5m2_BFloat16_TN");
  EXPECT_EQ(op_signature(d), "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN");
  EXPECT_NE(gemm_key({mixed, {}}), gemm_key({d, {}}));
  // Naming B's type when it equals A's is the same problem as leaving it empty.
  GemmDesc same = d;
  same.dtype_b = DataType::kF8E4M3;
  EXPECT_EQ(gemm_key({same, {}}), gemm_key({d, {}}));
  EXPECT_EQ(op_signature(same), op_signature(d));
  GemmDesc back;
  ASSERT_TRUE(parse_gemm_signature("ScaledGemmTunableOp_Float8_e5m2_Float8_e4m3fn_Half_TN",
                                   "tn_4096_16_4096_ld_4096_4096_4096", &back).is_ok());
  EXPECT_EQ(back.dtype, DataType::kF8E5M2);
  EXPECT_EQ(b_type(back), DataType::kF8E4M3);
  EXPECT_EQ(back.out_dtype, DataType::kF16);
  // Outside ScaledGemm A and B share one type.
  GemmDesc plain = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 64, 8, 64);
  plain.dtype_b = DataType::kF16;
  EXPECT_EQ(validate(plain).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(plain).message().find("one type"), std::string::npos) << validate(plain).message();
  // A 16-bit B goes with an e4m3 A only (the weight-only problem, below).
  GemmDesc half8 = mixed;
  half8.dtype = DataType::kF8E5M2;
  half8.dtype_b = DataType::kBF16;
  EXPECT_EQ(validate(half8).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(half8).message().find("for B"), std::string::npos) << validate(half8).message();
}

TEST(GemmSignature, WeightOnlyIsNamedKeyedAndNarrow) {
  GemmDesc wo = scaled_gemm(4096, 1, 2048);
  wo.dtype_b = DataType::kBF16;
  wo.scale_mode = ScaleMode::kRowwise;
  ASSERT_TRUE(validate(wo).is_ok()) << validate(wo).to_string();
  EXPECT_TRUE(is_weight_only(wo));
  EXPECT_FALSE(is_weight_only(scaled_gemm(4096, 1, 2048)));
  EXPECT_EQ(op_signature(wo), "ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_BFloat16_TN");
  EXPECT_EQ(params_signature(wo), "tn_4096_1_2048_ld_2048_2048_4096_rw");
  GemmDesc w8a8 = wo;
  w8a8.dtype_b.reset();
  EXPECT_NE(gemm_key({wo, {}}), gemm_key({w8a8, {}}));
  GemmDesc back;
  ASSERT_TRUE(parse_gemm_signature("ScaledGemmTunableOp_Float8_e4m3fn_Half_Half_TN",
                                   "tn_4096_8_2048_ld_2048_2048_4096_rw_ep_bias", &back).is_ok());
  EXPECT_TRUE(is_weight_only(back));
  EXPECT_EQ(b_type(back), DataType::kF16);
  EXPECT_EQ(back.out_dtype, DataType::kF16);
  EXPECT_EQ(back.epilogue, Epilogue::kBias);
  // Each refusal names what is wrong: per-tensor scales, another output type, another layout.
  GemmDesc tensor = wo;
  tensor.scale_mode = ScaleMode::kTensor;
  EXPECT_EQ(validate(tensor).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(tensor).message().find("rowwise"), std::string::npos) << validate(tensor).message();
  GemmDesc out32 = wo;
  out32.out_dtype = DataType::kF32;
  EXPECT_EQ(validate(out32).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(out32).message().find("B's type"), std::string::npos) << validate(out32).message();
  GemmDesc nn = wo;
  nn.transa = Transpose::kN;
  nn.lda = 4096;
  EXPECT_EQ(validate(nn).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(nn).message().find("tn problems"), std::string::npos) << validate(nn).message();
  for (const char* file_line : {"tn_4096_8_2048_ld_2048_2048_4096", "nn_4096_8_2048_ld_4096_2048_4096_rw"}) {
    const Status st = parse_gemm_signature("ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_BFloat16_TN", file_line, &back);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << file_line;
  }
  EXPECT_EQ(parse_gemm_signature("ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_Half_TN",
                                 "tn_4096_8_2048_ld_2048_2048_4096_rw", &back).code(),
            StatusCode::kParseError);
  // Only our kernels run it: k in 16-element vectors, 16-byte rows, named in the refusal.
  GemmDesc odd_k = wo;
  odd_k.k = odd_k.lda = odd_k.ldb = 2056;
  EXPECT_EQ(validate(odd_k).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(odd_k).message().find("multiple of 16"), std::string::npos) << validate(odd_k).message();
  GemmDesc odd_ld = wo;
  odd_ld.ldb = 2052;
  EXPECT_EQ(validate(odd_ld).code(), StatusCode::kMisaligned);
  odd_ld.ldb = 2056;  // 16-byte bf16 rows, though not a multiple of 16 elements
  EXPECT_TRUE(validate(odd_ld).is_ok()) << validate(odd_ld).to_string();
  odd_ld.lda = 2056;
  EXPECT_EQ(validate(odd_ld).code(), StatusCode::kMisaligned);
  // Operands: scale_a is required, scale_b is not read (null is fine).
  alignas(16) char buf[64];
  GemmOperands ops{buf, buf, buf, nullptr, reinterpret_cast<const float*>(buf), nullptr};
  EXPECT_TRUE(validate(wo, ops).is_ok()) << validate(wo, ops).to_string();
  GemmOperands shifted = ops;
  shifted.b = buf + 2;  // element-aligned, not 16-byte aligned
  EXPECT_EQ(validate(wo, shifted).code(), StatusCode::kMisaligned);
  ops.scale_a = nullptr;
  EXPECT_EQ(validate(wo, ops).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(validate(wo, ops).message().find("scale_a"), std::string::npos) << validate(wo, ops).message();
}

// The RMS-normalized weight-only problem (a norm folded into the GEMM): its own signature and key,
// parsed back; refused on any other problem and with a bad epsilon, each refusal naming why.
TEST(GemmSignature, RmsNormalizedWeightOnlyIsNamedKeyedAndNarrow) {
  GemmDesc rms = scaled_gemm(6144, 1, 4096);
  rms.dtype_b = DataType::kBF16;
  rms.scale_mode = ScaleMode::kRowwiseRms;
  rms.rms_eps = 1e-5;
  ASSERT_TRUE(validate(rms).is_ok()) << validate(rms).to_string();
  EXPECT_EQ(op_signature(rms), "ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_BFloat16_TN");
  EXPECT_EQ(params_signature(rms), "tn_6144_1_4096_ld_4096_4096_6144_rms");
  GemmDesc rw = rms;
  rw.scale_mode = ScaleMode::kRowwise;
  EXPECT_NE(gemm_key({rms, {}}), gemm_key({rw, {}}));
  GemmDesc other_eps = rms;
  other_eps.rms_eps = 1e-6;
  EXPECT_EQ(gemm_key({rms, {}}), gemm_key({other_eps, {}}));  // eps does not change the fastest kernel
  GemmDesc back;
  ASSERT_TRUE(parse_gemm_signature("ScaledGemmTunableOp_Float8_e4m3fn_Half_Half_TN",
                                   "tn_6144_8_4096_ld_4096_4096_6144_rms_ep_bias", &back).is_ok());
  EXPECT_EQ(back.scale_mode, ScaleMode::kRowwiseRms);
  EXPECT_EQ(back.epilogue, Epilogue::kBias);
  EXPECT_EQ(back.n, 8);
  EXPECT_GT(back.rms_eps, 0.0);
  EXPECT_EQ(parse_gemm_signature("GemmTunableOp_BFloat16_TN", "tn_6144_1_4096_ld_4096_4096_6144_rms", &back).code(),
            StatusCode::kParseError);
  // W8A8 (e4m3 tokens) has no RMS mode: its tokens were normalized before they were quantized.
  GemmDesc w8a8 = rms;
  w8a8.dtype_b.reset();
  EXPECT_EQ(validate(w8a8).code(), StatusCode::kNotSupported);
  EXPECT_NE(validate(w8a8).message().find("_rms"), std::string::npos) << validate(w8a8).message();
  EXPECT_EQ(parse_gemm_signature("ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN",
                                 "tn_6144_1_4096_ld_4096_4096_6144_rms", &back).code(),
            StatusCode::kParseError);
  // A bias with beta (a residual add into a layer with an output bias): only our kernels run the
  // weight-only problem and they take both; cuBLASLt's bias epilogue takes no beta.
  GemmDesc add_bias = rw;
  add_bias.epilogue = Epilogue::kBias;
  add_bias.beta = 1.0;
  EXPECT_TRUE(validate(add_bias).is_ok()) << validate(add_bias).to_string();
  GemmDesc lt_bias = add_bias;
  lt_bias.dtype_b.reset();
  EXPECT_EQ(validate(lt_bias).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(validate(lt_bias).message().find("beta = 0"), std::string::npos) << validate(lt_bias).message();
  for (double eps : {0.0, -1e-6, std::nan(""), HUGE_VAL, 1e-50, 1e39}) {
    GemmDesc bad = rms;
    bad.rms_eps = eps;
    EXPECT_EQ(validate(bad).code(), StatusCode::kInvalidArgument) << eps;
    EXPECT_NE(validate(bad).message().find("rms_eps"), std::string::npos) << validate(bad).message();
  }
}

TEST(GemmSignature, RowwiseScalesAreNamedKeyedAndScaledGemmOnly) {
  const GemmDesc d = scaled_gemm(4096, 8, 2048);
  GemmDesc rw = d;
  rw.scale_mode = ScaleMode::kRowwise;
  ASSERT_TRUE(validate(rw).is_ok()) << validate(rw).to_string();
  EXPECT_EQ(params_signature(rw), "tn_4096_8_2048_ld_2048_2048_4096_rw");
  EXPECT_EQ(params_signature(d), "tn_4096_8_2048_ld_2048_2048_4096");  // per-tensor files unchanged
  EXPECT_NE(gemm_key({rw, {}}), gemm_key({d, {}}));
  rw.epilogue = Epilogue::kBias;
  EXPECT_EQ(params_signature(rw), "tn_4096_8_2048_ld_2048_2048_4096_rw_ep_bias");
  GemmDesc back;
  ASSERT_TRUE(parse_gemm_signature(op_signature(rw), params_signature(rw), &back).is_ok());
  EXPECT_EQ(back.scale_mode, ScaleMode::kRowwise);
  EXPECT_EQ(back.epilogue, Epilogue::kBias);
  // Rowwise scales belong to ScaledGemm: refused elsewhere, in a descriptor and in a file.
  GemmDesc plain = GemmDesc::make(DataType::kBF16, Transpose::kT, Transpose::kN, 64, 8, 64);
  plain.scale_mode = ScaleMode::kRowwise;
  EXPECT_EQ(validate(plain).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(validate(plain).message().find("ScaledGemm"), std::string::npos) << validate(plain).message();
  const Status st = parse_gemm_signature("GemmTunableOp_BFloat16_TN", "tn_64_8_64_ld_64_64_64_rw", &back);
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_NE(st.message().find("_rw"), std::string::npos) << st.message();
}

TEST(GemmSignature, ParsesOldSignatureWithoutLd) {
  GemmDesc d;
  ASSERT_TRUE(parse_gemm_signature("GemmTunableOp_float_NN", "nn_1024_512_2048", &d).is_ok());
  EXPECT_EQ(d.lda, 1024);
  EXPECT_EQ(d.ldb, 2048);
  EXPECT_EQ(d.ldc, 1024);
}

TEST(GemmSignature, RejectsBadSignatures) {
  GemmDesc d;
  const char* bad_ops[] = {"", "Gemm_float_NN", "GemmTunableOp_float_NX", "GemmTunableOp_quux_NN",
                           "ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_BFloat16_TN",
                           "ScaledGemmTunableOp_Float8_e4m3fn_BFloat16_TN"};
  for (const char* op : bad_ops)
    EXPECT_EQ(parse_gemm_signature(op, "nn_1_1_1_ld_1_1_1", &d).code(), StatusCode::kParseError) << op;
  const char* bad_params[] = {"", "nn_1_1", "nn_1_1_1_ld_1_1", "tn_1_1_1_ld_1_1_1",
                              "nn_0_1_1_ld_1_1_1", "nn_1_1_1_ld_0_1_1", "nn_99999999999_1_1",
                              "nn_1_1_1_B_2_ld_1_1_1", "nn_-1_1_1"};
  for (const char* ps : bad_params)
    EXPECT_EQ(parse_gemm_signature("GemmTunableOp_float_NN", ps, &d).code(), StatusCode::kParseError)
        << ps;
  // std::regex recurses per character: a 50k-character name crashed the matcher before the cap.
  const std::string huge = "GemmTunableOp_" + std::string(50000, 'f') + "_NN";
  const Status st = parse_gemm_signature(huge, "nn_1_1_1_ld_1_1_1", &d);
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_NE(st.message().find("longer than"), std::string::npos) << st.message();
}

TEST(GemmValidate, NamesTheProblem) {
  auto msg = [](GemmDesc d) { return validate(d).message(); };
  GemmDesc d = GemmDesc::make(DataType::kF32, Transpose::kN, Transpose::kN, 4, 4, 4);
  EXPECT_TRUE(validate(d).is_ok());
  GemmDesc x = d;
  x.m = 0;
  EXPECT_NE(msg(x).find("m must be positive"), std::string::npos);
  x = d;
  x.lda = 3;
  EXPECT_NE(msg(x).find("lda"), std::string::npos);
  x = d;
  x.ldc = 2;
  EXPECT_NE(msg(x).find("ldc"), std::string::npos);
  x = d;
  x.dtype = DataType::kF8E4M3;
  EXPECT_EQ(validate(x).code(), StatusCode::kNotSupported);
  x = d;
  x.out_dtype = DataType::kBF16;
  EXPECT_EQ(validate(x).code(), StatusCode::kNotSupported);
  x = d;
  x.op = GemmOp::kGemmAndBias;
  EXPECT_NE(msg(x).find("epilogue"), std::string::npos);
  x = d;
  x.op = GemmOp::kGemmStridedBatched;
  x.batch = 2;
  x.stride_c = 1;
  EXPECT_NE(msg(x).find("stride_c"), std::string::npos);
  x = d;
  x.op = GemmOp::kGemmStridedBatched;
  x.batch = (std::int64_t{1} << 32) + 1;  // would reach cuBLASLt as a batch of 1
  x.stride_c = 16;
  EXPECT_NE(msg(x).find("batch must fit in 32 bits"), std::string::npos) << msg(x);
  x = d;
  x.alpha = NAN;
  EXPECT_NE(msg(x).find("finite"), std::string::npos);
  GemmOperands ops{nullptr, nullptr, nullptr};
  EXPECT_NE(validate(d, ops).message().find("A is null"), std::string::npos);
  alignas(8) float buf[64];
  GemmOperands mis{reinterpret_cast<char*>(buf) + 1, buf, buf};
  EXPECT_EQ(validate(d, mis).code(), StatusCode::kMisaligned);
}

}  // namespace
}  // namespace tunable

#include "gemm/cuda/cublaslt.hpp"

namespace tunable {
namespace {

TEST(LtConfigName, RoundTrips) {
  LtConfig c{21, 18, 12, 4, 2, 1, 3, 5, 0, true};
  EXPECT_EQ(c.name(), "cublasLt_a21_t18_s12_k4_r2_w1_c3_cl5_i0_fa");
  auto back = LtConfig::parse(c.name());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->name(), c.name());
  c.fast_accum = false;
  EXPECT_EQ(LtConfig::parse(c.name())->name(), c.name());
  // As cuBLASLt's heuristic returns some algorithms (a results file held this one, which an earlier
  // build then could not rebuild and ran Default instead).
  const auto minus_one = LtConfig::parse("cublasLt_a12_t0_s0_k-1_r2_w0_c1_cl0_i0");
  ASSERT_TRUE(minus_one.has_value());
  EXPECT_EQ(minus_one->splitk, -1);
  EXPECT_EQ(minus_one->name(), "cublasLt_a12_t0_s0_k-1_r2_w0_c1_cl0_i0");
  for (const char* bad : {"cublasLt_a1", "cublasLt_a1_t2_s3_k0_r0_w0_c0_cl0_i0", "Default",
                          "cublasLt_a1_t2_s3_k1_r0_w0_c0_cl0_i0_fa_x", "cublasLt_a-1_t2_s3_k1_r0_w0_c0_cl0_i0",
                          "cublasLt_a1_t2_s3_k-2_r0_w0_c0_cl0_i0"})
    EXPECT_FALSE(LtConfig::parse(bad).has_value()) << bad;
}

}  // namespace
}  // namespace tunable
