// Public GEMM entry points: pick the device's op, then lookup -> tune -> dispatch.
#include "tunable/gemm.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "cuda/cuda_util.hpp"
#include "gemm/cpu/cpu_gemm.hpp"
#include "gemm/cuda/cuda_gemm.hpp"

namespace tunable {
namespace {

// Everything op_signature() encodes, packed into an integer (the GEMM family's key space).
std::int64_t op_key(const GemmDesc& d) {
  return (std::int64_t{1} << 40) | (static_cast<std::int64_t>(b_type(d)) << 32) | (static_cast<std::int64_t>(d.op) << 24) |
         (static_cast<std::int64_t>(d.dtype) << 16) | (static_cast<std::int64_t>(d.out_dtype) << 8) |
         (d.transa == Transpose::kT ? 2 : 0) | (d.transb == Transpose::kT ? 1 : 0);
}

Status gemm_op(Context& ctx, const GemmDesc& d, TunableOp<GemmArgs>** op) {
  ContextImpl& c = ctx.impl();
  // Hot path: the op exists; its hooks (providers, handles) were built once.
  const std::int64_t key = op_key(d);
  if ((*op = c.find_op<TunableOp<GemmArgs>>(key)) != nullptr) return Status::ok();
  const std::string sig = op_signature(d);
  OpHooks<GemmArgs> hooks;
  hooks.op_signature = sig;
  hooks.key = gemm_key;
  hooks.params_signature = [](const GemmArgs& a) { return params_signature(a.desc); };
  hooks.neighbours = gemm_neighbours;
  if (c.device().kind == DeviceKind::kCpu) {
    TUNABLE_RETURN_IF_ERROR(cpu_supports(d));
    hooks.default_solution = cpu_default_solution();
    hooks.providers = {cpu_reference_provider(), cpu_blocked_provider(), openblas_provider()};
    hooks.make_workload = make_cpu_gemm_workload;
  } else {
    TUNABLE_RETURN_IF_ERROR(cuda_gemm_hooks(c, d, &hooks));
  }
  *op = &c.op<TunableOp<GemmArgs>>(hooks.op_signature, key, [&] {
    return std::make_unique<TunableOp<GemmArgs>>(c, std::move(hooks));
  });
  return Status::ok();
}

}  // namespace

Status gemm(Context& ctx, const GemmDesc& desc, const GemmOperands& operands, Stream stream) {
  return guarded("gemm", [&] {
    TUNABLE_RETURN_IF_ERROR(validate(desc, operands));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(on_device.use(ctx.device()));
    TunableOp<GemmArgs>* op = nullptr;
    TUNABLE_RETURN_IF_ERROR(gemm_op(ctx, desc, &op));
    return op->run(GemmArgs{desc, operands}, stream);
  });
}

Status gemm_if_tuned(Context& ctx, const GemmDesc& desc, const GemmOperands& operands, Stream stream,
                     void* workspace, std::size_t workspace_bytes, bool* served) {
  if (served == nullptr) return Status(StatusCode::kInvalidArgument, "gemm_if_tuned: null `served`");
  *served = false;
  return guarded("gemm_if_tuned", [&] {
    if (ctx.device().kind != DeviceKind::kCuda)
      return Status(StatusCode::kInvalidArgument, "gemm_if_tuned serves CUDA contexts only");
    TUNABLE_RETURN_IF_ERROR(validate(desc, operands));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(on_device.use(ctx.device()));
    TunableOp<GemmArgs>* op = nullptr;
    TUNABLE_RETURN_IF_ERROR(gemm_op(ctx, desc, &op));
    return op->run_if_result(GemmArgs{desc, operands}, stream, workspace, workspace_bytes, served);
  });
}

Status tune_gemm(Context& ctx, const GemmDesc& desc, std::string* solution) {
  return guarded("tune_gemm", [&] {
    TUNABLE_RETURN_IF_ERROR(validate(desc));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(on_device.use(ctx.device()));
    TunableOp<GemmArgs>* op = nullptr;
    TUNABLE_RETURN_IF_ERROR(gemm_op(ctx, desc, &op));
    return op->tune(GemmArgs{desc, GemmOperands{}}, solution);
  });
}

Status gemm_candidates(Context& ctx, const GemmDesc& desc, std::vector<GemmCandidate>* out,
                       const std::string& provider) {
  return guarded("gemm_candidates", [&] {
    if (out == nullptr) return Status(StatusCode::kInvalidArgument, "gemm_candidates: null output");
    out->clear();
    TUNABLE_RETURN_IF_ERROR(validate(desc));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(on_device.use(ctx.device()));
    TunableOp<GemmArgs>* op = nullptr;
    TUNABLE_RETURN_IF_ERROR(gemm_op(ctx, desc, &op));
    std::vector<SolutionPtr<GemmArgs>> sols;
    std::vector<std::string> providers;
    TUNABLE_RETURN_IF_ERROR(op->candidates(GemmArgs{desc, GemmOperands{}}, &sols, &providers));
    for (std::size_t i = 0; i < sols.size(); ++i)
      if (provider.empty() || providers[i] == provider) out->push_back({sols[i]->name(), providers[i]});
    return Status::ok();
  });
}

Status gemm_with_solution(Context& ctx, const GemmDesc& desc, const std::string& solution,
                          const GemmOperands& operands, Stream stream) {
  return guarded("gemm_with_solution", [&] {
    TUNABLE_RETURN_IF_ERROR(validate(desc, operands));
    DeviceGuard on_device;
    TUNABLE_RETURN_IF_ERROR(on_device.use(ctx.device()));
    TunableOp<GemmArgs>* op = nullptr;
    TUNABLE_RETURN_IF_ERROR(gemm_op(ctx, desc, &op));
    return op->run_named(solution, GemmArgs{desc, operands}, stream);
  });
}

}  // namespace tunable
