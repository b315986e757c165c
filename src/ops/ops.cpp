// Public fused-op entry points: validate -> the context's TunableOp for the op signature ->
// lookup / tune / Default -> launch.
//
// Validation comes first and touches no CUDA, so bad arguments get a clear Status on any machine.
// The TunableOp of each op signature is looked up once per context and then reached through a
// small table of pointers, so the hot path builds no strings.
#include "tunable/ops.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>

#include "cuda/cuda_util.hpp"
#include "ops/ops_args.hpp"
#include "ops/ops_solutions.hpp"
#include "ops/ops_workload.hpp"

namespace tunable {
namespace {

constexpr std::size_t kDtypes = 3, kConventions = 2, kScalings = 3;

std::size_t dtype_index(DataType t) {
  return t == DataType::kBF16 ? 0 : t == DataType::kF16 ? 1 : 2;
}

/// Per context: the TunableOp of every fused-op signature, once created.
struct FusedOpsTable {
  std::array<std::atomic<TunableOp<NormArgs>*>, 2 * kDtypes * kConventions * kScalings> norm{};
  std::array<std::atomic<TunableOp<ActArgs>*>, kDtypes * 2 * kScalings> act{};
};

FusedOpsTable& table(ContextImpl& c) {
  return c.resource<FusedOpsTable>([] { return std::make_unique<FusedOpsTable>(); });
}

/// A CUDA context, whose device is made current for the call (`g` gives the caller's back).
Status require_cuda(Context& ctx, DeviceGuard* g) {
  if (ctx.device().kind != DeviceKind::kCuda)
    return Status(StatusCode::kNotSupported,
                  fmt::format("fused ops run on CUDA devices; this context is for {}", ctx.device().to_string()));
  return g->use(ctx.device());
}

TunableOp<NormArgs>& norm_op(ContextImpl& c, const NormProblem& p) {
  const std::size_t i = ((static_cast<std::size_t>(p.fused) * kDtypes + dtype_index(p.dtype)) * kConventions +
                         static_cast<std::size_t>(p.weight)) * kScalings + static_cast<std::size_t>(p.fp8);
  std::atomic<TunableOp<NormArgs>*>& slot = table(c).norm[i];
  if (TunableOp<NormArgs>* op = slot.load(std::memory_order_acquire)) return *op;
  OpHooks<NormArgs> h;
  h.op_signature = op_signature(p);
  h.default_solution = norm_default_solution();
  h.providers = {norm_provider()};
  h.key = norm_key;
  h.params_signature = [](const NormArgs& a) { return params_signature(a.prob); };
  h.make_workload = [&c](const NormArgs& a, const Options& o, std::unique_ptr<Workload<NormArgs>>* w) {
    return make_norm_workload(c, a, o, w);
  };
  h.capturing = stream_capturing;
  TunableOp<NormArgs>& op = c.op<TunableOp<NormArgs>>(h.op_signature, [&] {
    return std::make_unique<TunableOp<NormArgs>>(c, std::move(h));
  });
  slot.store(&op, std::memory_order_release);
  return op;
}

TunableOp<ActArgs>& act_op(ContextImpl& c, const ActProblem& p) {
  const std::size_t i = (dtype_index(p.dtype) * 2 + static_cast<std::size_t>(p.act)) * kScalings +
                        static_cast<std::size_t>(p.fp8);
  std::atomic<TunableOp<ActArgs>*>& slot = table(c).act[i];
  if (TunableOp<ActArgs>* op = slot.load(std::memory_order_acquire)) return *op;
  OpHooks<ActArgs> h;
  h.op_signature = op_signature(p);
  h.default_solution = act_default_solution();
  h.providers = {act_provider()};
  h.key = act_key;
  h.params_signature = [](const ActArgs& a) { return params_signature(a.prob); };
  h.make_workload = [&c](const ActArgs& a, const Options& o, std::unique_ptr<Workload<ActArgs>>* w) {
    return make_act_workload(c, a, o, w);
  };
  h.capturing = stream_capturing;
  TunableOp<ActArgs>& op = c.op<TunableOp<ActArgs>>(h.op_signature, [&] {
    return std::make_unique<TunableOp<ActArgs>>(c, std::move(h));
  });
  slot.store(&op, std::memory_order_release);
  return op;
}

Status run_norm(Context& ctx, const NormArgs& a, Stream stream) {
  return guarded("fused op", [&] {
    TUNABLE_RETURN_IF_ERROR(validate(a));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(require_cuda(ctx, &on_device));
    return norm_op(ctx.impl(), a.prob).run(a, stream);
  });
}

}  // namespace

Status rms_norm(Context& ctx, void* out, const void* x, const void* weight, std::int64_t rows,
                std::int64_t hidden, std::int64_t x_row_stride, std::int64_t out_row_stride,
                float eps, DataType dtype, NormWeight convention, Stream stream,
                const Fp8Output& fp8) {
  NormArgs a;
  a.prob = NormProblem{false, dtype, convention, fp8.scaling, rows, hidden};
  a.x_stride = x_row_stride;
  a.out_stride = out_row_stride;
  a.eps = eps;
  a.x = x;
  a.weight = weight;
  a.out = out;
  a.scale = fp8.scale;
  a.token_scales = fp8.token_scales;
  return run_norm(ctx, a, stream);
}

Status fused_add_rms_norm(Context& ctx, void* out, const void* x, void* residual,
                          const void* weight, std::int64_t rows, std::int64_t hidden,
                          std::int64_t x_row_stride, std::int64_t residual_row_stride,
                          std::int64_t out_row_stride, float eps, DataType dtype,
                          NormWeight convention, Stream stream, const Fp8Output& fp8) {
  NormArgs a;
  a.prob = NormProblem{true, dtype, convention, fp8.scaling, rows, hidden};
  a.x_stride = x_row_stride;
  a.residual_stride = residual_row_stride;
  a.out_stride = out_row_stride;
  a.eps = eps;
  a.x = x;
  a.residual = residual;
  a.weight = weight;
  a.out = out;
  a.scale = fp8.scale;
  a.token_scales = fp8.token_scales;
  return run_norm(ctx, a, stream);
}

Status act_and_mul(Context& ctx, void* out, const void* x, std::int64_t rows, std::int64_t d,
                   std::int64_t x_row_stride, std::int64_t out_row_stride, DataType dtype,
                   Activation act, Stream stream, const Fp8Output& fp8) {
  ActArgs a;
  a.prob = ActProblem{dtype, act, fp8.scaling, rows, d};
  a.x_stride = x_row_stride;
  a.out_stride = out_row_stride;
  a.x = x;
  a.out = out;
  a.scale = fp8.scale;
  return guarded("act_and_mul", [&] {
    TUNABLE_RETURN_IF_ERROR(validate(a));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(require_cuda(ctx, &on_device));
    return act_op(ctx.impl(), a.prob).run(a, stream);
  });
}

Status tune_fused_op(Context& ctx, const std::string& op_sig, const std::string& params_sig,
                     std::string* solution) {
  return guarded("tune_fused_op", [&] {
    if (op_sig.rfind("ActAndMulTunableOp_", 0) == 0) {
      ActArgs a;
      TUNABLE_RETURN_IF_ERROR(parse_act_signature(op_sig, params_sig, &a.prob));
      a.x_stride = 2 * a.prob.d;
      a.out_stride = a.prob.d;
      TUNABLE_RETURN_IF_ERROR(validate(a, /*with_pointers=*/false));
      DeviceGuard on_device;
      TUNABLE_RETURN_IF_ERROR(require_cuda(ctx, &on_device));
      return act_op(ctx.impl(), a.prob).tune(a, solution);
    }
    if (op_sig.rfind("RmsNormTunableOp_", 0) != 0 && op_sig.rfind("FusedAddRmsNormTunableOp_", 0) != 0)
      return Status(StatusCode::kParseError,
                    fmt::format("'{}' is not a fused-op signature (RmsNormTunableOp_, "
                                "FusedAddRmsNormTunableOp_ or ActAndMulTunableOp_)", op_sig));
    NormArgs a;
    TUNABLE_RETURN_IF_ERROR(parse_norm_signature(op_sig, params_sig, &a.prob));
    a.x_stride = a.residual_stride = a.out_stride = a.prob.hidden;
    TUNABLE_RETURN_IF_ERROR(validate(a, /*with_pointers=*/false));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(require_cuda(ctx, &on_device));
    return norm_op(ctx.impl(), a.prob).tune(a, solution);
  });
}

}  // namespace tunable

namespace tunable {
namespace {

// The problem's arguments as a dense call would give them (no pointers), validated as the op would.
Status problem_args(const FusedOpProblem& p, NormArgs* norm, ActArgs* act, bool* is_act) {
  *is_act = p.op == FusedOp::kActAndMul;
  if (*is_act) {
    act->prob = ActProblem{p.dtype, p.activation, p.fp8, p.rows, p.hidden};
    act->x_stride = 2 * p.hidden;
    act->out_stride = p.hidden;
    return validate(*act, /*with_pointers=*/false);
  }
  norm->prob = NormProblem{p.op == FusedOp::kFusedAddRmsNorm, p.dtype, p.convention, p.fp8, p.rows, p.hidden};
  norm->x_stride = norm->residual_stride = norm->out_stride = p.hidden;
  return validate(*norm, /*with_pointers=*/false);
}

}  // namespace

Status fused_op_signatures(const FusedOpProblem& problem, std::string* op_sig, std::string* params_sig) {
  return guarded("fused_op_signatures", [&] {
    if (op_sig == nullptr || params_sig == nullptr)
      return Status(StatusCode::kInvalidArgument, "fused_op_signatures: null output");
    NormArgs n;
    ActArgs a;
    bool is_act = false;
    TUNABLE_RETURN_IF_ERROR(problem_args(problem, &n, &a, &is_act));
    *op_sig = is_act ? op_signature(a.prob) : op_signature(n.prob);
    *params_sig = is_act ? params_signature(a.prob) : params_signature(n.prob);
    return Status::ok();
  });
}

Status fused_op_default_configuration(Context& ctx, const FusedOpProblem& problem, std::string* name) {
  return guarded("fused_op_default_configuration", [&] {
    if (name == nullptr) return Status(StatusCode::kInvalidArgument, "fused_op_default_configuration: null output");
    NormArgs n;
    ActArgs a;
    bool is_act = false;
    TUNABLE_RETURN_IF_ERROR(problem_args(problem, &n, &a, &is_act));
    DeviceGuard on_device;  // Default's choice depends on the device (clusters on sm_90)
    TUNABLE_RETURN_IF_ERROR(require_cuda(ctx, &on_device));
    *name = is_act ? config_name(default_here(a)) : config_name(default_here(n));
    return Status::ok();
  });
}

}  // namespace tunable
