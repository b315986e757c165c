// The decode engine: a Hugging Face model directory (Llama, Mistral, Qwen2, Gemma) loaded onto one
// GPU and run token by token on the library's kernels, every GEMM and fused op through the tuning
// runtime, decode steps replayed as CUDA graphs over a static KV cache.
//
//   tunable::EngineOptions o;
//   o.max_seq_len = 2048;
//   std::unique_ptr<tunable::Engine> e;
//   tunable::throw_if_error(tunable::Engine::load("/models/gemma-2b", o, &e));
//   tunable::GenerateParams g;
//   g.max_new_tokens = 64;
//   e->generate({prompt_ids}, g, [](const std::vector<std::int32_t>& step) { ...; return true; }, nullptr);
//
// Errors are Status values naming the problem (a bad model file and the tensor, an unsupported
// architecture, a prompt longer than the cache, too little GPU memory); nothing aborts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tunable/options.hpp"
#include "tunable/status.hpp"

namespace tunable {

struct EngineOptions {
  int device = 0;
  /// Positions the KV cache holds per sequence (prompt + generated); 0: the model's
  /// max_position_embeddings, at most 4096.
  std::int64_t max_seq_len = 0;
  /// Sequences generated together at most (the cache holds this many).
  int max_batch = 1;
  /// Rows of one prefill forward pass; longer prompts are prefilled in chunks.
  int prefill_chunk = 512;
  /// Decode steps as CUDA graphs (one per batch size, captured after its problems are tuned).
  bool cuda_graphs = true;
  /// FP8 e4m3 weights, quantized at load with one scale per output channel (row amax / 448); every
  /// linear layer (and a tied embedding table) then reads half the bytes. Each GEMM input is
  /// quantized per token (the fused norms write it directly) and the GEMM is the rowwise-scaled
  /// ScaledGemm, so no weight is ever dequantized in memory. Norm weights, the KV cache and the
  /// activations between GEMMs keep the model's dtype.
  bool fp8_weights = false;
  /// Tuning runtime options. The engine always looks results up (enabled is forced on); with
  /// `tuning` on, every GEMM and fused-op problem is tuned at its first eager run, before any
  /// capture, and written to the results file for later runs.
  Options tuning;
  /// Progress lines while loading and tuning (none when empty).
  std::function<void(const std::string&)> progress;
};

/// What a loaded model is and what it holds on the GPU.
struct ModelInfo {
  std::string family;        ///< "llama", "mistral", "qwen2", "gemma"
  std::string architecture;  ///< config.json's, e.g. "LlamaForCausalLM"
  std::string dtype;         ///< activations, KV cache and norm weights: "bf16" or "fp16"
  std::string weights;       ///< the linear layers' weights: dtype, or "fp8e4m3" (per-channel scales)
  std::int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_layers = 0;
  std::int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  std::int64_t max_seq_len = 0;
  int max_batch = 0;
  std::vector<std::int32_t> eos_token_ids;  ///< generation_config.json's, else config.json's
  std::int32_t bos_token_id = -1;           ///< -1 when the model names none
  std::size_t weight_bytes = 0;             ///< every weight as stored on the GPU
  std::size_t kv_cache_bytes = 0;
  std::size_t buffer_bytes = 0;             ///< activations, logits, attention partials
};

struct SamplingParams {
  float temperature = 0.f;  ///< 0: greedy (first index of the largest logit)
  int top_k = 0;            ///< 0: off
  float top_p = 1.f;        ///< 1: off
  /// The same seed, prompts and parameters give the same tokens. Draws are keyed by (seed, batch
  /// row, position): a prompt sampled in row 1 of a batch draws differently than alone in row 0.
  std::uint64_t seed = 0;
};

struct GenerateParams {
  int max_new_tokens = 128;
  SamplingParams sampling;
  bool ignore_eos = false;  ///< generate max_new_tokens even past an end-of-sequence token
  /// Copy every step's logits (fp32, [steps][batch][vocab]) into GenerateStats::logits; slow, for
  /// checking against a reference.
  bool keep_logits = false;
};

struct GenerateStats {
  double prefill_ms = 0;         ///< prompt through the model, first token chosen
  double decode_ms = 0;          ///< every later step (host waits included)
  int steps = 0;                 ///< tokens per sequence generated
  std::vector<float> logits;     ///< keep_logits only
};

/// One model on one GPU.
class Engine {
 public:
  /// Opens and validates `model_dir`, checks that weights, cache and buffers fit the GPU's free
  /// memory (the error says what each needs), and uploads the weights.
  static Status load(const std::string& model_dir, const EngineOptions& options, std::unique_ptr<Engine>* out);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& info() const;

  /// Generates for each prompt (token ids; lengths may differ; at most max_batch prompts) until
  /// max_new_tokens, or until every sequence has produced an end-of-sequence token. `on_step`
  /// receives each step's token per sequence as it arrives; returning false stops early.
  Status generate(const std::vector<std::vector<std::int32_t>>& prompts, const GenerateParams& params,
                  const std::function<bool(const std::vector<std::int32_t>&)>& on_step, GenerateStats* stats);

  /// The logits (fp32 copies of the model's own) at every position of `prompt`: [len][vocab].
  Status prompt_logits(const std::vector<std::int32_t>& prompt, std::vector<float>* logits);

  /// Decode benchmark: `batch` random prompts of prompt_len tokens, greedy, new_tokens each,
  /// repeated `runs` times (medians), plus the GPU time per step of each kernel kind (each kind's
  /// kernels replayed alone as a graph; what remains of a step is launch gaps).
  struct BenchResult {
    int batch = 0, prompt_len = 0, new_tokens = 0;
    double prefill_ms = 0, decode_ms_per_step = 0;
    std::size_t bytes_per_step = 0;          ///< weights + the KV cache read at the mean position
    std::vector<std::pair<std::string, double>> kind_ms_per_step;  ///< gemm, attention, norm, ...
  };
  Status benchmark(int batch, int prompt_len, int new_tokens, int runs, BenchResult* out);

  class Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunable
