// A Hugging Face model directory's config.json as the decode engine needs it, and the tensors a
// checkpoint of that configuration must hold. Families: Llama (2, 3, 3.1/3.2 with the llama3 RoPE
// scaling), Mistral, Qwen2 (q/k/v biases) and Gemma (1: 1 + w norms, GELU-tanh, embeddings scaled
// by sqrt(hidden), tied output). Anything else is a clear error naming what is not supported.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tunable/status.hpp"

namespace tunable::model {

enum class Family { kLlama, kMistral, kQwen2, kGemma };
const char* family_name(Family f) noexcept;

struct RopeScaling {
  bool llama3 = false;  ///< rope_scaling.rope_type (or .type) "llama3"; otherwise none
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  std::int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Family family = Family::kLlama;
  std::string architecture;  ///< e.g. "LlamaForCausalLM"
  std::int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_layers = 0;
  std::int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, max_position_embeddings = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;         ///< Qwen2 (and attention_bias in Llama configs)
  bool o_bias = false;           ///< attention_bias in Llama / Mistral configs (Qwen2's o_proj has none)
  bool gemma_norm = false;       ///< y * (1 + w)
  bool scale_embeddings = false; ///< embeddings * sqrt(hidden_size)
  bool gelu_tanh = false;        ///< MLP activation GELU-tanh (else SiLU)
  std::string torch_dtype;       ///< as stored ("bfloat16", "float16", "float32"), may be empty
  std::int64_t sliding_window = 0;  ///< Mistral's, 0 when none
};

/// Plausibility limits on config.json's sizes: far above any released model (the largest have
/// vocabularies near 2^18, hidden sizes near 2^14, 128 layers and heads, head_dim 256), and low enough
/// that every product the engine forms from them stays far inside 64 bits and that the list of
/// expected tensors stays small. A larger value is an error naming the field and its limit.
struct ConfigLimits {
  static constexpr std::int64_t kVocabSize = 1 << 24;
  static constexpr std::int64_t kHiddenSize = 1 << 16;
  static constexpr std::int64_t kIntermediateSize = 1 << 20;
  static constexpr std::int64_t kLayers = 1024;
  static constexpr std::int64_t kHeads = 1024;
  static constexpr std::int64_t kHeadDim = 1024;
  static constexpr std::int64_t kPositions = 1 << 24;  ///< max_position_embeddings, sliding_window
};

/// Parses config.json text; `what` names the file in messages. kNotSupported for an architecture or
/// feature outside the families above, kParseError for a missing or malformed field, a value over
/// its ConfigLimits, or JSON nested deeper than kMaxJsonDepth.
Status parse_model_config(const std::string& text, const std::string& what, ModelConfig* out);

/// The configuration against the checkpoint's tensors (name -> shape) before anything is built from
/// it: num_hidden_layers against the layers the tensors hold, vocab_size and hidden_size against the
/// embeddings. Errors name `config_what` (the config file) and the field.
Status check_config_against_tensors(const ModelConfig& c,
                                    const std::map<std::string, std::vector<std::int64_t>>& present,
                                    const std::string& config_what);

/// Name -> shape of every tensor a checkpoint of `c` holds (lm_head.weight absent when tied).
std::map<std::string, std::vector<std::int64_t>> expected_tensors(const ModelConfig& c);

/// Checks a checkpoint's tensors (name -> shape) against the configuration: every expected tensor
/// present with its shape, nothing unexpected (a tied model may still carry lm_head.weight, which is
/// then ignored). The error names the first problems (up to five) and how many there are.
Status check_tensors(const ModelConfig& c, const std::map<std::string, std::vector<std::int64_t>>& present,
                     const std::string& what);

/// model.safetensors.index.json: tensor name -> shard file name (no path separators allowed).
Status parse_safetensors_index(const std::string& text, const std::string& what,
                               std::map<std::string, std::string>* weight_map);

/// End- and beginning-of-sequence ids as config.json or generation_config.json give them.
struct SpecialTokens {
  std::vector<std::int32_t> eos;  ///< eos_token_id: one id or a list
  std::int32_t bos = -1;          ///< -1: none given
};

/// Reads eos_token_id and bos_token_id (absent or null: none) from a config file's text.
Status parse_special_tokens(const std::string& text, const std::string& what, SpecialTokens* out);

}  // namespace tunable::model
