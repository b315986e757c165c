#include "model/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_depth.hpp"

namespace tunable::model {
namespace {

using json = nlohmann::json;

struct Arch {
  const char* architecture;
  const char* model_type;
  Family family;
};
constexpr Arch kArchs[] = {{"LlamaForCausalLM", "llama", Family::kLlama},
                           {"MistralForCausalLM", "mistral", Family::kMistral},
                           {"Qwen2ForCausalLM", "qwen2", Family::kQwen2},
                           {"GemmaForCausalLM", "gemma", Family::kGemma}};

Status parse_error(const std::string& what, const std::string& msg) {
  return Status(StatusCode::kParseError, fmt::format("{}: {}", what, msg));
}

// The text as a JSON object; the error names the file.
Status parse_object(const std::string& text, const std::string& what, json* out) {
  TUNABLE_RETURN_IF_ERROR(check_json_depth(text.data(), text.data() + text.size(), what));
  try {
    *out = json::parse(text);
  } catch (const json::exception& e) {
    return parse_error(what, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!out->is_object()) return parse_error(what, "not a JSON object");
  return Status::ok();
}

// A required positive integer field, at most `max`.
Status positive(const json& j, const char* key, const std::string& what, std::int64_t max, std::int64_t* out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return parse_error(what, fmt::format("no {}", key));
  // An unsigned value past INT64_MAX would read as negative: it is over the limit, said so.
  const bool huge = it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max);
  if (!huge && (!it->is_number_integer() || it->get<std::int64_t>() <= 0))
    return parse_error(what, fmt::format("{} is {}, not a positive integer", key, it->dump()));
  if (huge || it->get<std::int64_t>() > max)
    return parse_error(what, fmt::format("{} is {}, over the limit of {}", key, it->dump(), max));
  *out = it->get<std::int64_t>();
  return Status::ok();
}

// An optional positive number (default kept when absent or null).
Status number(const json& j, const char* key, const std::string& what, double* out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0)
    return parse_error(what, fmt::format("{} is {}, not a positive number", key, it->dump()));
  *out = it->get<double>();
  return Status::ok();
}

// An optional string field ("" when absent or null).
Status str(const json& j, const char* key, const std::string& what, std::string* out) {
  out->clear();
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_string()) return parse_error(what, fmt::format("{} is {}, not a string", key, it->dump()));
  *out = it->get<std::string>();
  return Status::ok();
}

// An optional boolean field (`dflt` when absent or null).
Status flag(const json& j, const char* key, const std::string& what, bool dflt, bool* out) {
  *out = dflt;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean()) return parse_error(what, fmt::format("{} is {}, not true or false", key, it->dump()));
  *out = it->get<bool>();
  return Status::ok();
}

}  // namespace

const char* family_name(Family f) noexcept {
  for (const Arch& a : kArchs)
    if (a.family == f) return a.model_type;
  return "?";
}

Status parse_model_config(const std::string& text, const std::string& what, ModelConfig* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "parse_model_config: null output");
  json j;
  TUNABLE_RETURN_IF_ERROR(parse_object(text, what, &j));
  ModelConfig c;
  // Dispatch on architectures, else model_type.
  std::string model_type, arch;
  TUNABLE_RETURN_IF_ERROR(str(j, "model_type", what, &model_type));
  if (const auto a = j.find("architectures"); a != j.end() && !a->is_null()) {
    if (!a->is_array() || (!a->empty() && !(*a)[0].is_string()))
      return parse_error(what, fmt::format("architectures is {}, not a list of names", a->dump()));
    if (!a->empty()) arch = (*a)[0].get<std::string>();
  }
  const Arch* found = nullptr;
  for (const Arch& x : kArchs)
    if ((!arch.empty() && arch == x.architecture) || (arch.empty() && model_type == x.model_type)) found = &x;
  if (found == nullptr)
    return Status(StatusCode::kNotSupported,
                  fmt::format("{}: architecture '{}' (model_type '{}') is not supported; supported: "
                              "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GemmaForCausalLM",
                              what, arch, model_type));
  c.family = found->family;
  c.architecture = found->architecture;
  TUNABLE_RETURN_IF_ERROR(positive(j, "vocab_size", what, ConfigLimits::kVocabSize, &c.vocab_size));
  TUNABLE_RETURN_IF_ERROR(positive(j, "hidden_size", what, ConfigLimits::kHiddenSize, &c.hidden_size));
  TUNABLE_RETURN_IF_ERROR(positive(j, "intermediate_size", what, ConfigLimits::kIntermediateSize, &c.intermediate_size));
  TUNABLE_RETURN_IF_ERROR(positive(j, "num_hidden_layers", what, ConfigLimits::kLayers, &c.num_layers));
  TUNABLE_RETURN_IF_ERROR(positive(j, "num_attention_heads", what, ConfigLimits::kHeads, &c.num_heads));
  c.num_kv_heads = c.num_heads;
  if (j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null())
    TUNABLE_RETURN_IF_ERROR(positive(j, "num_key_value_heads", what, ConfigLimits::kHeads, &c.num_kv_heads));
  if (c.num_heads % c.num_kv_heads != 0)
    return parse_error(what, fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}",
                                         c.num_heads, c.num_kv_heads));
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    TUNABLE_RETURN_IF_ERROR(positive(j, "head_dim", what, ConfigLimits::kHeadDim, &c.head_dim));
  } else {
    if (c.hidden_size % c.num_heads != 0)
      return parse_error(what, fmt::format("hidden_size {} is not a multiple of num_attention_heads {} (and no "
                                           "head_dim)", c.hidden_size, c.num_heads));
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) return parse_error(what, fmt::format("head_dim {} is odd: RoPE rotates pairs", c.head_dim));
  c.max_position_embeddings = 2048;
  if (j.contains("max_position_embeddings") && !j["max_position_embeddings"].is_null())
    TUNABLE_RETURN_IF_ERROR(positive(j, "max_position_embeddings", what, ConfigLimits::kPositions, &c.max_position_embeddings));
  TUNABLE_RETURN_IF_ERROR(number(j, "rms_norm_eps", what, &c.rms_norm_eps));
  TUNABLE_RETURN_IF_ERROR(number(j, "rope_theta", what, &c.rope_theta));
  TUNABLE_RETURN_IF_ERROR(str(j, "torch_dtype", what, &c.torch_dtype));
  if (c.torch_dtype.empty()) TUNABLE_RETURN_IF_ERROR(str(j, "dtype", what, &c.torch_dtype));

  // The activation: Llama / Mistral / Qwen2 SiLU, Gemma GELU-tanh (Gemma's checkpoints say "gelu"
  // and transformers runs it as the tanh approximation).
  std::string act;
  TUNABLE_RETURN_IF_ERROR(str(j, "hidden_activation", what, &act));
  if (act.empty()) TUNABLE_RETURN_IF_ERROR(str(j, "hidden_act", what, &act));
  if (act.empty()) act = c.family == Family::kGemma ? "gelu_pytorch_tanh" : "silu";
  if (act == "silu" || act == "swish") c.gelu_tanh = false;
  else if (act == "gelu_pytorch_tanh" || act == "gelu_tanh" || (act == "gelu" && c.family == Family::kGemma))
    c.gelu_tanh = true;
  else
    return Status(StatusCode::kNotSupported, fmt::format("{}: activation '{}' is not supported (SiLU or GELU-tanh)",
                                                         what, act));

  // transformers 5 writes `rope_parameters` (rope_type, rope_theta and the scaling's fields in one
  // object); earlier versions a top-level rope_theta and `rope_scaling`. The newer form wins.
  const char* rope_key = "rope_scaling";
  auto rs = j.find("rope_parameters");
  if (rs != j.end() && !rs->is_null()) rope_key = "rope_parameters";
  else rs = j.find("rope_scaling");
  if (rs != j.end() && !rs->is_null()) {
    if (!rs->is_object()) return parse_error(what, fmt::format("{} is not an object", rope_key));
    for (auto it = rs->begin(); it != rs->end(); ++it)
      if (it.value().is_object())
        return Status(StatusCode::kNotSupported,
                      fmt::format("{}: {} per layer type ('{}') is not supported", what, rope_key, it.key()));
    TUNABLE_RETURN_IF_ERROR(number(*rs, "rope_theta", what, &c.rope_theta));
    std::string type;
    TUNABLE_RETURN_IF_ERROR(str(*rs, "rope_type", what, &type));
    if (type.empty()) TUNABLE_RETURN_IF_ERROR(str(*rs, "type", what, &type));
    if (type.empty()) type = "default";
    if (type == "llama3") {
      c.rope_scaling.llama3 = true;
      TUNABLE_RETURN_IF_ERROR(number(*rs, "factor", what, &c.rope_scaling.factor));
      TUNABLE_RETURN_IF_ERROR(number(*rs, "low_freq_factor", what, &c.rope_scaling.low_freq_factor));
      TUNABLE_RETURN_IF_ERROR(number(*rs, "high_freq_factor", what, &c.rope_scaling.high_freq_factor));
      if (rs->contains("original_max_position_embeddings"))
        TUNABLE_RETURN_IF_ERROR(positive(*rs, "original_max_position_embeddings", what, ConfigLimits::kPositions,
                                         &c.rope_scaling.original_max_position_embeddings));
      if (c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor)
        return parse_error(what, fmt::format("{}: high_freq_factor must exceed low_freq_factor", rope_key));
    } else if (type != "default") {
      return Status(StatusCode::kNotSupported,
                    fmt::format("{}: {} type '{}' is not supported (llama3 or none)", what, rope_key, type));
    }
  }
  bool attention_bias = false, mlp_bias = false, use_sliding_window = true;
  TUNABLE_RETURN_IF_ERROR(flag(j, "tie_word_embeddings", what, c.family == Family::kGemma, &c.tie_word_embeddings));
  TUNABLE_RETURN_IF_ERROR(flag(j, "attention_bias", what, false, &attention_bias));
  TUNABLE_RETURN_IF_ERROR(flag(j, "mlp_bias", what, false, &mlp_bias));
  TUNABLE_RETURN_IF_ERROR(flag(j, "use_sliding_window", what, true, &use_sliding_window));
  c.qkv_bias = c.family == Family::kQwen2 || attention_bias;
  c.o_bias = c.family != Family::kQwen2 && attention_bias;
  if (mlp_bias)
    return Status(StatusCode::kNotSupported, fmt::format("{}: mlp_bias is not supported", what));
  c.gemma_norm = c.family == Family::kGemma;
  c.scale_embeddings = c.family == Family::kGemma;
  // Qwen2 configs carry a sliding_window that applies only with use_sliding_window: true.
  // 0 and null both mean none.
  if (const auto sw = j.find("sliding_window");
      sw != j.end() && !sw->is_null() && !(sw->is_number_integer() && *sw == 0) && use_sliding_window)
    TUNABLE_RETURN_IF_ERROR(positive(j, "sliding_window", what, ConfigLimits::kPositions, &c.sliding_window));
  *out = c;
  return Status::ok();
}

Status check_config_against_tensors(const ModelConfig& c,
                                    const std::map<std::string, std::vector<std::int64_t>>& present,
                                    const std::string& config_what) {
  // Layers the tensors hold: one more than the largest N of "model.layers.N." (digits only, so a
  // name cannot make the count overflow).
  std::int64_t layers = 0;
  const std::string prefix = "model.layers.";
  for (const auto& [name, shape] : present) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    std::int64_t n = 0;
    std::size_t i = prefix.size(), digits = 0;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 10; ++i, ++digits) n = n * 10 + (name[i] - '0');
    if (digits > 0 && i < name.size() && name[i] == '.') layers = std::max(layers, n + 1);
  }
  if (layers != c.num_layers)
    return parse_error(config_what, fmt::format("num_hidden_layers is {}, but the checkpoint's tensors hold {} layers",
                                                c.num_layers, layers));
  const auto emb = present.find("model.embed_tokens.weight");
  if (emb != present.end() && emb->second.size() == 2) {
    if (emb->second[0] != c.vocab_size)
      return parse_error(config_what, fmt::format("vocab_size is {}, but model.embed_tokens.weight has {} rows",
                                                  c.vocab_size, emb->second[0]));
    if (emb->second[1] != c.hidden_size)
      return parse_error(config_what, fmt::format("hidden_size is {}, but model.embed_tokens.weight has {} columns",
                                                  c.hidden_size, emb->second[1]));
  }
  return Status::ok();
}

std::map<std::string, std::vector<std::int64_t>> expected_tensors(const ModelConfig& c) {
  std::map<std::string, std::vector<std::int64_t>> t;
  const std::int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  t["model.embed_tokens.weight"] = {c.vocab_size, h};
  t["model.norm.weight"] = {h};
  if (!c.tie_word_embeddings) t["lm_head.weight"] = {c.vocab_size, h};
  for (std::int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    t[p + "input_layernorm.weight"] = {h};
    t[p + "post_attention_layernorm.weight"] = {h};
    t[p + "self_attn.q_proj.weight"] = {q, h};
    t[p + "self_attn.k_proj.weight"] = {kv, h};
    t[p + "self_attn.v_proj.weight"] = {kv, h};
    t[p + "self_attn.o_proj.weight"] = {h, q};
    if (c.qkv_bias) {
      t[p + "self_attn.q_proj.bias"] = {q};
      t[p + "self_attn.k_proj.bias"] = {kv};
      t[p + "self_attn.v_proj.bias"] = {kv};
    }
    if (c.o_bias) t[p + "self_attn.o_proj.bias"] = {h};
    t[p + "mlp.gate_proj.weight"] = {c.intermediate_size, h};
    t[p + "mlp.up_proj.weight"] = {c.intermediate_size, h};
    t[p + "mlp.down_proj.weight"] = {h, c.intermediate_size};
  }
  return t;
}

namespace {
std::string dims(const std::vector<std::int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}
}  // namespace

Status check_tensors(const ModelConfig& c, const std::map<std::string, std::vector<std::int64_t>>& present,
                     const std::string& what) {
  const auto want = expected_tensors(c);
  std::vector<std::string> problems;
  for (const auto& [name, shape] : want) {
    const auto it = present.find(name);
    if (it == present.end()) problems.push_back(fmt::format("missing tensor '{}' {}", name, dims(shape)));
    else if (it->second != shape)
      problems.push_back(fmt::format("tensor '{}' has shape {}, the configuration needs {}", name, dims(it->second),
                                     dims(shape)));
  }
  for (const auto& [name, shape] : present) {
    if (want.count(name)) continue;
    if (name == "lm_head.weight" && c.tie_word_embeddings) continue;  // tied: the embeddings serve
    if (name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // older exports carry it
    problems.push_back(fmt::format("unexpected tensor '{}' {}", name, dims(shape)));
  }
  if (problems.empty()) return Status::ok();
  std::string msg = fmt::format("{}: {} problem(s) with the checkpoint's tensors for {} ({} layers): ", what,
                                problems.size(), c.architecture, c.num_layers);
  for (std::size_t i = 0; i < problems.size() && i < 5; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > 5) msg += "; ...";
  return Status(StatusCode::kParseError, msg);
}

Status parse_safetensors_index(const std::string& text, const std::string& what,
                               std::map<std::string, std::string>* weight_map) {
  if (weight_map == nullptr) return Status(StatusCode::kInvalidArgument, "parse_safetensors_index: null output");
  weight_map->clear();
  json j;
  TUNABLE_RETURN_IF_ERROR(parse_object(text, what, &j));
  const auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) return parse_error(what, "no weight_map object");
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it.value().is_string())
      return parse_error(what, fmt::format("weight_map['{}'] is not a file name", it.key()));
    const std::string f = it.value().get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      return parse_error(what, fmt::format("weight_map['{}'] names '{}', not a file in the model directory",
                                           it.key(), f));
    (*weight_map)[it.key()] = f;
  }
  if (weight_map->empty()) return parse_error(what, "weight_map is empty");
  return Status::ok();
}

Status parse_special_tokens(const std::string& text, const std::string& what, SpecialTokens* out) {
  if (out == nullptr) return Status(StatusCode::kInvalidArgument, "parse_special_tokens: null output");
  json j;
  TUNABLE_RETURN_IF_ERROR(parse_object(text, what, &j));
  SpecialTokens t;
  auto id = [&](const json& v, const char* field, std::int32_t* dst) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > INT32_MAX)
      return parse_error(what, fmt::format("{} holds {}, not a token id", field, v.dump()));
    *dst = static_cast<std::int32_t>(v.get<std::int64_t>());
    return Status::ok();
  };
  if (auto e = j.find("eos_token_id"); e != j.end() && !e->is_null()) {
    const json list = e->is_array() ? *e : json::array({*e});
    for (const json& v : list) {
      std::int32_t x = 0;
      TUNABLE_RETURN_IF_ERROR(id(v, "eos_token_id", &x));
      t.eos.push_back(x);
    }
  }
  if (auto b = j.find("bos_token_id"); b != j.end() && !b->is_null())
    TUNABLE_RETURN_IF_ERROR(id(*b, "bos_token_id", &t.bos));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace tunable::model
