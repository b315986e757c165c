// Fused-op benchmark: the tuned kernels of tunable::rms_norm / fused_add_rms_norm / act_and_mul on
// the shapes of the H100 PyTorch anchors (residual add + RMSNorm [rows, hidden], SiLU-and-mul
// [rows, 2 hidden]) plus more rows, each timed two ways on rotated inputs (> 2x L2 in total):
//   graph: N calls captured in a CUDA graph, replays timed with events, per-call median;
//   b2b:   back-to-back calls on a primed queue (CallTimer: a sleep kernel before every 32 calls,
//          an event pair around every 8), per-call median of the groups; the torch script times
//          its back-to-back numbers the same way. Without --torch the "beats compile" column
//          compares this with the anchors' do_bench time (an event pair per call, which adds ~2.5 us).
// Against: the copy-bandwidth floor (bytes moved / device-to-device copy bandwidth measured in the
// same run, read + write) and an empty kernel timed the same two ways (for rows <= 64, whose target
// is a ratio to it, next to each row in alternating order) together with a kernel that moves the op's
// bytes and nothing else (reference_kernels.cu), so a ratio miss the bytes force is told apart from
// one the op's own work causes. Writes fused_ops.csv,
// fused_ops.json and fused_ops.md to --out (and the tuning results file tunable_results0.csv).
//
//   tunable_fused_bench --out DIR [--ops add_rmsnorm,silu_and_mul] [--dtype bf16] [--quick]
//                       [--anchors shared/anchors/h100-torch-fused-ops.txt] [--torch torch.json]
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "graph_timing.hpp"
#include "tunable/context.hpp"
#include "tunable/measure.hpp"
#include "tunable/ops.hpp"

namespace tunable::bench {

cudaError_t launch_empty_kernel(cudaStream_t stream, bool pdl);
cudaError_t launch_same_bytes(const void* in, void* out, std::int64_t n_out, int ratio, int threads, int items,
                              cudaStream_t stream);

namespace {

using json = nlohmann::json;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void check(const Status& s, const char* what) {
  if (!s.is_ok()) throw std::runtime_error(fmt::format("{}: {}", what, s.to_string()));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct OpSpec {
  std::string name;
  bool act = false;
  bool fused = false;
  NormWeight weight = NormWeight::kLlama;
  Activation activation = Activation::kSilu;
  Fp8Scaling fp8 = Fp8Scaling::kNone;
};

const std::vector<OpSpec>& all_ops() {
  static const std::vector<OpSpec> ops = {
      {"rmsnorm", false, false},
      {"add_rmsnorm", false, true},
      {"add_rmsnorm_gemma", false, true, NormWeight::kGemma},
      {"add_rmsnorm_fp8dyn", false, true, NormWeight::kLlama, Activation::kSilu, Fp8Scaling::kDynamicPerToken},
      {"silu_and_mul", true, false, NormWeight::kLlama, Activation::kSilu},
      {"gelu_and_mul", true, false, NormWeight::kLlama, Activation::kGeluTanh},
      {"silu_and_mul_fp8", true, false, NormWeight::kLlama, Activation::kSilu, Fp8Scaling::kStatic},
  };
  return ops;
}

/// Columns of the op's input as the anchors write them: hidden, or 2 d for act-and-mul.
std::int64_t input_cols(const OpSpec& op, std::int64_t hidden) { return op.act ? 2 * hidden : hidden; }

/// Bytes one call has to move (every input read once, every output written once).
double bytes_moved(const OpSpec& op, DataType t, std::int64_t rows, std::int64_t hidden) {
  const double es = static_cast<double>(size_of(t)), n = static_cast<double>(rows) * hidden;
  const double oes = op.fp8 == Fp8Scaling::kNone ? es : 1.0;
  if (op.act) return n * 2 * es + n * oes;  // [gate | up] in, d columns out
  double b = n * es + hidden * es + n * oes;  // x, weight, out
  if (op.fused) b += 2 * n * es;              // residual read and written
  if (op.fp8 == Fp8Scaling::kDynamicPerToken) b += rows * 4.0;
  return b;
}

/// Rotated device copies of one problem's operands and the call that runs copy i.
class Instance {
 public:
  Instance(const OpSpec& op, DataType t, std::int64_t rows, std::int64_t hidden, std::size_t target_bytes)
      : op_(op), t_(t), rows_(rows), hidden_(hidden) {
    const std::size_t es = size_of(t), oes = op.fp8 == Fp8Scaling::kNone ? es : 1;
    const std::size_t n = static_cast<std::size_t>(rows) * hidden;
    auto take = [&](std::size_t bytes) {
      const std::size_t at = per_copy_;
      per_copy_ += (bytes + 255) / 256 * 256;
      return at;
    };
    if (op.act) {
      o_x_ = take(2 * n * es);
      o_out_ = take(n * oes);
    } else {
      o_x_ = take(n * es);
      o_res_ = take(op.fused ? n * es : 0);
      o_w_ = take(hidden * es);
      o_out_ = take(n * oes);
      o_tok_ = take(rows * sizeof(float));
    }
    copies_ = std::max<std::size_t>(2, std::min<std::size_t>(4096, target_bytes / per_copy_ + 1));
    data_.allocate(per_copy_ * copies_ + 256);
    o_scale_ = per_copy_ * copies_;
    // Every byte random: the inputs, and outputs that are overwritten anyway.
    check(fill_random(data_.get(), t, per_copy_ * copies_ / size_of(t), 42, 1.0f, nullptr), "fill_random");
    const float scale = 1.0f / 128.0f;
    check(cudaMemcpy(data_.as<char>() + o_scale_, &scale, sizeof scale, cudaMemcpyHostToDevice), "scale");
    check(cudaDeviceSynchronize(), "fill");
  }

  std::size_t copies() const { return copies_; }

  Status call(Context& ctx, std::size_t i, cudaStream_t s) const {
    char* base = data_.as<char>() + (i % copies_) * per_copy_;
    const float* scale = reinterpret_cast<const float*>(data_.as<char>() + o_scale_);
    if (op_.act) {
      return act_and_mul(ctx, base + o_out_, base + o_x_, rows_, hidden_, 2 * hidden_, hidden_, t_,
                         op_.activation, s, Fp8Output{op_.fp8, scale, nullptr});
    }
    const Fp8Output fp8{op_.fp8, scale, reinterpret_cast<float*>(base + o_tok_)};
    if (op_.fused) {
      return fused_add_rms_norm(ctx, base + o_out_, base + o_x_, base + o_res_, base + o_w_, rows_, hidden_,
                                hidden_, hidden_, hidden_, 1e-6f, t_, op_.weight, s, fp8);
    }
    return rms_norm(ctx, base + o_out_, base + o_x_, base + o_w_, rows_, hidden_, hidden_, hidden_, 1e-6f, t_,
                    op_.weight, s, fp8);
  }

  /// The tuned (or Default) candidate serving this problem, as the results store names it.
  std::string solution(Context& ctx) const {
    FusedOpProblem p;
    p.op = op_.act ? FusedOp::kActAndMul : op_.fused ? FusedOp::kFusedAddRmsNorm : FusedOp::kRmsNorm;
    p.dtype = t_;
    p.rows = rows_;
    p.hidden = hidden_;
    p.convention = op_.weight;
    p.activation = op_.activation;
    p.fp8 = op_.fp8;
    std::string op_sig, params_sig, fallback;
    check(fused_op_signatures(p, &op_sig, &params_sig), "signatures");
    check(fused_op_default_configuration(ctx, p, &fallback), "Default's configuration");
    for (const ResultRecord& r : ctx.results())
      if (r.op_signature == op_sig && r.params_signature == params_sig)
        return r.solution == "Default" ? "Default=" + fallback : r.solution;
    return "Default=" + fallback;
  }

 private:
  OpSpec op_;
  DataType t_;
  std::int64_t rows_, hidden_;
  std::size_t per_copy_ = 0, copies_ = 1;
  std::size_t o_x_ = 0, o_res_ = 0, o_w_ = 0, o_out_ = 0, o_tok_ = 0, o_scale_ = 0;
  DeviceMemory data_;
};

using Call = std::function<void(std::size_t)>;

/// The op's bytes moved by a kernel that does nothing else (launch_same_bytes), on rotated copies
/// like the op's: reads x (and the residual), writes the output (and the residual); the norm weight,
/// read once per row from L1 / L2, is left out: the op moves at least these bytes. Available where the
/// read bytes are 1, 2 or 4 times the written ones (not the FP8 outputs of a norm).
class SameBytes {
 public:
  SameBytes(const OpSpec& op, DataType t, std::int64_t rows, std::int64_t hidden, std::size_t target_bytes) {
    const std::size_t es = size_of(t), oes = op.fp8 == Fp8Scaling::kNone ? es : 1;
    const std::size_t n = static_cast<std::size_t>(rows) * hidden;
    const std::size_t in = op.act ? 2 * n * es : (op.fused ? 2 : 1) * n * es;
    const std::size_t out = op.act ? n * oes : n * oes + (op.fused ? n * es : 0);
    if (out == 0 || out % 16 != 0 || in % out != 0) return;
    ratio_ = static_cast<int>(in / out);
    if (ratio_ != 1 && ratio_ != 2 && ratio_ != 4) {
      ratio_ = 0;
      return;
    }
    n_out_ = static_cast<std::int64_t>(out / 16);
    o_out_ = (in + 255) / 256 * 256;
    per_copy_ = o_out_ + (out + 255) / 256 * 256;
    // Uncapped below 2^16 copies: a rotation barely above the L2 would flatter the reference.
    copies_ = std::max<std::size_t>(2, std::min<std::size_t>(65536, target_bytes / per_copy_ + 1));
    data_.allocate(per_copy_ * copies_);
    check(fill_random(data_.get(), DataType::kF32, per_copy_ * copies_ / 4, 7, 1.0f, nullptr), "fill_random");
    check(cudaDeviceSynchronize(), "fill");
  }

  bool available() const { return ratio_ > 0; }
  std::size_t copies() const { return copies_; }

  /// The fastest launch shape in graphs of `calls` calls; the calls of `call` use it from then on.
  std::string pick(cudaStream_t s, std::size_t calls, int reps) {
    double best = INFINITY;
    for (const auto& [threads, items] : std::vector<std::pair<int, int>>{{128, 1}, {256, 1}, {256, 2}, {256, 4},
                                                                         {512, 1}, {512, 2}, {1024, 1}}) {
      threads_ = threads, items_ = items;
      const double us = graph_us(s, calls, [&](std::size_t i) { call(i, s); }, reps);
      if (us < best) best = us, best_threads_ = threads, best_items_ = items;
    }
    threads_ = best_threads_, items_ = best_items_;
    verify(s);
    return fmt::format("t{}_i{}", threads_, items_);
  }

  /// The picked shape writes every output vector as the XOR of its inputs (checked on copy 0, its
  /// output poisoned first): a reference that skipped bytes would flatter the floor it stands for.
  void verify(cudaStream_t s) const {
    const std::size_t n_out = static_cast<std::size_t>(n_out_);
    std::vector<std::uint32_t> in(4 * n_out * ratio_), out(4 * n_out);
    check(cudaMemsetAsync(data_.as<char>() + o_out_, 0xff, 16 * n_out, s), "poisoning the same-bytes output");
    call(0, s);
    check(cudaMemcpyAsync(in.data(), data_.get(), in.size() * 4, cudaMemcpyDeviceToHost, s), "same-bytes input");
    check(cudaMemcpyAsync(out.data(), data_.as<char>() + o_out_, out.size() * 4, cudaMemcpyDeviceToHost, s),
          "same-bytes output");
    check(cudaStreamSynchronize(s), "same-bytes check");
    for (std::size_t j = 0; j < n_out; ++j) {
      for (int w = 0; w < 4; ++w) {
        std::uint32_t want = 0;
        for (int k = 0; k < ratio_; ++k) want ^= in[(k * n_out + j) * 4 + w];
        if (out[j * 4 + w] != want)
          throw std::runtime_error(fmt::format("same-bytes kernel t{}_i{}: output vector {} of {} is wrong",
                                               threads_, items_, j, n_out));
      }
    }
  }

  void call(std::size_t i, cudaStream_t s) const {
    char* base = data_.as<char>() + (i % copies_) * per_copy_;
    check(launch_same_bytes(base, base + o_out_, n_out_, ratio_, threads_, items_, s),
          "same-bytes kernel");
  }

 private:
  int ratio_ = 0, threads_ = 256, items_ = 1, best_threads_ = 256, best_items_ = 1;
  std::int64_t n_out_ = 0;
  std::size_t o_out_ = 0, per_copy_ = 0, copies_ = 1;
  DeviceMemory data_;
};

/// Per-call time of `iters` back-to-back launches (CallTimer: primed queue, events every 8 calls); median.
double b2b_us(cudaStream_t s, std::size_t iters, const Call& call) {
  for (std::size_t i = 0; i < std::min<std::size_t>(iters, 8); ++i) call(i);  // warm-up
  CallTimer timer(s);
  std::vector<double> ms;
  check(timer.time_calls(static_cast<int>(iters),
                         [&](int i) {
                           call(static_cast<std::size_t>(i));
                           return Status::ok();
                         },
                         &ms),
        "timing");
  for (double& v : ms) v *= 1e3;
  return median(ms);
}

struct Reference {
  double eager_us = NAN, compiled_us = NAN;                  // anchors file (do_bench)
  double torch_eager_graph_us = NAN, torch_compiled_graph_us = NAN;  // --torch JSON
  double torch_eager_b2b_us = NAN, torch_compiled_b2b_us = NAN;
};

using RefKey = std::tuple<std::string, std::string, std::int64_t, std::int64_t>;  // op, dtype, rows, input cols

/// "add_rmsnorm bf16 [1,4096] eager 123.9us compiled 5.9us floor 0.01us"
void read_anchors(const std::string& path, std::map<RefKey, Reference>* out) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read anchors file " + path);
  const std::regex re(R"((\w+) (\w+) \[(\d+),(\d+)\] eager ([\d.]+)us compiled ([\d.]+)us)");
  std::string line;
  std::smatch m;
  while (std::getline(f, line)) {
    if (!std::regex_search(line, m, re)) continue;
    Reference& r = (*out)[RefKey{m[1], m[2], std::stoll(m[3]), std::stoll(m[4])}];
    r.eager_us = std::stod(m[5]);
    r.compiled_us = std::stod(m[6]);
  }
}

/// The JSON of bench/fused_ops_torch.py: {"rows": [{"op", "rows", "cols", "eager_graph_us", ...}]}.
void read_torch(const std::string& path, std::map<RefKey, Reference>* out) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read torch results " + path);
  const json j = json::parse(f);
  for (const json& row : j.at("rows")) {
    Reference& r = (*out)[RefKey{row.at("op").get<std::string>(), row.at("dtype").get<std::string>(),
                                 row.at("rows").get<std::int64_t>(), row.at("cols").get<std::int64_t>()}];
    r.torch_eager_graph_us = row.value("eager_graph_us", NAN);
    r.torch_compiled_graph_us = row.value("compiled_graph_us", NAN);
    r.torch_eager_b2b_us = row.value("eager_b2b_us", NAN);
    r.torch_compiled_b2b_us = row.value("compiled_b2b_us", NAN);
  }
}

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

struct Args {
  std::string out;
  std::string ops = "add_rmsnorm,silu_and_mul";
  std::string dtype = "bf16";
  std::vector<std::int64_t> rows = {1, 16, 64, 128, 1024, 2048, 4096, 8192};
  std::vector<std::int64_t> hidden = {4096, 8192, 16384};
  std::string anchors, torch;
  int reps = 20;
  int b2b_iters = 200;
  std::size_t graph_calls = 100;
  int verbose = 0;
  bool quick = false;
  bool untuned = false;
};

int run(const Args& args) {
  std::filesystem::create_directories(args.out);
  const std::optional<DataType> dtype = parse_data_type(args.dtype);
  if (!dtype) throw std::runtime_error("unknown dtype " + args.dtype);
  std::vector<OpSpec> ops;
  for (const std::string& name : split_csv(args.ops)) {
    auto it = std::find_if(all_ops().begin(), all_ops().end(), [&](const OpSpec& o) { return o.name == name; });
    if (it == all_ops().end()) throw std::runtime_error("unknown op " + name);
    ops.push_back(*it);
  }
  std::vector<std::int64_t> rows = args.rows, hidden = args.hidden;
  if (args.quick) {
    rows = {1, 64, 4096};
    hidden = {4096};
  }
  std::map<RefKey, Reference> refs;
  if (!args.anchors.empty()) read_anchors(args.anchors, &refs);
  if (!args.torch.empty()) read_torch(args.torch, &refs);

  check(cudaSetDevice(0), "cudaSetDevice");
  DeviceInfo prop;
  check(device_info(0, &prop), "device");
  const std::size_t l2 = prop.l2_bytes;
  OwnedStream stream;
  cudaStream_t s = stream.get();

  Options opt;
  opt.enabled = !args.untuned;
  opt.tuning = true;
  opt.filename = (std::filesystem::path(args.out) / "tunable_results.csv").string();
  opt.verbose = args.verbose;
  Context ctx(Device::cuda(0), opt);

  double bw = 0;
  check(measure_copy_bandwidth(s, &bw), "copy bandwidth");
  const std::size_t empty_calls = 1000;
  const Call empty = [&](std::size_t) { check(launch_empty_kernel(s, false), "empty kernel"); };
  const double empty_graph = graph_us(s, empty_calls, empty, args.reps);
  const double empty_b2b = b2b_us(s, empty_calls, empty);
  // For reference: an empty kernel launched the way the fused ops launch (PDL where supported).
  const Call empty_pdl = [&](std::size_t) { check(launch_empty_kernel(s, true), "empty kernel"); };
  const double empty_pdl_graph = graph_us(s, empty_calls, empty_pdl, args.reps);
  fmt::print("device {} ({} SMs, L2 {} MiB): copy bandwidth {:.3f} TB/s, empty kernel {:.2f} us graph, "
             "{:.2f} us back-to-back ({:.2f} us graph with PDL)\n",
             prop.name, prop.sm_count, l2 >> 20, bw / 1e12, empty_graph, empty_b2b, empty_pdl_graph);

  json rows_json = json::array();
  std::ofstream csv(std::filesystem::path(args.out) / "fused_ops.csv");
  csv << "op,dtype,rows,hidden,cols,solution,bytes,floor_us,graph_us,b2b_us,eff_graph,eff_b2b,"
         "graph_over_empty,copies,anchor_compiled_us,torch_compiled_graph_us,speedup_vs_compiled,b2b_over_empty,"
         "empty_graph_us,empty_b2b_us,copy_shape,copy_graph_us,copy_b2b_us\n";
  std::string md = fmt::format(
      "# Fused ops on {}\n\ncopy bandwidth {:.3f} TB/s; empty kernel {:.2f} us (graph), {:.2f} us "
      "(back-to-back), {:.2f} us (graph, launched with PDL as the fused ops are); dtype {}. Rows <= 64: the "
      "row and the empty kernel timed next to each other, six rounds, one per order of the three, "
      "medians (the ratios and targets use that empty kernel, whose times are in fused_ops.csv / .json); "
      "with them a kernel moving the op's bytes and nothing else (a miss shows its ratio as `copy`)\n\n"
      "| op | [rows, cols] | solution | graph us | b2b us | floor us | eff (graph) | / empty (graph) | "
      "/ empty (b2b) | torch.compile us | speedup | targets |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      prop.name, bw / 1e12, empty_graph, empty_b2b, empty_pdl_graph, short_name(*dtype));

  for (const OpSpec& op : ops) {
    for (std::int64_t h : hidden) {
      for (std::int64_t r : rows) {
        const Instance inst(op, *dtype, r, h, 2 * l2);
        // One uncaptured call tunes the problem (when enabled); then both timings use the result.
        check(inst.call(ctx, 0, s), op.name.c_str());
        check(cudaStreamSynchronize(s), "tuning call");
        const Call call = [&](std::size_t i) { check(inst.call(ctx, i, s), op.name.c_str()); };
        // Whole rotations, and enough calls that the graph's own launch is amortized (with 2-5
        // copies per graph it added ~1 us per call at 1024+ rows).
        const std::size_t per_graph = inst.copies() * ((args.graph_calls + inst.copies() - 1) / inst.copies());
        const std::size_t b2b_iters = std::max<std::size_t>(args.b2b_iters, inst.copies());
        double g = 0, b = 0;
        // The <= 64-row target compares two few-us times, so the empty kernel is timed next to each such
        // row, in six rounds that change which goes first (medians), not once at the start: minutes
        // apart, clocks and the launch path drift by a few percent, the size of the margins here.
        double eg = empty_graph, eb = empty_b2b;
        // With them, the op's bytes moved by a kernel that does nothing else (its fastest launch shape),
        // timed the same ways in the same rounds: what moving these bytes alone takes here.
        double cg = NAN, cb = NAN;
        std::string copy_shape;
        if (r <= 64) {
          SameBytes copy(op, *dtype, r, h, 2 * l2);
          const std::size_t copy_graph = copy.copies() * ((args.graph_calls + copy.copies() - 1) / copy.copies());
          if (copy.available()) copy_shape = copy.pick(s, copy_graph, args.reps);
          const Call copy_call = [&](std::size_t i) { copy.call(i, s); };
          std::vector<double> gs, bs, egs, ebs, cgs, cbs;
          // Six rounds, one per order of the three (row 0, empty kernel 1, copy 2): each of them goes before
          // each other one in three rounds of six.
          constexpr int kOrders[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}, {0, 2, 1}, {1, 0, 2}};
          for (const auto& order : kOrders) {
            for (const int which : order) {
              if (which == 0) {
                gs.push_back(graph_us(s, per_graph, call, args.reps));
                bs.push_back(b2b_us(s, b2b_iters, call));
              } else if (which == 1) {
                egs.push_back(graph_us(s, empty_calls, empty, args.reps));
                ebs.push_back(b2b_us(s, empty_calls, empty));
              } else if (copy.available()) {
                cgs.push_back(graph_us(s, copy_graph, copy_call, args.reps));
                cbs.push_back(b2b_us(s, std::max<std::size_t>(args.b2b_iters, copy.copies()), copy_call));
              }
            }
          }
          g = median(gs), b = median(bs), eg = median(egs), eb = median(ebs);
          if (copy.available()) cg = median(cgs), cb = median(cbs);
        } else {
          g = graph_us(s, per_graph, call, args.reps);
          b = b2b_us(s, b2b_iters, call);
        }
        // Few rows only: the same op on two alternating copies that stay in L2, as in decode where
        // the previous kernel has just written x. Reported next to the rotated (DRAM) time, never
        // instead of it: it separates the DRAM round trip from launch and reduction costs.
        double g_hot = NAN;
        if (r <= 128) {
          const Instance hot(op, *dtype, r, h, 0);
          check(hot.call(ctx, 0, s), op.name.c_str());
          const Call hot_call = [&](std::size_t i) { check(hot.call(ctx, i, s), op.name.c_str()); };
          g_hot = graph_us(s, empty_calls, hot_call, args.reps);
        }
        const double bytes = bytes_moved(op, *dtype, r, h);
        const double floor = bytes / bw * 1e6;
        const std::int64_t cols = input_cols(op, h);
        // Only references of this dtype: fp16 times are not compared with the bf16 anchors.
        const RefKey key{op.name, short_name(*dtype), r, cols};
        const Reference ref = refs.count(key) ? refs[key] : Reference{};
        // torch.compile baseline: graph-timed from --torch when given, else the anchors' number.
        const double compiled = std::isfinite(ref.torch_compiled_graph_us) ? ref.torch_compiled_graph_us
                                                                             : ref.compiled_us;
        const double ours_for_compiled = std::isfinite(ref.torch_compiled_graph_us) ? g : b;
        const double speedup = compiled / ours_for_compiled;
        const std::string sol = inst.solution(ctx);
        std::string targets;
        if (r >= 1024) targets += floor / g >= 0.85 ? "eff>=0.85 ok " : "eff>=0.85 MISS ";
        // The empty-kernel target in both timings, each against the empty kernel timed the same way.
        if (r <= 64) {
          // A miss says what moving the bytes alone took (the same-bytes kernel over the empty kernel).
          const auto copy_note = [&](double c, double e) {
            return std::isfinite(c) ? fmt::format(" (copy {:.2f}x)", c / e) : std::string();
          };
          targets += g <= 1.5 * eg ? "<=1.5x empty graph ok, " : "<=1.5x empty graph MISS" + copy_note(cg, eg) + ", ";
          targets += b <= 1.5 * eb ? "b2b ok " : "b2b MISS" + copy_note(cb, eb) + " ";
        }
        if (std::isfinite(speedup)) targets += speedup > 1 ? "beats compile ok" : "beats compile MISS";
        fmt::print("{:20s} [{:5d},{:5d}] {:28s} graph {:8.2f} us  b2b {:8.2f} us  L2-hot graph {:8.2f} us  "
                   "floor {:8.2f} us  eff {:.2f}  /empty {:.2f} graph {:.2f} b2b  {}\n",
                   op.name, r, cols, sol, g, b, g_hot, floor, floor / g, g / eg, b / eb, targets);
        csv << fmt::format("{},{},{},{},{},{},{:.0f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{},{},{:.3f},{:.3f},{:.3f},{},{},{}\n", op.name,
                           short_name(*dtype), r, h, cols, sol, bytes, floor, g, b, floor / g, floor / b,
                           g / eg, inst.copies(), std::isfinite(ref.compiled_us) ? fmt::format("{:.2f}", ref.compiled_us) : "",
                           std::isfinite(ref.torch_compiled_graph_us) ? fmt::format("{:.2f}", ref.torch_compiled_graph_us) : "",
                           std::isfinite(speedup) ? fmt::format("{:.3f}", speedup) : "", b / eb, eg, eb, copy_shape,
                           std::isfinite(cg) ? fmt::format("{:.3f}", cg) : "", std::isfinite(cb) ? fmt::format("{:.3f}", cb) : "");
        md += fmt::format("| {} | [{}, {}] | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {} |\n",
                          op.name, r, cols, sol, g, b, floor, floor / g, g / eg, b / eb,
                          std::isfinite(compiled) ? fmt::format("{:.2f}", compiled) : "-",
                          std::isfinite(speedup) ? fmt::format("{:.2f}x", speedup) : "-", targets);
        rows_json.push_back({{"op", op.name}, {"dtype", short_name(*dtype)}, {"rows", r}, {"hidden", h},
                             {"cols", cols}, {"solution", sol}, {"bytes", bytes}, {"floor_us", floor},
                             {"graph_us", g}, {"b2b_us", b}, {"l2_hot_graph_us", num(g_hot)},
                             {"eff_graph", floor / g}, {"eff_b2b", floor / b},
                             {"graph_over_empty", g / eg}, {"b2b_over_empty", b / eb},
                             {"empty_graph_us", eg}, {"empty_b2b_us", eb},
                             {"copy_shape", copy_shape}, {"copy_graph_us", num(cg)}, {"copy_b2b_us", num(cb)},
                             {"copies", inst.copies()},
                             {"anchor_eager_us", num(ref.eager_us)}, {"anchor_compiled_us", num(ref.compiled_us)},
                             {"torch_eager_graph_us", num(ref.torch_eager_graph_us)},
                             {"torch_compiled_graph_us", num(ref.torch_compiled_graph_us)},
                             {"torch_eager_b2b_us", num(ref.torch_eager_b2b_us)},
                             {"torch_compiled_b2b_us", num(ref.torch_compiled_b2b_us)},
                             {"speedup_vs_compiled", num(speedup)}});
      }
    }
  }
  const json doc = {{"device", prop.name},
                    {"sm_count", prop.sm_count},
                    {"l2_bytes", l2},
                    {"copy_bandwidth_bytes_per_s", bw},
                    {"empty_kernel_graph_us", empty_graph},
                    {"empty_kernel_b2b_us", empty_b2b},
                    {"empty_kernel_pdl_graph_us", empty_pdl_graph},
                    {"tuned", !args.untuned},
                    {"results_file", ctx.results_path()},
                    {"rows", rows_json}};
  std::ofstream(std::filesystem::path(args.out) / "fused_ops.json") << doc.dump(2) << "\n";
  std::ofstream(std::filesystem::path(args.out) / "fused_ops.md") << md;
  fmt::print("\n{}\nwrote fused_ops.csv, fused_ops.json, fused_ops.md to {}\n", md, args.out);
  return 0;
}

}  // namespace
}  // namespace tunable::bench

int main(int argc, char** argv) {
  tunable::bench::Args a;
  CLI::App app{"tunable_fused_bench: fused LLM ops (add+RMSNorm, act-and-mul) vs the copy floor"};
  app.add_option("--out", a.out, "output directory (CSV, JSON, markdown, results file)")->required();
  app.add_option("--ops", a.ops,
                 "comma list of rmsnorm, add_rmsnorm, add_rmsnorm_gemma, add_rmsnorm_fp8dyn, "
                 "silu_and_mul, gelu_and_mul, silu_and_mul_fp8")
      ->capture_default_str();
  app.add_option("--dtype", a.dtype, "bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--rows", a.rows, "row counts")->delimiter(',')->capture_default_str();
  app.add_option("--hidden", a.hidden, "hidden sizes (act-and-mul: d, input has 2 d columns)")
      ->delimiter(',')->capture_default_str();
  app.add_option("--anchors", a.anchors, "h100-torch-fused-ops.txt to compare with");
  app.add_option("--torch", a.torch, "JSON written by bench/fused_ops_torch.py to compare with");
  app.add_option("--reps", a.reps, "graph replays per shape")->capture_default_str();
  app.add_option("--b2b-iters", a.b2b_iters, "back-to-back calls per shape (at least the copies)")
      ->capture_default_str();
  app.add_option("--graph-calls", a.graph_calls,
                 "calls per timed graph, rounded up to whole rotations of the input copies")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--verbose", a.verbose, "tuning log level 0-3")->capture_default_str();
  app.add_flag("--quick", a.quick, "rows 1, 64, 4096 at hidden 4096 only");
  app.add_flag("--untuned", a.untuned, "time the Default candidate (context disabled)");
  CLI11_PARSE(app, argc, argv);
  try {
    return tunable::bench::run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tunable_fused_bench: %s\n", e.what());
    return 1;
  }
}
