// The decode engine: weights from a validated model directory onto the GPU, the forward pass over
// the tuning runtime's GEMMs and fused ops and the engine's own kernels, decode steps as CUDA graphs.
//
// Layout on the GPU. q/k/v projections are one weight [(heads + 2 kv_heads) * head_dim, hidden]
// and gate/up one [2 * intermediate, hidden] ([gate; up], so each output row is act_and_mul's
// [gate | up]); every linear layer is the TN GEMM PyTorch's F.linear issues (m = out features,
// n = rows, k = in features), so results files are shared with PyTorch programs tuned through the
// interposer. Activations are row-major [rows, features]. The residual stream stays in one buffer
// that the fused add + RMSNorm updates in place (rounded to the model's dtype after every add, as
// Hugging Face's modules round it).
//
// State between steps lives on the GPU: each sequence's next input id and position, which the
// sampler advances, so a decode step is a fixed sequence of launches that a graph replays with no
// host work but the replay itself.
#include "tunable/engine.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "cuda/cuda_util.hpp"
#include "engine/engine_kernels.hpp"
#include "model/model_dir.hpp"
#include "tunable/context.hpp"
#include "tunable/gemm.hpp"
#include "tunable/measure.hpp"
#include "tunable/ops.hpp"

namespace tunable {
namespace {

using engine::Elem;

constexpr std::size_t kAlign = 256;
/// Staging slots for the small arrays a prefill pass uploads (a few per pass: passes can be
/// enqueued this many uploads ahead of the GPU).
constexpr std::size_t kUploadSlots = 32;
std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Status launch_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return Status(StatusCode::kCudaError, fmt::format("{}: {}", what, cuda_error_text(e)));
}

/// FP8 weights: passes of at most this many rows (decode) run the weight-only GEMM on 16-bit
/// activations, the wo kernels' token tile; larger ones (prefill) quantize the activations (W8A8),
/// where reading the weight once per 8 tokens would cost more than the quantization.
constexpr int kWeightOnlyRows = static_cast<int>(kWeightOnlyTokens);

/// Kernel kinds, for the per-kind breakdown (graphs of one kind's launches alone).
enum Kind : unsigned {
  kGemmKind = 1,
  kAttentionKind = 2,
  kNormKind = 4,
  kActivationKind = 8,
  kOtherKind = 16,  ///< embedding, row gather, token choice
  kQuantKind = 32,  ///< FP8 weights, W8A8 passes: attention and activation outputs, logit rows quantized (the norms do it themselves)
  kAllKinds = 63,
};
const std::pair<Kind, const char*> kKindNames[] = {{kGemmKind, "gemm"},
                                                   {kAttentionKind, "attention"},
                                                   {kNormKind, "norm"},
                                                   {kActivationKind, "activation"},
                                                   {kOtherKind, "embed+sample"},
                                                   {kQuantKind, "quantize"}};

/// A weight matrix [out, in] (row-major, as stored) on the GPU; FP8 weights carry one scale per
/// output row.
struct Linear {
  const void* w = nullptr;
  const float* scales = nullptr;
  const void* bias = nullptr;
  std::int64_t out = 0, in = 0;
};

/// How a linear layer's GEMM meets the residual stream. FP8 weights carry the layers' norm weights
/// folded into the GEMMs after them (each column of W times the norm's weight, at load), so a
/// decode step of at most 8 rows (the weight-only GEMM) runs no norm kernel: the QKV and gate/up
/// GEMMs RMS-normalize their input rows themselves and the O and down GEMMs add into the residual.
enum class LinearMode {
  kPlain,     ///< y = x W^T (+ bias)
  kRmsInput,  ///< y = (x / rms(x)) W^T (+ bias), rms(x) = sqrt(mean(x^2) + eps): weight-only GEMMs only
  kAddTo,     ///< y += x W^T (+ bias)
};

struct Layer {
  Linear qkv, o, gate_up, down;
  const void* attn_norm = nullptr;
  const void* mlp_norm = nullptr;
};

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

/// A captured decode step: the batch, greedy or sampled (the settings themselves are read from
/// device memory), and the kernel kinds it holds.
struct GraphKey {
  int rows;
  bool sampled;
  unsigned kinds;
  bool operator<(const GraphKey& o) const {
    return std::tie(rows, sampled, kinds) < std::tie(o.rows, o.sampled, o.kinds);
  }
};

}  // namespace

class Engine::Impl {
 public:
  ~Impl() {
    for (auto& [k, g] : graphs_) (void)cudaGraphExecDestroy(g);
    if (stream_) (void)cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    for (cudaEvent_t e : upload_ready_) (void)cudaEventDestroy(e);
    if (host_) (void)cudaFreeHost(host_);
    if (stream_) (void)cudaStreamDestroy(stream_);
  }

  Status load(const std::string& dir, const EngineOptions& o);
  int device() const { return opts_.device; }
  Status generate(const std::vector<std::vector<std::int32_t>>& prompts, const GenerateParams& params,
                  const std::function<bool(const std::vector<std::int32_t>&)>& on_step, GenerateStats* stats);
  Status prompt_logits(const std::vector<std::int32_t>& prompt, std::vector<float>* logits);
  Status benchmark(int batch, int prompt_len, int new_tokens, int runs, Engine::BenchResult* out);

  ModelInfo info_;

 private:
  struct Pass {
    int rows = 0;
    bool decode = false;
    int segments = 0, max_segment_len = 0;  // prefill
    int logit_rows = 0;                      // prefill: rows gathered for the output projection
    bool logits_all = false;                 // prefill: no gather, no sampling (prompt_logits)
  };

  Status check_supported(const model::ModelConfig& c) const;
  Status plan_memory();
  Status upload_weights(const model::ModelDir& m);
  Status upload(const model::ModelDir& m, const std::string& name, char* dst, std::int64_t elements,
                std::int64_t row_len = 0, float* row_scales = nullptr, const void* col_mul = nullptr);
  void progress(const std::string& s) const {
    if (opts_.progress) opts_.progress(s);
  }

  /// FP8 weights: whether a pass of `rows` rows quantizes its GEMM inputs (W8A8) rather than
  /// running the weight-only GEMM on 16-bit rows.
  bool w8a8(int rows) const { return fp8_ && rows > kWeightOnlyRows; }
  Status linear(const Linear& l, const void* x, std::int64_t x_stride, void* y, std::int64_t y_stride, int rows,
                bool q8, LinearMode mode = LinearMode::kPlain);
  Status linear_from(const Linear& l, const void* x, std::int64_t x_stride, void* y, std::int64_t y_stride, int rows,
                     bool q8, unsigned kinds);
  Status quantize(const void* x, std::int64_t x_stride, std::int64_t cols, int rows);
  Status project_logits(const void* x, int rows, bool q8);
  Status forward(const Pass& p, unsigned kinds, const SamplingParams* sampling);
  Status choose_tokens(const void* logits, int rows, const SamplingParams& s);
  Status decode_step(int rows, const SamplingParams& s);
  Status graph_for(int rows, const SamplingParams& s, unsigned kinds, cudaGraphExec_t* out);
  Status warm_decode(int rows, const SamplingParams& s);
  Status prefill(const std::vector<std::vector<std::int32_t>>& prompts, bool logits_all, std::vector<float>* logits);
  Status upload_ints(const std::vector<int>& v, int* dst);
  Status check_prompts(const std::vector<std::vector<std::int32_t>>& prompts, int max_new) const;
  Status copy_logits_to_host(int rows, float* dst);

  EngineOptions opts_;
  model::ModelConfig cfg_;
  std::unique_ptr<Context> ctx_;
  cudaStream_t stream_ = nullptr;
  Elem elem_ = Elem::kBF16;
  DataType dtype_ = DataType::kBF16;
  std::size_t esize_ = 2;
  bool fp8_ = false;          ///< FP8 weights (EngineOptions::fp8_weights)
  /// Bytes of a linear layer's weight element.
  std::size_t wsize() const { return fp8_ ? 1 : esize_; }
  /// Bytes a [r, c] tensor of the model's dtype takes in the weight arena (the plan and the
  /// placement both count with these two).
  std::size_t mat_bytes(std::int64_t r, std::int64_t c) const {
    return align_up(static_cast<std::size_t>(r * c) * esize_);
  }
  /// Bytes of a linear layer's [r, c] weight: the model's dtype, or e4m3 with one fp32 scale per
  /// row after it.
  std::size_t linear_bytes(std::int64_t r, std::int64_t c) const {
    return linear_weight_bytes(r, c) + (fp8_ ? align_up(static_cast<std::size_t>(r) * 4) : 0);
  }
  /// The weight part of linear_bytes: where the scales start.
  std::size_t linear_weight_bytes(std::int64_t r, std::int64_t c) const {
    return align_up(static_cast<std::size_t>(r * c) * wsize());
  }
  engine::DecodeDevice decode_dev_;  ///< what the decode attention's plan needs of the device
  std::size_t free_at_start_ = 0;

  // Geometry
  std::int64_t h_ = 0, inter_ = 0, vocab_ = 0, hd_ = 0, nq_ = 0, nkv_ = 0, qkv_dim_ = 0, max_seq_ = 0;
  int max_rows_ = 0, logit_rows_cap_ = 0, max_splits_ = 1;
  engine::AttnShape shape_;

  // Device memory
  DeviceBuffer weights_mem_, kv_mem_, buf_mem_;
  DeviceBuffer stage_dev_;  ///< FP8 weights, while loading: chunks on their way to quantization
  std::vector<Layer> layers_;
  const void* embed_ = nullptr;
  const float* embed_scales_ = nullptr;  ///< FP8 weights with a tied table: the table is e4m3
  const void* final_norm_ = nullptr;
  Linear lm_head_;
  char* k_cache_ = nullptr;
  char* v_cache_ = nullptr;
  std::size_t layer_cache_bytes_ = 0;
  void *R_ = nullptr, *X_ = nullptr, *QKV_ = nullptr, *ATT_ = nullptr, *A_ = nullptr, *GU_ = nullptr,
       *ACT_ = nullptr, *D_ = nullptr, *LIN_ = nullptr, *LOGITS_ = nullptr;
  void* Q8_ = nullptr;      ///< FP8 weights: the next GEMM's input rows in e4m3 ...
  float* S8_ = nullptr;     ///< ... and their per-token scales
  int *ids_ = nullptr, *tok_pos_ = nullptr, *tok_seq_ = nullptr, *positions_ = nullptr, *gather_ = nullptr;
  engine::Segment* segments_ = nullptr;
  float *inv_freq_ = nullptr, *part_acc_ = nullptr, *part_ml_ = nullptr, *argmax_val_ = nullptr;
  int* argmax_idx_ = nullptr;
  unsigned *attn_counters_ = nullptr, *argmax_counters_ = nullptr;
  engine::SampleSettings* sampling_ = nullptr;  ///< the sampler's settings, written per generation

  // Host staging (pinned): weight upload chunks, then token read-back (first half) and small int
  // arrays (second half: a ring of slots, each reused once its last copy has left).
  char* host_ = nullptr;
  std::size_t host_bytes_ = 0;
  std::vector<cudaEvent_t> upload_ready_;  ///< per slot: its last copy has completed
  std::size_t upload_slot_bytes_ = 0;
  int upload_turn_ = 0;  ///< weight upload: which half of host_ the next chunk stages in
  int upload_next_ = 0;
  std::vector<cudaEvent_t> events_;

  std::map<GraphKey, cudaGraphExec_t> graphs_;
  std::map<std::pair<int, bool>, bool> warmed_;  // (rows, sampled) run eagerly once (tuned, allocated)
};

// ---- loading ---------------------------------------------------------------------------------------

Status Engine::Impl::check_supported(const model::ModelConfig& c) const {
  const std::int64_t hd = c.head_dim;
  if (hd != 64 && hd != 128 && hd != 256)
    return Status(StatusCode::kNotSupported,
                  fmt::format("head_dim {} is not supported by the attention kernels (64, 128, 256)", hd));
  if (c.num_heads / c.num_kv_heads > 16)
    return Status(StatusCode::kNotSupported,
                  fmt::format("{} query heads per KV head; the decode attention holds at most 16",
                              c.num_heads / c.num_kv_heads));
  if (c.hidden_size % 8 != 0 || c.intermediate_size % 8 != 0)
    return Status(StatusCode::kNotSupported,
                  fmt::format("hidden_size {} and intermediate_size {} must be multiples of 8", c.hidden_size,
                              c.intermediate_size));
  if (c.vocab_size > INT32_MAX / 2 || c.hidden_size > (1 << 20) || c.intermediate_size > (1 << 22))
    return Status(StatusCode::kNotSupported, "vocabulary or layer sizes beyond the engine's 32-bit indexing");
  if (opts_.fp8_weights) {
    // cuBLASLt's FP8 kernels (the prefill GEMMs) take m, k and leading dimensions in multiples of
    // 16, the skinny kernels 16-byte rows: every linear layer's in and out features.
    for (auto [name, v] : {std::pair{"hidden_size", c.hidden_size}, {"intermediate_size", c.intermediate_size},
                           {"vocab_size", c.vocab_size}})
      if (v % 16 != 0)
        return Status(StatusCode::kNotSupported,
                      fmt::format("FP8 weights need hidden_size, intermediate_size and vocab_size in multiples of 16 "
                                  "(the FP8 GEMMs' granule); {} is {}: load the model without FP8",
                                  name, v));
  }
  return Status::ok();
}

Status Engine::Impl::load(const std::string& dir, const EngineOptions& o) {
  opts_ = o;
  if (o.max_batch < 1 || o.max_batch > 256)
    return Status(StatusCode::kInvalidArgument, fmt::format("max_batch must be in [1, 256] (got {})", o.max_batch));
  if (o.prefill_chunk < 16 || o.prefill_chunk > 16384)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("prefill_chunk must be in [16, 16384] (got {})", o.prefill_chunk));
  if (o.max_seq_len < 0) return Status(StatusCode::kInvalidArgument, "max_seq_len must be >= 0");
  progress(fmt::format("opening {}", dir));
  model::ModelDir m;
  TUNABLE_RETURN_IF_ERROR(model::open_model_dir(dir, &m));
  cfg_ = m.config;
  TUNABLE_RETURN_IF_ERROR(check_supported(cfg_));

  max_seq_ = o.max_seq_len > 0 ? o.max_seq_len : std::min<std::int64_t>(cfg_.max_position_embeddings, 4096);
  if (max_seq_ > (1 << 24))
    return Status(StatusCode::kInvalidArgument, fmt::format("max_seq_len {} is beyond 2^24", max_seq_));
  if (cfg_.sliding_window > 0 && max_seq_ > cfg_.sliding_window)
    return Status(StatusCode::kNotSupported,
                  fmt::format("the model attends within a sliding window of {} tokens, which the engine does not "
                              "implement; a max_seq_len of at most {} gives exact results",
                              cfg_.sliding_window, cfg_.sliding_window));

  const auto stored = m.tensors.begin()->second.second->dtype;
  elem_ = stored == model::StDtype::kF16 ? Elem::kF16 : Elem::kBF16;  // F32 checkpoints run in bf16
  dtype_ = elem_ == Elem::kF16 ? DataType::kF16 : DataType::kBF16;
  fp8_ = o.fp8_weights;
  h_ = cfg_.hidden_size;
  inter_ = cfg_.intermediate_size;
  vocab_ = cfg_.vocab_size;
  hd_ = cfg_.head_dim;
  nq_ = cfg_.num_heads;
  nkv_ = cfg_.num_kv_heads;
  qkv_dim_ = (nq_ + 2 * nkv_) * hd_;
  shape_ = engine::AttnShape{static_cast<int>(nq_), static_cast<int>(nkv_), static_cast<int>(hd_),
                             static_cast<int>(max_seq_), static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd_)))};

  info_.family = model::family_name(cfg_.family);
  info_.architecture = cfg_.architecture;
  info_.dtype = elem_ == Elem::kF16 ? "fp16" : "bf16";
  info_.weights = fp8_ ? "fp8e4m3" : info_.dtype;
  info_.vocab_size = vocab_;
  info_.hidden_size = h_;
  info_.intermediate_size = inter_;
  info_.num_layers = cfg_.num_layers;
  info_.num_heads = nq_;
  info_.num_kv_heads = nkv_;
  info_.head_dim = hd_;
  info_.max_seq_len = max_seq_;
  info_.max_batch = o.max_batch;
  info_.eos_token_ids = m.tokens.eos;
  info_.bos_token_id = m.tokens.bos;

  // Without a usable GPU the first CUDA call fails with whatever the runtime makes of it, reported
  // with a source path: say what it means first.
  TUNABLE_RETURN_IF_ERROR(usable_device(o.device));
  DeviceGuard guard;  // after the file checks, which need no GPU; the caller's device is restored
  TUNABLE_RETURN_IF_ERROR(guard.set(o.device));
  cudaDeviceProp prop{};
  TUNABLE_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  decode_dev_ = {prop.multiProcessorCount, prop.sharedMemPerBlockOptin, prop.sharedMemPerMultiprocessor,
                 prop.reservedSharedMemPerBlock};
  std::size_t total = 0;
  TUNABLE_CUDA_CHECK(cudaMemGetInfo(&free_at_start_, &total));
  TUNABLE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));

  Options topt = o.tuning;
  topt.enabled = true;
  try {
    ctx_ = std::make_unique<Context>(Device::cuda(o.device), topt);
  } catch (const Error& e) {
    return e.status();
  }
  if (opts_.progress) {
    // One line per tuned problem (the callback runs on the tuning thread and only prints).
    ctx_->set_progress_callback([cb = opts_.progress](const TuneProgress& p) {
      if (p.done == p.total) cb(fmt::format("tuned {} ({} candidates, {:.0f} ms)", p.problem, p.total, p.elapsed_ms));
    });
  }
  TUNABLE_RETURN_IF_ERROR(plan_memory());
  TUNABLE_RETURN_IF_ERROR(upload_weights(m));
  return Status::ok();
}

Status Engine::Impl::plan_memory() {
  const int L = static_cast<int>(cfg_.num_layers);
  max_rows_ = std::max(opts_.prefill_chunk, opts_.max_batch);
  logit_rows_cap_ = std::max(opts_.max_batch, 16);
  for (int b = 1; b <= opts_.max_batch; ++b) {
    engine::DecodeAttnArgs plan;
    if (!engine::plan_decode_splits(shape_, b, decode_dev_, &plan))
      return Status(StatusCode::kNotSupported,
                    fmt::format("max_seq_len {} is too long for the decode attention's spans (at most {} of {} "
                                "positions each with {} query heads per KV head and head_dim {})",
                                max_seq_, engine::max_decode_splits(), plan.chunk_cap, nq_ / nkv_, hd_));
    max_splits_ = std::max(max_splits_, plan.splits);
  }

  // Weights.
  std::size_t w = 0;
  auto mat = [&](std::int64_t r, std::int64_t c) { return mat_bytes(r, c); };
  auto lin = [&](std::int64_t r, std::int64_t c) { return linear_bytes(r, c); };
  // The two norm weights stay only with 16-bit weights: FP8 weights carry them folded in (fold_norms).
  const std::size_t per_layer = lin(qkv_dim_, h_) + (cfg_.qkv_bias ? mat(qkv_dim_, 1) : 0) + lin(h_, nq_ * hd_) +
                                (cfg_.o_bias ? mat(h_, 1) : 0) + lin(2 * inter_, h_) + lin(h_, inter_) +
                                (fp8_ ? 0 : 2 * mat(h_, 1));
  // A tied table is also the output projection (e4m3 with FP8 weights); an untied one is only
  // gathered from and stays in the model's dtype.
  w = per_layer * L + (cfg_.tie_word_embeddings ? lin(vocab_, h_) : mat(vocab_, h_) + lin(vocab_, h_)) + mat(h_, 1);
  if (fp8_) w += mat(h_, 1);  // the unit norm weight of the W8A8 passes (fold_norms)
  info_.weight_bytes = w;

  // KV cache.
  layer_cache_bytes_ = align_up(static_cast<std::size_t>(opts_.max_batch) * nkv_ * max_seq_ * hd_ * esize_);
  info_.kv_cache_bytes = 2 * layer_cache_bytes_ * L;

  // Buffers.
  const std::size_t T = static_cast<std::size_t>(max_rows_);
  const std::size_t B = static_cast<std::size_t>(opts_.max_batch);
  std::size_t b = 0;
  b += 2 * mat(T, h_) + mat(T, qkv_dim_) + mat(T, nq_ * hd_) + 2 * mat(T, h_) + mat(T, 2 * inter_) + mat(T, inter_);
  b += mat(logit_rows_cap_, h_) + mat(logit_rows_cap_, vocab_);
  b += align_up(T * 4) * 3 + align_up(B * 4) + align_up(2 * (B + T) * 4) + align_up((B + T) * sizeof(engine::Segment));
  b += align_up(hd_ / 2 * 4);
  b += align_up(B * nq_ * max_splits_ * hd_ * 4) + align_up(B * nq_ * max_splits_ * 2 * 4);
  b += align_up(B * engine::kArgmaxBlocks * 4) * 2 + align_up(B * nq_ * 4) + align_up(B * 4);
  b += align_up(sizeof(engine::SampleSettings));
  const std::int64_t widest_in = std::max({h_, nq_ * hd_, inter_});
  if (fp8_) b += align_up(T * static_cast<std::size_t>(widest_in)) + align_up(T * 4);
  info_.buffer_bytes = b;

  // Everything must fit next to the runtime's own needs (cuBLAS handles and workspaces, tuning
  // buffers): refuse before allocating anything.
  constexpr std::size_t kReserve = 512u << 20;
  std::size_t free_now = 0, total = 0;
  TUNABLE_CUDA_CHECK(cudaMemGetInfo(&free_now, &total));
  const std::size_t need = info_.weight_bytes + info_.kv_cache_bytes + info_.buffer_bytes + kReserve;
  if (need > free_now)
    return Status(StatusCode::kCudaError,
                  fmt::format("out of GPU memory: the model needs {} (weights {}, KV cache {} for {} sequences of {} "
                              "positions, buffers {}, {} for the runtime) and cuda:{} has {} free; lower "
                              "max_seq_len or max_batch",
                              format_bytes(need), format_bytes(info_.weight_bytes), format_bytes(info_.kv_cache_bytes),
                              opts_.max_batch, max_seq_, format_bytes(info_.buffer_bytes), format_bytes(kReserve),
                              opts_.device, format_bytes(free_now)));
  auto alloc = [&](DeviceBuffer* d, std::size_t bytes, const char* what) {
    const Status st = d->allocate(bytes);
    if (!st.is_ok())
      return Status(st.code(), fmt::format("out of GPU memory allocating the {}: {}", what, st.message()));
    return Status::ok();
  };
  TUNABLE_RETURN_IF_ERROR(alloc(&weights_mem_, w, "weights"));
  TUNABLE_RETURN_IF_ERROR(alloc(&kv_mem_, info_.kv_cache_bytes, "KV cache"));
  TUNABLE_RETURN_IF_ERROR(alloc(&buf_mem_, b, "buffers"));
  TUNABLE_CUDA_CHECK(cudaMemsetAsync(kv_mem_.get(), 0, info_.kv_cache_bytes, stream_));
  TUNABLE_CUDA_CHECK(cudaMemsetAsync(buf_mem_.get(), 0, b, stream_));
  k_cache_ = static_cast<char*>(kv_mem_.get());
  v_cache_ = k_cache_ + layer_cache_bytes_ * L;

  char* cur = static_cast<char*>(buf_mem_.get());
  auto take = [&](std::size_t bytes) {
    char* p = cur;
    cur += align_up(bytes);
    return p;
  };
  auto rows = [&](std::size_t r, std::int64_t c) { return take(r * c * esize_); };
  R_ = rows(T, h_);
  X_ = rows(T, h_);
  QKV_ = rows(T, qkv_dim_);
  ATT_ = rows(T, nq_ * hd_);
  A_ = rows(T, h_);
  D_ = rows(T, h_);
  GU_ = rows(T, 2 * inter_);
  ACT_ = rows(T, inter_);
  LIN_ = rows(logit_rows_cap_, h_);
  LOGITS_ = rows(logit_rows_cap_, vocab_);
  ids_ = reinterpret_cast<int*>(take(T * 4));
  tok_pos_ = reinterpret_cast<int*>(take(T * 4));
  tok_seq_ = reinterpret_cast<int*>(take(T * 4));
  positions_ = reinterpret_cast<int*>(take(B * 4));
  gather_ = reinterpret_cast<int*>(take(2 * (B + T) * 4));
  segments_ = reinterpret_cast<engine::Segment*>(take((B + T) * sizeof(engine::Segment)));
  inv_freq_ = reinterpret_cast<float*>(take(hd_ / 2 * 4));
  part_acc_ = reinterpret_cast<float*>(take(B * nq_ * max_splits_ * hd_ * 4));
  part_ml_ = reinterpret_cast<float*>(take(B * nq_ * max_splits_ * 2 * 4));
  argmax_val_ = reinterpret_cast<float*>(take(B * engine::kArgmaxBlocks * 4));
  argmax_idx_ = reinterpret_cast<int*>(take(B * engine::kArgmaxBlocks * 4));
  attn_counters_ = reinterpret_cast<unsigned*>(take(B * nq_ * 4));  // per (sequence, KV head, head chunk)
  argmax_counters_ = reinterpret_cast<unsigned*>(take(B * 4));
  sampling_ = reinterpret_cast<engine::SampleSettings*>(take(sizeof(engine::SampleSettings)));
  if (fp8_) {
    Q8_ = take(T * static_cast<std::size_t>(widest_in));
    S8_ = reinterpret_cast<float*>(take(T * 4));
  }
  if (cur > static_cast<char*>(buf_mem_.get()) + b) return Status(StatusCode::kInternal, "engine buffer plan overflows");

  // RoPE frequencies as Hugging Face computes them (fp32), with llama3's scaling when configured.
  std::vector<float> inv(hd_ / 2);
  for (std::int64_t i = 0; i < hd_ / 2; ++i) {
    double f = 1.0 / std::pow(cfg_.rope_theta, static_cast<double>(2 * i) / static_cast<double>(hd_));
    if (cfg_.rope_scaling.llama3) {
      const auto& r = cfg_.rope_scaling;
      const double old_len = static_cast<double>(r.original_max_position_embeddings);
      const double low_wavelen = old_len / r.low_freq_factor, high_wavelen = old_len / r.high_freq_factor;
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f = f / r.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * f / r.factor + smooth * f;
      }
    }
    inv[i] = static_cast<float>(f);
  }
  // On the engine's stream, behind the memsets above: that stream does not synchronize with the
  // legacy default stream, so a plain cudaMemcpy could land first and be zeroed by the buffer memset
  // (RoPE then rotated nothing). It did, whenever another process kept the GPU busy enough to delay
  // the memset.
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(inv_freq_, inv.data(), inv.size() * 4, cudaMemcpyHostToDevice, stream_));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `inv` leaves scope

  host_bytes_ = 64u << 20;
  TUNABLE_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_), host_bytes_));
  events_.resize(4);
  for (auto& e : events_) TUNABLE_CUDA_CHECK(cudaEventCreate(&e));
  // Upload slots hold the largest int array a pass uploads (segments, or two gather entries per row).
  const std::size_t up_rows = static_cast<std::size_t>(max_rows_) + static_cast<std::size_t>(opts_.max_batch);
  upload_slot_bytes_ = align_up(std::max(up_rows * sizeof(engine::Segment), 2 * up_rows * sizeof(int)));
  const std::size_t slots = std::min<std::size_t>(kUploadSlots, host_bytes_ / 2 / upload_slot_bytes_);
  if (slots == 0) return Status(StatusCode::kInternal, "engine upload staging too small for the prefill chunk");
  upload_ready_.resize(slots);
  for (auto& e : upload_ready_) TUNABLE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return Status::ok();
}

/// Copies tensor `name` (elements as the configuration expects) to dst in the engine's dtype,
/// converting fp32 checkpoints to bf16 on the host, through the pinned staging buffer in halves so
/// that the host fills one while the other is copied. With `row_scales`, the tensor is a weight of
/// rows of `row_len` elements stored as e4m3: each chunk (whole rows) lands in the device staging
/// buffer and is quantized from there into dst, one scale per row into row_scales.
Status Engine::Impl::upload(const model::ModelDir& m, const std::string& name, char* dst, std::int64_t elements,
                            std::int64_t row_len, float* row_scales, const void* col_mul) {
  const auto it = m.tensors.find(name);
  if (it == m.tensors.end()) return Status(StatusCode::kInternal, fmt::format("tensor '{}' vanished", name));
  const model::StTensor& t = *it->second.second;
  if (t.elements() != elements)
    return Status(StatusCode::kInternal, fmt::format("tensor '{}' holds {} elements, expected {}", name, t.elements(), elements));
  const unsigned char* src = it->second.first->data(t);
  const std::size_t in_size = model::st_size(t.dtype);
  const std::size_t half = host_bytes_ / 2;
  const bool quantized = row_scales != nullptr;
  std::size_t per_chunk = half / esize_;
  if (quantized) {
    if (row_len <= 0 || elements % row_len != 0 || static_cast<std::size_t>(row_len) > per_chunk ||
        stage_dev_.size() < host_bytes_)
      return Status(StatusCode::kInternal, fmt::format("tensor '{}': no FP8 upload plan for rows of {}", name, row_len));
    per_chunk = per_chunk / static_cast<std::size_t>(row_len) * static_cast<std::size_t>(row_len);
  }
  for (std::int64_t e0 = 0; e0 < elements; e0 += static_cast<std::int64_t>(per_chunk)) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::int64_t>(per_chunk, elements - e0));
    char* stage = host_ + (upload_turn_ & 1) * half;
    cudaEvent_t ev = events_[upload_turn_ & 1];
    ++upload_turn_;
    TUNABLE_CUDA_CHECK(cudaEventSynchronize(ev));  // the copy that last used this half is done
    const unsigned char* s = src + static_cast<std::size_t>(e0) * in_size;
    if (t.dtype == model::StDtype::kF32) {
      auto* d = reinterpret_cast<std::uint16_t*>(stage);
      for (std::size_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, s + 4 * i, 4);
        d[i] = float_to_bf16(f);
      }
    } else {
      std::memcpy(stage, s, n * esize_);
    }
    if (quantized) {
      // The event below also guards this device half: the next chunk through it waits for the
      // quantization that reads it.
      char* dstage = stage_dev_.as<char>() + (stage - host_);
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(dstage, stage, n * esize_, cudaMemcpyHostToDevice, stream_));
      const std::int64_t r0 = e0 / row_len, rows = static_cast<std::int64_t>(n) / row_len;
      TUNABLE_RETURN_IF_ERROR(launch_status(
          engine::launch_quantize_rows(elem_, dstage, row_len, dst + e0, row_len, row_scales + r0,
                                       static_cast<int>(rows), static_cast<int>(row_len), 256, stream_, col_mul,
                                       cfg_.gemma_norm ? 1.f : 0.f),
          "weight quantization"));
    } else {
      TUNABLE_CUDA_CHECK(cudaMemcpyAsync(dst + static_cast<std::size_t>(e0) * esize_, stage, n * esize_,
                                         cudaMemcpyHostToDevice, stream_));
    }
    TUNABLE_CUDA_CHECK(cudaEventRecord(ev, stream_));
  }
  return Status::ok();
}

Status Engine::Impl::upload_weights(const model::ModelDir& m) {
  char* cur = static_cast<char*>(weights_mem_.get());
  auto place = [&](std::int64_t r, std::int64_t c) {
    char* p = cur;
    cur += mat_bytes(r, c);
    return p;
  };
  // A linear layer's weight [r, c] (and with FP8 weights its r scales after it).
  auto place_linear = [&](std::int64_t r, std::int64_t c) {
    Linear l;
    l.out = r;
    l.in = c;
    l.w = cur;
    if (fp8_) l.scales = reinterpret_cast<const float*>(cur + linear_weight_bytes(r, c));
    cur += linear_bytes(r, c);
    return l;
  };
  // Rows [row0, row0 + rows) of linear `l` from tensor `name`; with FP8 weights times the norm weight
  // `norm` (device, h_ elements) column by column when set (fold_norms).
  auto fill = [&](const Linear& l, const std::string& name, std::int64_t row0, std::int64_t rows,
                  const void* norm = nullptr) {
    char* dst = static_cast<char*>(const_cast<void*>(l.w)) + static_cast<std::size_t>(row0 * l.in) * wsize();
    float* sc = fp8_ ? const_cast<float*>(l.scales) + row0 : nullptr;
    return upload(m, name, dst, rows * l.in, l.in, sc, fp8_ ? norm : nullptr);
  };
  // FP8: each layer's two norm weights pass through here on their way into its GEMMs (one layer at
  // a time: the stream orders the next layer's upload after this layer's quantization).
  DeviceBuffer norm_dev;
  if (fp8_) {
    Status st = stage_dev_.allocate(host_bytes_);
    if (st.is_ok()) st = norm_dev.allocate(2 * mat_bytes(h_, 1));
    if (!st.is_ok())
      return Status(st.code(), fmt::format("out of GPU memory allocating the FP8 load staging: {}", st.message()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t qd = nq_ * hd_, kvd = nkv_ * hd_;
  layers_.resize(static_cast<std::size_t>(cfg_.num_layers));
  for (std::int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    Layer& L = layers_[l];
    // The norms first: FP8 weights fold them into the GEMMs after them (fold_norms).
    char* n1 = fp8_ ? static_cast<char*>(norm_dev.get()) : place(h_, 1);
    char* n2 = fp8_ ? n1 + mat_bytes(h_, 1) : place(h_, 1);
    TUNABLE_RETURN_IF_ERROR(upload(m, p + "input_layernorm.weight", n1, h_));
    TUNABLE_RETURN_IF_ERROR(upload(m, p + "post_attention_layernorm.weight", n2, h_));
    if (!fp8_) {  // FP8: the staging buffer is freed after load; the layers get the unit weight below
      L.attn_norm = n1;
      L.mlp_norm = n2;
    }
    L.qkv = place_linear(qkv_dim_, h_);
    TUNABLE_RETURN_IF_ERROR(fill(L.qkv, p + "self_attn.q_proj.weight", 0, qd, n1));
    TUNABLE_RETURN_IF_ERROR(fill(L.qkv, p + "self_attn.k_proj.weight", qd, kvd, n1));
    TUNABLE_RETURN_IF_ERROR(fill(L.qkv, p + "self_attn.v_proj.weight", qd + kvd, kvd, n1));
    if (cfg_.qkv_bias) {
      char* b = place(qkv_dim_, 1);
      TUNABLE_RETURN_IF_ERROR(upload(m, p + "self_attn.q_proj.bias", b, qd));
      TUNABLE_RETURN_IF_ERROR(upload(m, p + "self_attn.k_proj.bias", b + qd * esize_, kvd));
      TUNABLE_RETURN_IF_ERROR(upload(m, p + "self_attn.v_proj.bias", b + (qd + kvd) * esize_, kvd));
      L.qkv.bias = b;
    }
    L.o = place_linear(h_, qd);
    TUNABLE_RETURN_IF_ERROR(fill(L.o, p + "self_attn.o_proj.weight", 0, h_));
    if (cfg_.o_bias) {
      char* b = place(h_, 1);
      TUNABLE_RETURN_IF_ERROR(upload(m, p + "self_attn.o_proj.bias", b, h_));
      L.o.bias = b;
    }
    L.gate_up = place_linear(2 * inter_, h_);
    TUNABLE_RETURN_IF_ERROR(fill(L.gate_up, p + "mlp.gate_proj.weight", 0, inter_, n2));
    TUNABLE_RETURN_IF_ERROR(fill(L.gate_up, p + "mlp.up_proj.weight", inter_, inter_, n2));
    L.down = place_linear(h_, inter_);
    TUNABLE_RETURN_IF_ERROR(fill(L.down, p + "mlp.down_proj.weight", 0, h_));
    if ((l + 1) % 4 == 0 || l + 1 == cfg_.num_layers)
      progress(fmt::format("loaded layer {}/{}", l + 1, cfg_.num_layers));
  }
  if (cfg_.tie_word_embeddings) {
    lm_head_ = place_linear(vocab_, h_);
    TUNABLE_RETURN_IF_ERROR(fill(lm_head_, "model.embed_tokens.weight", 0, vocab_));
    embed_ = lm_head_.w;
    embed_scales_ = lm_head_.scales;
  } else {
    char* emb = place(vocab_, h_);
    TUNABLE_RETURN_IF_ERROR(upload(m, "model.embed_tokens.weight", emb, vocab_ * h_));
    embed_ = emb;
    lm_head_ = place_linear(vocab_, h_);
    TUNABLE_RETURN_IF_ERROR(fill(lm_head_, "lm_head.weight", 0, vocab_));
  }
  char* fn = place(h_, 1);
  TUNABLE_RETURN_IF_ERROR(upload(m, "model.norm.weight", fn, h_));
  final_norm_ = fn;
  if (fp8_) {
    // The layers' norm weights live in their GEMMs now; W8A8 passes normalize with a unit weight
    // (1, or 0 where the model multiplies by 1 + w).
    char* unit = place(h_, 1);
    const std::uint16_t one = cfg_.gemma_norm ? 0 : elem_ == Elem::kF16 ? 0x3c00 : 0x3f80;
    const std::vector<std::uint16_t> v(static_cast<std::size_t>(h_), one);
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(unit, v.data(), v.size() * 2, cudaMemcpyHostToDevice, stream_));
    TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // v leaves scope
    for (Layer& L : layers_) L.attn_norm = L.mlp_norm = unit;
  }
  if (cur > static_cast<char*>(weights_mem_.get()) + info_.weight_bytes)
    return Status(StatusCode::kInternal, "engine weight plan overflows");
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  stage_dev_.reset();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress(fmt::format("weights on cuda:{}: {} in {:.1f} s{}", opts_.device, format_bytes(info_.weight_bytes), s,
                       fp8_ ? " (linear layers in FP8 e4m3, per-channel scales, norm weights folded in)" : ""));
  return Status::ok();
}

// ---- the forward pass -----------------------------------------------------------------------------

/// y = x W^T (+ bias). With FP8 weights the rowwise ScaledGemm applies the weight's per-channel
/// scales: with q8, x must be Q8_'s e4m3 rows with their per-token scales S8_; without, x keeps the
/// model's dtype (the weight-only GEMM).
Status Engine::Impl::linear(const Linear& l, const void* x, std::int64_t x_stride, void* y, std::int64_t y_stride,
                            int rows, bool q8, LinearMode mode) {
  GemmDesc d = GemmDesc::make(fp8_ ? DataType::kF8E4M3 : dtype_, Transpose::kT, Transpose::kN, l.out, rows, l.in);
  d.lda = l.in;
  d.ldb = x_stride;
  d.ldc = y_stride;
  if (mode == LinearMode::kAddTo) d.beta = 1.0;
  GemmOperands ops{l.w, x, y, nullptr, nullptr, nullptr};
  if (fp8_) {
    d.op = GemmOp::kScaledGemm;
    d.out_dtype = dtype_;
    d.scale_mode = ScaleMode::kRowwise;
    ops.scale_a = l.scales;
    if (q8)
      ops.scale_b = S8_;
    else
      d.dtype_b = dtype_;
    if (mode == LinearMode::kRmsInput) {
      if (q8) return Status(StatusCode::kInternal, "an RMS-normalizing GEMM on quantized rows");
      d.scale_mode = ScaleMode::kRowwiseRms;
      d.rms_eps = cfg_.rms_norm_eps;
    }
  } else if (mode == LinearMode::kRmsInput) {
    return Status(StatusCode::kInternal, "an RMS-normalizing GEMM without FP8 weights");
  }
  if (l.bias) {
    if (!fp8_) d.op = GemmOp::kGemmAndBias;
    d.epilogue = Epilogue::kBias;
    ops.bias = l.bias;
  }
  return gemm(*ctx_, d, ops, stream_);
}

/// FP8 weights: rows of x (the model's dtype) into Q8_ (e4m3, stride cols) and S8_.
Status Engine::Impl::quantize(const void* x, std::int64_t x_stride, std::int64_t cols, int rows) {
  return launch_status(engine::launch_quantize_rows(elem_, x, x_stride, Q8_, cols, S8_, rows, static_cast<int>(cols),
                                                    1024, stream_),
                       "activation quantization");
}

/// The GEMM of `l` on `rows` rows x of the model's dtype: with q8 (a W8A8 pass) they are quantized
/// into Q8_ first (the quantize kind), else the GEMM runs on x itself. `kinds` selects which of the
/// two launch.
Status Engine::Impl::linear_from(const Linear& l, const void* x, std::int64_t x_stride, void* y, std::int64_t y_stride,
                                 int rows, bool q8, unsigned kinds) {
  if (q8 && (kinds & kQuantKind)) TUNABLE_RETURN_IF_ERROR(quantize(x, x_stride, l.in, rows));
  if (!(kinds & kGemmKind)) return Status::ok();
  return q8 ? linear(l, Q8_, l.in, y, y_stride, rows, true) : linear(l, x, x_stride, y, y_stride, rows, false);
}

/// LOGITS_ = output projection of `rows` normalized rows x ([rows, hidden], the model's dtype); q8:
/// quantize them first (W8A8), as the caller chose for these rows.
Status Engine::Impl::project_logits(const void* x, int rows, bool q8) {
  return linear_from(lm_head_, x, h_, LOGITS_, vocab_, rows, q8, kGemmKind | kQuantKind);
}

Status Engine::Impl::forward(const Pass& p, unsigned kinds, const SamplingParams* sampling) {
  const bool g = kinds & kGemmKind, at = kinds & kAttentionKind, nm = kinds & kNormKind,
             ac = kinds & kActivationKind, ot = kinds & kOtherKind;
  const int T = p.rows;
  // FP8 weights, W8A8 passes: the norms write the next GEMM's input as e4m3 rows with per-token
  // scales (Q8_, S8_); the attention and activation outputs are quantized by their own launch
  // (linear_from). Passes of at most kWeightOnlyRows rows (decode) keep every activation 16-bit.
  const bool q8 = w8a8(T);
  // FP8 weights, weight-only passes: no norm launches (LinearMode); the residual stream R_ is every
  // GEMM's input or output.
  const bool folded = fp8_ && !q8;
  const Fp8Output norm_out = q8 ? Fp8Output::dynamic_per_token(S8_) : Fp8Output::none();
  void* const Xn = q8 ? Q8_ : X_;
  const unsigned gq = kinds & (kGemmKind | kQuantKind);
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const NormWeight conv = cfg_.gemma_norm ? NormWeight::kGemma : NormWeight::kLlama;
  const Activation act = cfg_.gelu_tanh ? Activation::kGeluTanh : Activation::kSilu;
  if (ot) {
    // Gemma multiplies by sqrt(hidden) rounded to the model's dtype first, as its module does.
    float scale = 1.f;
    if (cfg_.scale_embeddings) {
      const float s = static_cast<float>(std::sqrt(static_cast<double>(h_)));
      scale = elem_ == Elem::kF16 ? __half2float(__float2half_rn(s)) : bf16_to_float(float_to_bf16(s));
    }
    TUNABLE_RETURN_IF_ERROR(launch_status(
        embed_scales_ ? engine::launch_embed_fp8(elem_, ids_, embed_, embed_scales_, R_, T, static_cast<int>(h_), scale, stream_)
                      : engine::launch_embed(elem_, ids_, embed_, R_, T, static_cast<int>(h_), scale, stream_),
        "embedding lookup"));
  }
  engine::DecodeAttnArgs decode_plan;  // the same for every layer
  if (p.decode) (void)engine::plan_decode_splits(shape_, T, decode_dev_, &decode_plan);  // checked at load
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    if (nm && !folded) {
      if (l == 0)
        TUNABLE_RETURN_IF_ERROR(rms_norm(*ctx_, Xn, R_, L.attn_norm, T, h_, h_, h_, eps, dtype_, conv, stream_, norm_out));
      else
        TUNABLE_RETURN_IF_ERROR(
            fused_add_rms_norm(*ctx_, Xn, D_, R_, L.attn_norm, T, h_, h_, h_, h_, eps, dtype_, conv, stream_, norm_out));
    }
    if (g)
      TUNABLE_RETURN_IF_ERROR(folded ? linear(L.qkv, R_, h_, QKV_, qkv_dim_, T, false, LinearMode::kRmsInput)
                                     : linear(L.qkv, Xn, h_, QKV_, qkv_dim_, T, q8));
    if (at) {
      char* kc = k_cache_ + layer_cache_bytes_ * l;
      char* vc = v_cache_ + layer_cache_bytes_ * l;
      if (p.decode) {
        engine::DecodeAttnArgs a = decode_plan;
        a.qkv = QKV_;
        a.qkv_stride = qkv_dim_;
        a.k_cache = kc;
        a.v_cache = vc;
        a.positions = positions_;
        a.inv_freq = inv_freq_;
        a.out = ATT_;
        a.out_stride = nq_ * hd_;
        a.part_acc = part_acc_;
        a.part_ml = part_ml_;
        a.counters = attn_counters_;
        TUNABLE_RETURN_IF_ERROR(
            launch_status(engine::launch_decode_attention(elem_, shape_, a, T, stream_), "decode attention"));
      } else {
        TUNABLE_RETURN_IF_ERROR(launch_status(engine::launch_rope_cache(elem_, shape_, QKV_, qkv_dim_, kc, vc, tok_pos_,
                                                                        tok_seq_, inv_freq_, T, stream_),
                                              "RoPE and cache write"));
        TUNABLE_RETURN_IF_ERROR(launch_status(
            engine::launch_prefill_attention(elem_, shape_, QKV_, qkv_dim_, kc, vc, segments_, p.segments,
                                             p.max_segment_len, ATT_, nq_ * hd_, stream_),
            "prefill attention"));
      }
    }
    if (folded) {
      if (g) TUNABLE_RETURN_IF_ERROR(linear(L.o, ATT_, nq_ * hd_, R_, h_, T, false, LinearMode::kAddTo));
      if (g) TUNABLE_RETURN_IF_ERROR(linear(L.gate_up, R_, h_, GU_, 2 * inter_, T, false, LinearMode::kRmsInput));
    } else {
      TUNABLE_RETURN_IF_ERROR(linear_from(L.o, ATT_, nq_ * hd_, A_, h_, T, q8, gq));
      if (nm)
        TUNABLE_RETURN_IF_ERROR(
            fused_add_rms_norm(*ctx_, Xn, A_, R_, L.mlp_norm, T, h_, h_, h_, h_, eps, dtype_, conv, stream_, norm_out));
      if (g) TUNABLE_RETURN_IF_ERROR(linear(L.gate_up, Xn, h_, GU_, 2 * inter_, T, q8));
    }
    if (ac) TUNABLE_RETURN_IF_ERROR(act_and_mul(*ctx_, ACT_, GU_, T, inter_, 2 * inter_, inter_, dtype_, act, stream_));
    // W8A8: the quantization is a launch of its own; one block per row (the per-token scale needs
    // the row's amax) had to evaluate every activation of the row on one SM, 3-4x slower than two.
    if (folded) {
      if (g) TUNABLE_RETURN_IF_ERROR(linear(L.down, ACT_, inter_, R_, h_, T, false, LinearMode::kAddTo));
    } else {
      TUNABLE_RETURN_IF_ERROR(linear_from(L.down, ACT_, inter_, D_, h_, T, q8, gq));
    }
  }
  // The final norm keeps the model's dtype: prefill gathers its rows, prompt_logits projects them
  // in groups.
  if (nm && folded) TUNABLE_RETURN_IF_ERROR(rms_norm(*ctx_, X_, R_, final_norm_, T, h_, h_, h_, eps, dtype_, conv, stream_));
  if (nm && !folded)
    TUNABLE_RETURN_IF_ERROR(fused_add_rms_norm(*ctx_, X_, D_, R_, final_norm_, T, h_, h_, h_, h_, eps, dtype_, conv, stream_));
  if (p.logits_all) return Status::ok();  // the caller runs the output projection in groups
  const void* lin = X_;
  int n = T;
  if (!p.decode) {
    n = p.logit_rows;
    if (n == 0) return Status::ok();  // no sequence finished its prompt in this pass
    if (ot)
      TUNABLE_RETURN_IF_ERROR(launch_status(engine::launch_gather_rows(elem_, X_, gather_, LIN_, n, static_cast<int>(h_), stream_),
                                            "last-row gather"));
    lin = LIN_;
  }
  TUNABLE_RETURN_IF_ERROR(linear_from(lm_head_, lin, h_, LOGITS_, vocab_, n, q8, gq));
  if (ot && sampling) TUNABLE_RETURN_IF_ERROR(choose_tokens(LOGITS_, n, *sampling));
  return Status::ok();
}

Status Engine::Impl::choose_tokens(const void* logits, int rows, const SamplingParams& s) {
  if (s.temperature <= 0.f)
    return launch_status(engine::launch_argmax(elem_, logits, vocab_, static_cast<int>(vocab_), rows, argmax_val_,
                                               argmax_idx_, argmax_counters_, ids_, positions_, stream_),
                         "greedy token choice");
  return launch_status(engine::launch_sample(elem_, logits, vocab_, static_cast<int>(vocab_), rows, sampling_, ids_,
                                             positions_, stream_),
                       "token sampling");
}

// ---- decode steps and graphs ----------------------------------------------------------------------

Status Engine::Impl::warm_decode(int rows, const SamplingParams& s) {
  if (warmed_[{rows, s.temperature > 0.f}]) return Status::ok();
  // One eager step tunes every problem of this batch size (when tuning) and allocates what the
  // runtime needs, so that the capture after it finds everything in place. It writes cache row 0
  // of the first `rows` sequences and sets their ids and positions, all of which a prefill rewrites.
  progress(fmt::format("{} decode problems for batch {}", ctx_->options().tuning ? "tuning" : "preparing", rows));
  TUNABLE_CUDA_CHECK(cudaMemsetAsync(positions_, 0, rows * sizeof(int), stream_));
  TUNABLE_CUDA_CHECK(cudaMemsetAsync(ids_, 0, rows * sizeof(int), stream_));
  Pass p;
  p.rows = rows;
  p.decode = true;
  TUNABLE_RETURN_IF_ERROR(forward(p, kAllKinds, &s));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  warmed_[{rows, s.temperature > 0.f}] = true;
  return Status::ok();
}

Status Engine::Impl::graph_for(int rows, const SamplingParams& s, unsigned kinds, cudaGraphExec_t* out) {
  const GraphKey key{rows, s.temperature > 0.f, kinds};
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    *out = it->second;
    return Status::ok();
  }
  TUNABLE_RETURN_IF_ERROR(warm_decode(rows, s));
  Pass p;
  p.rows = rows;
  p.decode = true;
  TUNABLE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const Status st = forward(p, kinds, &s);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &graph);  // always, so the stream leaves capture
  if (!st.is_ok()) {
    if (graph) (void)cudaGraphDestroy(graph);
    return st;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::kCudaError, fmt::format("capturing the decode step failed: {}", cuda_error_text(e)));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (ie != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::kCudaError, fmt::format("instantiating the decode graph failed: {}", cuda_error_text(ie)));
  }
  graphs_[key] = exec;
  *out = exec;
  return Status::ok();
}

Status Engine::Impl::decode_step(int rows, const SamplingParams& s) {
  if (opts_.cuda_graphs) {
    cudaGraphExec_t g = nullptr;
    TUNABLE_RETURN_IF_ERROR(graph_for(rows, s, kAllKinds, &g));
    TUNABLE_CUDA_CHECK(cudaGraphLaunch(g, stream_));
    return Status::ok();
  }
  TUNABLE_RETURN_IF_ERROR(warm_decode(rows, s));
  Pass p;
  p.rows = rows;
  p.decode = true;
  return forward(p, kAllKinds, &s);
}

// ---- prefill and generation -----------------------------------------------------------------------

Status Engine::Impl::upload_ints(const std::vector<int>& v, int* dst) {
  if (v.empty()) return Status::ok();
  const std::size_t bytes = v.size() * sizeof(int);
  if (bytes > upload_slot_bytes_) return Status(StatusCode::kInternal, "engine upload larger than its staging slot");
  // The next slot of the ring: its previous copy was enqueued kUploadSlots uploads ago, so the host
  // waits only when it runs that far ahead of the GPU (one slot waited for every earlier copy, and
  // so for the whole previous prefill pass, before the next pass could be enqueued).
  const int slot = upload_next_;
  upload_next_ = (upload_next_ + 1) % static_cast<int>(upload_ready_.size());
  TUNABLE_CUDA_CHECK(cudaEventSynchronize(upload_ready_[slot]));
  char* src = host_ + host_bytes_ / 2 + static_cast<std::size_t>(slot) * upload_slot_bytes_;
  std::memcpy(src, v.data(), bytes);
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  TUNABLE_CUDA_CHECK(cudaEventRecord(upload_ready_[slot], stream_));
  return Status::ok();
}

Status Engine::Impl::check_prompts(const std::vector<std::vector<std::int32_t>>& prompts, int max_new) const {
  if (prompts.empty()) return Status(StatusCode::kInvalidArgument, "no prompt given");
  if (static_cast<int>(prompts.size()) > opts_.max_batch)
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} prompts, but the engine was loaded for at most {} (max_batch)", prompts.size(),
                              opts_.max_batch));
  for (std::size_t b = 0; b < prompts.size(); ++b) {
    const auto& p = prompts[b];
    if (p.empty()) return Status(StatusCode::kInvalidArgument, fmt::format("prompt {} is empty", b));
    // The last token chosen is never run through the model: prompt + new - 1 positions are cached.
    if (static_cast<std::int64_t>(p.size()) + max_new - 1 > max_seq_)
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("prompt {} has {} tokens; with {} new tokens the KV cache needs {} positions, more "
                                "than the {} it holds (max_seq_len)",
                                b, p.size(), max_new, p.size() + max_new - 1, max_seq_));
    for (std::size_t i = 0; i < p.size(); ++i)
      if (p[i] < 0 || p[i] >= vocab_)
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("prompt {} token {} is id {}, outside the vocabulary [0, {})", b, i, p[i], vocab_));
  }
  return Status::ok();
}

Status Engine::Impl::copy_logits_to_host(int rows, float* dst) {
  const std::size_t n = static_cast<std::size_t>(rows) * vocab_;
  std::vector<std::uint16_t> raw(n);
  TUNABLE_CUDA_CHECK(cudaMemcpyAsync(raw.data(), LOGITS_, n * 2, cudaMemcpyDeviceToHost, stream_));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (std::size_t i = 0; i < n; ++i) {
    if (elem_ == Elem::kF16) {
      __half_raw hr;
      hr.x = raw[i];
      dst[i] = __half2float(__half(hr));
    } else {
      dst[i] = bf16_to_float(raw[i]);
    }
  }
  return Status::ok();
}

/// Runs the prompts through the model in passes of at most prefill_chunk rows (a prompt may span
/// passes: its later rows attend to the cache its earlier ones wrote). Without logits_all, each
/// sequence's last row is gathered into row `seq` of the output projection's input as its pass
/// ends, and the first new token of every sequence is chosen after the last pass.
Status Engine::Impl::prefill(const std::vector<std::vector<std::int32_t>>& prompts, bool logits_all,
                             std::vector<float>* logits) {
  const int B = static_cast<int>(prompts.size());
  const int C = opts_.prefill_chunk;
  std::size_t seq = 0, off = 0;
  while (seq < prompts.size()) {
    std::vector<int> ids, pos, sq, gather;
    std::vector<engine::Segment> segs;
    int max_len = 0;
    while (seq < prompts.size() && static_cast<int>(ids.size()) < C) {
      const auto& p = prompts[seq];
      const int take = static_cast<int>(std::min<std::size_t>(C - ids.size(), p.size() - off));
      segs.push_back({static_cast<int>(ids.size()), take, static_cast<int>(seq), static_cast<int>(off)});
      max_len = std::max(max_len, take);
      for (int i = 0; i < take; ++i) {
        ids.push_back(p[off + i]);
        pos.push_back(static_cast<int>(off + i));
        sq.push_back(static_cast<int>(seq));
      }
      off += take;
      if (off == p.size()) {
        gather.push_back(static_cast<int>(ids.size()) - 1);
        seq++;
        off = 0;
      }
    }
    const int T = static_cast<int>(ids.size());
    TUNABLE_RETURN_IF_ERROR(upload_ints(ids, ids_));
    TUNABLE_RETURN_IF_ERROR(upload_ints(pos, tok_pos_));
    TUNABLE_RETURN_IF_ERROR(upload_ints(sq, tok_seq_));
    std::vector<int> seg_ints(segs.size() * 4);
    std::memcpy(seg_ints.data(), segs.data(), segs.size() * sizeof(engine::Segment));
    TUNABLE_RETURN_IF_ERROR(upload_ints(seg_ints, reinterpret_cast<int*>(segments_)));
    Pass p;
    p.rows = T;
    p.segments = static_cast<int>(segs.size());
    p.max_segment_len = max_len;
    p.logits_all = logits_all;
    p.logit_rows = 0;
    TUNABLE_RETURN_IF_ERROR(forward(p, kAllKinds, nullptr));
    if (logits_all) {
      for (int r0 = 0; r0 < T; r0 += logit_rows_cap_) {
        const int n = std::min(logit_rows_cap_, T - r0);
        TUNABLE_RETURN_IF_ERROR(
            project_logits(static_cast<char*>(X_) + static_cast<std::size_t>(r0) * h_ * esize_, n, w8a8(T)));
        const std::size_t at = logits->size();
        logits->resize(at + static_cast<std::size_t>(n) * vocab_);
        TUNABLE_RETURN_IF_ERROR(copy_logits_to_host(n, logits->data() + at));
      }
    } else if (!gather.empty()) {
      // Each finished sequence's last (normalized) row into LIN at the sequence's index.
      const int first = static_cast<int>(seq) - static_cast<int>(gather.size());
      TUNABLE_RETURN_IF_ERROR(upload_ints(gather, gather_));
      TUNABLE_RETURN_IF_ERROR(launch_status(
          engine::launch_gather_rows(elem_, X_, gather_, static_cast<char*>(LIN_) + static_cast<std::size_t>(first) * h_ * esize_,
                                     static_cast<int>(gather.size()), static_cast<int>(h_), stream_),
          "last-row gather"));
    }
  }
  (void)B;
  return Status::ok();
}

Status Engine::Impl::prompt_logits(const std::vector<std::int32_t>& prompt, std::vector<float>* logits) {
  if (logits == nullptr) return Status(StatusCode::kInvalidArgument, "prompt_logits: null output");
  TUNABLE_RETURN_IF_ERROR(check_prompts({prompt}, 0));
  logits->clear();
  return prefill({prompt}, true, logits);
}

Status Engine::Impl::generate(const std::vector<std::vector<std::int32_t>>& prompts, const GenerateParams& params,
                              const std::function<bool(const std::vector<std::int32_t>&)>& on_step,
                              GenerateStats* stats) {
  if (params.max_new_tokens < 1) return Status(StatusCode::kInvalidArgument, "max_new_tokens must be >= 1");
  const SamplingParams& s = params.sampling;
  if (!(s.temperature >= 0.f) || !std::isfinite(s.temperature))
    return Status(StatusCode::kInvalidArgument, fmt::format("temperature must be finite and >= 0 (got {})", s.temperature));
  if (s.top_k < 0) return Status(StatusCode::kInvalidArgument, fmt::format("top_k must be >= 0 (got {})", s.top_k));
  if (!(s.top_p > 0.f && s.top_p <= 1.f))
    return Status(StatusCode::kInvalidArgument, fmt::format("top_p must be in (0, 1] (got {})", s.top_p));
  TUNABLE_RETURN_IF_ERROR(check_prompts(prompts, params.max_new_tokens));
  const int B = static_cast<int>(prompts.size());
  if (s.temperature > 0.f) {
    // Read by the sampler in every step; the graphs stay the same for any settings.
    engine::SampleSettings set{1.f / s.temperature, s.top_k, s.top_p, static_cast<unsigned long long>(s.seed)};
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(sampling_, &set, sizeof set, cudaMemcpyHostToDevice, stream_));
    TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `set` lives on this stack
  }
  // Tune and capture before the prefill: the warm-up step writes cache rows the prefill rewrites.
  if (opts_.cuda_graphs) {
    cudaGraphExec_t g = nullptr;
    TUNABLE_RETURN_IF_ERROR(graph_for(B, s, kAllKinds, &g));
  } else {
    TUNABLE_RETURN_IF_ERROR(warm_decode(B, s));
  }
  GenerateStats st;
  cudaEvent_t t0 = events_[0], t1 = events_[1], t2 = events_[2];
  TUNABLE_CUDA_CHECK(cudaEventRecord(t0, stream_));
  TUNABLE_RETURN_IF_ERROR(prefill(prompts, false, nullptr));
  // The first token: positions hold each prompt's last position, which the choice advances.
  std::vector<int> last(B);
  for (int b = 0; b < B; ++b) last[b] = static_cast<int>(prompts[b].size()) - 1;
  TUNABLE_RETURN_IF_ERROR(upload_ints(last, positions_));
  TUNABLE_RETURN_IF_ERROR(project_logits(LIN_, B, w8a8(B)));  // rows of the final norm, 16-bit whatever made them
  TUNABLE_RETURN_IF_ERROR(choose_tokens(LOGITS_, B, s));
  TUNABLE_CUDA_CHECK(cudaEventRecord(t1, stream_));

  // Token read-back: a ring of pinned slots, one event each; the host reads step i while step i + 1
  // runs.
  constexpr int kRing = 8;
  int* slots = reinterpret_cast<int*>(host_);  // the first half is free once the weights are up
  std::vector<cudaEvent_t> ready(kRing, nullptr);
  struct Cleanup {
    std::vector<cudaEvent_t>& v;
    ~Cleanup() {
      for (cudaEvent_t e : v)
        if (e) (void)cudaEventDestroy(e);
    }
  } cleanup{ready};  // before the events exist: a failed creation frees the ones made
  for (auto& e : ready) TUNABLE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto enqueue_copy = [&](int step) -> Status {
    TUNABLE_CUDA_CHECK(cudaMemcpyAsync(slots + (step % kRing) * B, ids_, B * sizeof(int), cudaMemcpyDeviceToHost, stream_));
    TUNABLE_CUDA_CHECK(cudaEventRecord(ready[step % kRing], stream_));
    return Status::ok();
  };
  std::vector<float> step_logits;
  auto keep = [&]() -> Status {
    if (!params.keep_logits) return Status::ok();
    step_logits.resize(static_cast<std::size_t>(B) * vocab_);
    TUNABLE_RETURN_IF_ERROR(copy_logits_to_host(B, step_logits.data()));
    st.logits.insert(st.logits.end(), step_logits.begin(), step_logits.end());
    return Status::ok();
  };
  TUNABLE_RETURN_IF_ERROR(enqueue_copy(0));
  TUNABLE_RETURN_IF_ERROR(keep());
  std::vector<bool> finished(B, false);
  std::vector<std::int32_t> tokens(B);
  const auto is_eos = [&](int t) {
    return std::find(info_.eos_token_ids.begin(), info_.eos_token_ids.end(), t) != info_.eos_token_ids.end();
  };
  int delivered = 0, enqueued = 1;
  bool stop = false;
  bool decode_started = false;
  auto enqueue_step = [&]() -> Status {
    if (!decode_started) {
      TUNABLE_CUDA_CHECK(cudaEventRecord(t1, stream_));  // the prefill ends where decoding starts
      decode_started = true;
    }
    TUNABLE_RETURN_IF_ERROR(decode_step(B, s));
    TUNABLE_RETURN_IF_ERROR(enqueue_copy(enqueued));
    ++enqueued;
    return Status::ok();
  };
  while (delivered < params.max_new_tokens && !stop) {
    // Keep one step ahead of the host (never past the last step the cache has room for).
    if (enqueued < params.max_new_tokens && enqueued <= delivered + 1 && !params.keep_logits)
      TUNABLE_RETURN_IF_ERROR(enqueue_step());
    TUNABLE_CUDA_CHECK(cudaEventSynchronize(ready[delivered % kRing]));
    const int* got = slots + (delivered % kRing) * B;
    bool all_done = true;
    for (int b = 0; b < B; ++b) {
      tokens[b] = finished[b] ? -1 : got[b];
      if (!finished[b] && !params.ignore_eos && is_eos(got[b])) finished[b] = true;
      all_done = all_done && finished[b];
    }
    ++delivered;
    if (on_step && !on_step(tokens)) stop = true;
    if (all_done && !params.ignore_eos) stop = true;
    if (params.keep_logits && !stop && enqueued < params.max_new_tokens) {
      // Each step's logits are read before the next step overwrites them.
      TUNABLE_RETURN_IF_ERROR(enqueue_step());
      TUNABLE_RETURN_IF_ERROR(keep());
    }
  }
  TUNABLE_CUDA_CHECK(cudaEventRecord(t2, stream_));
  TUNABLE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  float pre = 0, dec = 0;
  TUNABLE_CUDA_CHECK(cudaEventElapsedTime(&pre, t0, t1));
  TUNABLE_CUDA_CHECK(cudaEventElapsedTime(&dec, t1, t2));
  st.steps = delivered;
  st.decode_ms = decode_started ? dec : 0.0;
  st.prefill_ms = pre;
  if (!decode_started) st.prefill_ms += dec;
  if (stats) *stats = std::move(st);
  return Status::ok();
}

// ---- benchmark -------------------------------------------------------------------------------------

Status Engine::Impl::benchmark(int batch, int prompt_len, int new_tokens, int runs, Engine::BenchResult* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "benchmark: null output");
  if (batch < 1 || prompt_len < 1 || new_tokens < 2 || runs < 1)
    return Status(StatusCode::kInvalidArgument, "benchmark: batch, prompt_len, runs >= 1 and new_tokens >= 2 required");
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(vocab_) - 1);
  std::vector<std::vector<std::int32_t>> prompts(batch, std::vector<std::int32_t>(prompt_len));
  for (auto& p : prompts)
    for (auto& t : p) t = pick(rng);
  GenerateParams gp;
  gp.max_new_tokens = new_tokens;
  gp.ignore_eos = true;
  std::vector<double> pre, dec;
  for (int r = 0; r < runs + 1; ++r) {  // the first run warms up (tuning, capture)
    GenerateStats st;
    TUNABLE_RETURN_IF_ERROR(generate(prompts, gp, nullptr, &st));
    if (r == 0) continue;
    pre.push_back(st.prefill_ms);
    dec.push_back(st.decode_ms / (st.steps - 1));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  out->batch = batch;
  out->prompt_len = prompt_len;
  out->new_tokens = new_tokens;
  out->prefill_ms = median(pre);
  out->decode_ms_per_step = median(dec);
  // Bytes a step must read: every weight once (the embedding table only through its rows unless it
  // is also the output projection) and the KV cache up to the mean position.
  std::size_t bytes = info_.weight_bytes;
  if (!cfg_.tie_word_embeddings) bytes -= static_cast<std::size_t>(vocab_ * h_) * esize_;
  const double mean_pos = prompt_len + new_tokens / 2.0;
  bytes += static_cast<std::size_t>(2.0 * cfg_.num_layers * batch * nkv_ * hd_ * esize_ * mean_pos);
  out->bytes_per_step = bytes;

  // Each kind's launches alone, replayed as a graph at the mean position. With FP8 weights at <= 8
  // rows the norms run inside the GEMMs (counted as GEMM; "norm" is the final norm alone), and the
  // GEMM-only graph adds into the residual stream on every replay with no embedding to reset it: the
  // values drift, the times do not (the kernels' work does not depend on them).
  out->kind_ms_per_step.clear();
  SamplingParams greedy;
  for (const auto& [kind, name] : kKindNames) {
    if (kind == kQuantKind && !w8a8(batch)) continue;  // nothing of that kind in this step
    std::vector<int> pos(batch, static_cast<int>(mean_pos));
    TUNABLE_RETURN_IF_ERROR(upload_ints(pos, positions_));
    cudaGraphExec_t g = nullptr;
    TUNABLE_RETURN_IF_ERROR(graph_for(batch, greedy, kind, &g));
    constexpr int kReplays = 20;
    for (int i = 0; i < 3; ++i) TUNABLE_CUDA_CHECK(cudaGraphLaunch(g, stream_));
    TUNABLE_CUDA_CHECK(cudaEventRecord(events_[0], stream_));
    for (int i = 0; i < kReplays; ++i) {
      TUNABLE_CUDA_CHECK(cudaGraphLaunch(g, stream_));
    }
    TUNABLE_CUDA_CHECK(cudaEventRecord(events_[1], stream_));
    TUNABLE_CUDA_CHECK(cudaEventSynchronize(events_[1]));
    float ms = 0;
    TUNABLE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[1]));
    out->kind_ms_per_step.emplace_back(name, ms / kReplays);
  }
  return Status::ok();
}

// ---- public ----------------------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Status Engine::load(const std::string& model_dir, const EngineOptions& options, std::unique_ptr<Engine>* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "Engine::load: null output");
  auto impl = std::make_unique<Impl>();
  TUNABLE_RETURN_IF_ERROR(impl->load(model_dir, options));
  out->reset(new Engine(std::move(impl)));
  return Status::ok();
}

const ModelInfo& Engine::info() const { return impl_->info_; }

// Every entry point makes the engine's device current for its calls (a caller's thread may have
// another one current, or none set yet) and restores the caller's afterwards.
Status Engine::generate(const std::vector<std::vector<std::int32_t>>& prompts, const GenerateParams& params,
                        const std::function<bool(const std::vector<std::int32_t>&)>& on_step, GenerateStats* stats) {
  DeviceGuard guard;
  TUNABLE_RETURN_IF_ERROR(guard.set(impl_->device()));
  return impl_->generate(prompts, params, on_step, stats);
}

Status Engine::prompt_logits(const std::vector<std::int32_t>& prompt, std::vector<float>* logits) {
  DeviceGuard guard;
  TUNABLE_RETURN_IF_ERROR(guard.set(impl_->device()));
  return impl_->prompt_logits(prompt, logits);
}

Status Engine::benchmark(int batch, int prompt_len, int new_tokens, int runs, BenchResult* out) {
  DeviceGuard guard;
  TUNABLE_RETURN_IF_ERROR(guard.set(impl_->device()));
  return impl_->benchmark(batch, prompt_len, new_tokens, runs, out);
}

}  // namespace tunable
