// Model files for the decode engine: safetensors headers (every bad case named, fuzzed), config.json
// of each supported family, the tensors a configuration needs, the sharded index.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/model_dir.hpp"
#include "model/safetensors.hpp"
#include "test_util.hpp"

namespace tunable::model {
namespace {

std::vector<unsigned char> file_of(const std::string& header, std::size_t data_bytes, std::uint64_t claimed = ~0ull) {
  const std::uint64_t n = claimed == ~0ull ? header.size() : claimed;
  std::vector<unsigned char> f(8);
  for (int i = 0; i < 8; ++i) f[i] = static_cast<unsigned char>(n >> (8 * i));
  f.insert(f.end(), header.begin(), header.end());
  for (std::size_t i = 0; i < data_bytes; ++i) f.push_back(static_cast<unsigned char>(i * 7));
  return f;
}

Status parse(const std::vector<unsigned char>& f, StHeader* h) { return parse_safetensors(f.data(), f.size(), "m.st", h); }

const char* kGood =
    R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
    R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"e":{"dtype":"F16","shape":[0],"data_offsets":[28,28]}})";

TEST(Safetensors, AValidHeaderIsReadInDataOrder) {
  StHeader h;
  ASSERT_TRUE(parse(file_of(kGood, 28), &h).is_ok());
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[1].name, "b");
  EXPECT_EQ(h.tensors[1].dtype, StDtype::kBF16);
  EXPECT_EQ(h.tensors[1].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.data_offset, 8 + std::strlen(kGood));
}

TEST(Safetensors, EveryBadHeaderIsNamed) {
  struct Case {
    std::vector<unsigned char> file;
    const char* says;
  };
  const std::string one = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::vector<Case> cases = {
      {{1, 2, 3}, "too short for the 8-byte header length"},
      {file_of(one, 8, 1000), "header length 1000 runs past the end of the file"},
      {file_of(one, 8, 1ull << 40), "over the"},
      {file_of("{\"w\":", 0), "not valid JSON"},
      {file_of("[1,2]", 0), "not a JSON object"},
      {file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 16),
       "tensor 'w' appears twice"},
      {file_of(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8), "tensor 'w': unknown dtype 'Q4'"},
      {file_of(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), "tensor 'w': no dtype"},
      {file_of(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8), "tensor 'w': no shape"},
      {file_of(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "not a non-negative integer"},
      {file_of(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8), "not a non-negative integer"},
      {file_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})", 8),
       "more bytes than a file can hold"},
      {file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "data_offsets is not [begin, end]"},
      {file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "end before they begin"},
      {file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "run past the data (4 bytes)"},
      {file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "hold 8 bytes, shape [3] of F32 needs 12"},
      {file_of(R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       "tensors 'v' [0, 8] and 'w' [4, 12] share bytes"},
      {file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", 8), "unknown field 'extra'"},
      {file_of(R"({"__metadata__":{"k":1}})", 0), "__metadata__ entry 'k' is not a string"},
      {file_of("{\"w\xff\":1}", 0), "not valid JSON"},
  };
  for (const Case& c : cases) {
    StHeader h;
    const Status st = parse(c.file, &h);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << c.says << ": " << st.to_string();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_EQ(st.message().rfind("m.st: ", 0), 0u) << st.message();  // the file is named first
    EXPECT_TRUE(h.tensors.empty());
  }
}

// Random damage to a valid file: the parser answers (a header or an error), never reads outside the
// bytes (run under the sanitizers in CI builds that enable them) and never throws.
TEST(Safetensors, FuzzedHeadersNeverCrash) {
  const std::vector<unsigned char> good = file_of(kGood, 28);
  std::mt19937 rng(11);
  int ok = 0, refused = 0;
  for (int it = 0; it < 4000; ++it) {
    std::vector<unsigned char> f = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0: f[rng() % f.size()] = static_cast<unsigned char>(rng()); break;               // flip a byte
        case 1: f.resize(rng() % (f.size() + 1)); break;                                        // truncate
        case 2: if (f.size() > 9) f.erase(f.begin() + 8 + rng() % (f.size() - 8)); break;       // drop a byte
        default: f.insert(f.begin() + rng() % (f.size() + 1), static_cast<unsigned char>("{}[],:\"0"[rng() % 8]));
      }
      if (f.empty()) break;
    }
    // A private copy of exactly this size, so an over-read is a read past an allocation.
    std::unique_ptr<unsigned char[]> exact(new unsigned char[f.size() + 1]);
    std::memcpy(exact.get(), f.data(), f.size());
    StHeader h;
    const Status st = parse_safetensors(exact.get(), f.size(), "fuzz", &h);
    if (st.is_ok()) {
      ++ok;
      for (const StTensor& t : h.tensors) ASSERT_LE(h.data_offset + t.end, f.size());
    } else {
      ++refused;
      ASSERT_EQ(st.code(), StatusCode::kParseError) << st.to_string();
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(ok, 0);  // some edits land in the data, which the header does not describe
}

TEST(Safetensors, FilesAreMappedAndMissingOnesNamed) {
  test::TempDir dir;
  const auto bytes = file_of(kGood, 28);
  std::ofstream(dir.file("m.safetensors"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                                    static_cast<std::streamsize>(bytes.size()));
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open(dir.file("m.safetensors"), &f).is_ok());
  const StTensor* a = f->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(f->data(*a)[1], 7);  // the data section's second byte
  EXPECT_EQ(f->find("zz"), nullptr);
  const Status missing = SafetensorsFile::open(dir.file("none.safetensors"), &f);
  EXPECT_EQ(missing.code(), StatusCode::kIoError);
  EXPECT_NE(missing.message().find("none.safetensors"), std::string::npos);
  const Status isdir = SafetensorsFile::open(dir.path(), &f);
  EXPECT_EQ(isdir.code(), StatusCode::kIoError) << isdir.to_string();
  test::write_text(dir.file("empty.safetensors"), "");
  EXPECT_EQ(SafetensorsFile::open(dir.file("empty.safetensors"), &f).code(), StatusCode::kParseError);
}

const char* kLlama3 = R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":128256,
  "hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,
  "num_key_value_heads":8,"max_position_embeddings":131072,"rms_norm_eps":1e-05,"rope_theta":500000.0,
  "rope_scaling":{"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
  "original_max_position_embeddings":8192,"rope_type":"llama3"},"tie_word_embeddings":false,
  "torch_dtype":"bfloat16","hidden_act":"silu"})";

TEST(ModelConfig, FamiliesAreRecognisedWithTheirConventions) {
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(kLlama3, "config.json", &c).is_ok());
  EXPECT_EQ(c.family, Family::kLlama);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_TRUE(c.rope_scaling.llama3);
  EXPECT_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_FALSE(c.gelu_tanh || c.gemma_norm || c.qkv_bias || c.tie_word_embeddings);

  // transformers 5 moves rope_theta and the scaling into rope_parameters.
  const char* llama3_v5 = R"({"architectures":["LlamaForCausalLM"],"vocab_size":1000,"hidden_size":256,
    "intermediate_size":512,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,
    "rope_parameters":{"rope_type":"llama3","rope_theta":500000.0,"factor":8.0,"low_freq_factor":1.0,
    "high_freq_factor":4.0,"original_max_position_embeddings":64}})";
  ASSERT_TRUE(parse_model_config(llama3_v5, "config.json", &c).is_ok());
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.rope_scaling.llama3);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 64);
  const char* default_v5 = R"({"model_type":"llama","vocab_size":1000,"hidden_size":256,"intermediate_size":512,
    "num_hidden_layers":2,"num_attention_heads":2,"rope_parameters":{"rope_type":"default","rope_theta":1e6}})";
  ASSERT_TRUE(parse_model_config(default_v5, "config.json", &c).is_ok());
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_FALSE(c.rope_scaling.llama3);

  const char* gemma = R"({"architectures":["GemmaForCausalLM"],"vocab_size":256000,"hidden_size":2048,
    "intermediate_size":16384,"num_hidden_layers":18,"num_attention_heads":8,"num_key_value_heads":1,
    "head_dim":256,"hidden_act":"gelu","rms_norm_eps":1e-06})";
  ASSERT_TRUE(parse_model_config(gemma, "config.json", &c).is_ok());
  EXPECT_EQ(c.family, Family::kGemma);
  EXPECT_TRUE(c.gelu_tanh && c.gemma_norm && c.scale_embeddings && c.tie_word_embeddings);
  EXPECT_EQ(expected_tensors(c).count("lm_head.weight"), 0u);

  const char* qwen = R"({"architectures":["Qwen2ForCausalLM"],"vocab_size":1000,"hidden_size":64,
    "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2})";
  ASSERT_TRUE(parse_model_config(qwen, "config.json", &c).is_ok());
  EXPECT_TRUE(c.qkv_bias);
  const char* qwen_window = R"({"architectures":["Qwen2ForCausalLM"],"vocab_size":1000,"hidden_size":64,
    "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"sliding_window":4096,
    "use_sliding_window":false})";
  ModelConfig w;
  ASSERT_TRUE(parse_model_config(qwen_window, "config.json", &w).is_ok());
  EXPECT_EQ(w.sliding_window, 0);  // present but switched off
  EXPECT_FALSE(c.o_bias);
  const auto t = expected_tensors(c);
  EXPECT_EQ(t.at("model.layers.1.self_attn.k_proj.bias"), (std::vector<std::int64_t>{32}));
  EXPECT_EQ(t.count("model.layers.1.self_attn.o_proj.bias"), 0u);

  const char* mistral = R"({"model_type":"mistral","vocab_size":1000,"hidden_size":64,"intermediate_size":128,
    "num_hidden_layers":2,"num_attention_heads":4,"sliding_window":4096})";
  ASSERT_TRUE(parse_model_config(mistral, "config.json", &c).is_ok());
  EXPECT_EQ(c.family, Family::kMistral);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.sliding_window, 4096);
}

TEST(ModelConfig, UnsupportedAndMalformedConfigsAreNamed) {
  struct Case {
    std::string text;
    StatusCode code;
    const char* says;
  };
  const std::string base = R"("vocab_size":100,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4)";
  const std::vector<Case> cases = {
      {"{", StatusCode::kParseError, "not valid JSON"},
      {"[]", StatusCode::kParseError, "not a JSON object"},
      {R"({"architectures":["GPT2LMHeadModel"],"model_type":"gpt2"})", StatusCode::kNotSupported,
       "architecture 'GPT2LMHeadModel' (model_type 'gpt2') is not supported"},
      {R"({"model_type":"llama","hidden_size":64})", StatusCode::kParseError, "no vocab_size"},
      {"{\"model_type\":\"llama\"," + base + ",\"num_key_value_heads\":3}", StatusCode::kParseError,
       "not a multiple of num_key_value_heads 3"},
      {R"({"model_type":"llama","vocab_size":100,"hidden_size":60,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":8})",
       StatusCode::kParseError, "hidden_size 60 is not a multiple of num_attention_heads 8"},
      {"{\"model_type\":\"llama\"," + base + ",\"hidden_size\":-64}", StatusCode::kParseError,
       "hidden_size is -64, not a positive integer"},
      {"{\"model_type\":\"llama\"," + base + ",\"rms_norm_eps\":0}", StatusCode::kParseError, "rms_norm_eps is 0"},
      {"{\"model_type\":\"llama\"," + base + ",\"hidden_act\":\"relu\"}", StatusCode::kNotSupported,
       "activation 'relu' is not supported"},
      {"{\"model_type\":\"llama\"," + base + ",\"rope_scaling\":{\"type\":\"yarn\",\"factor\":4}}",
       StatusCode::kNotSupported, "rope_scaling type 'yarn' is not supported"},
      {"{\"model_type\":\"llama\"," + base + ",\"rope_parameters\":{\"rope_type\":\"yarn\",\"factor\":4}}",
       StatusCode::kNotSupported, "rope_parameters type 'yarn' is not supported"},
      {"{\"model_type\":\"llama\"," + base + ",\"rope_parameters\":{\"full_attention\":{\"rope_type\":\"default\"}}}",
       StatusCode::kNotSupported, "rope_parameters per layer type ('full_attention') is not supported"},
      {"{\"model_type\":\"llama\"," + base + ",\"rope_parameters\":{\"rope_theta\":-1}}", StatusCode::kParseError,
       "rope_theta is -1"},
      {"{\"model_type\":\"llama\"," + base + ",\"mlp_bias\":true}", StatusCode::kNotSupported, "mlp_bias"},
      {"{\"model_type\":\"llama\"," + base + ",\"head_dim\":15}", StatusCode::kParseError, "head_dim 15 is odd"},
  };
  for (const Case& c : cases) {
    ModelConfig m;
    const Status st = parse_model_config(c.text, "cfg.json", &m);
    EXPECT_EQ(st.code(), c.code) << c.says << ": " << st.to_string();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_EQ(st.message().rfind("cfg.json: ", 0), 0u) << st.message();
  }
}

TEST(ModelConfig, CheckpointTensorsAreCheckedByNameAndShape) {
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(R"({"model_type":"llama","vocab_size":100,"hidden_size":64,"intermediate_size":128,
    "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2})", "config.json", &c).is_ok());
  auto present = expected_tensors(c);
  EXPECT_EQ(present.size(), 3u + 2 * 9);
  EXPECT_TRUE(check_tensors(c, present, "ckpt").is_ok());
  present["model.layers.0.self_attn.rotary_emb.inv_freq"] = {8};  // older exports: ignored
  EXPECT_TRUE(check_tensors(c, present, "ckpt").is_ok());
  present.erase("model.layers.1.mlp.down_proj.weight");
  present["model.layers.0.self_attn.k_proj.weight"] = {64, 64};
  present["model.layers.2.mlp.up_proj.weight"] = {128, 64};
  const Status st = check_tensors(c, present, "ckpt");
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  for (const char* says : {"3 problem(s)", "missing tensor 'model.layers.1.mlp.down_proj.weight' [64, 128]",
                           "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [64, 64], the configuration "
                           "needs [32, 64]", "unexpected tensor 'model.layers.2.mlp.up_proj.weight'"})
    EXPECT_NE(st.message().find(says), std::string::npos) << says << " in " << st.message();
}

TEST(ModelConfig, ShardIndexNamesFilesInTheDirectoryOnly) {
  std::map<std::string, std::string> wm;
  ASSERT_TRUE(parse_safetensors_index(R"({"metadata":{"total_size":10},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})",
                                      "index.json", &wm).is_ok());
  EXPECT_EQ(wm.at("b"), "model-00002-of-00002.safetensors");
  EXPECT_NE(parse_safetensors_index(R"({"weight_map":{"a":"../etc/passwd"}})", "index.json", &wm).message().find(
                "weight_map['a'] names '../etc/passwd', not a file in the model directory"),
            std::string::npos);
  EXPECT_NE(parse_safetensors_index(R"({"metadata":{}})", "index.json", &wm).message().find("no weight_map"),
            std::string::npos);
  EXPECT_NE(parse_safetensors_index(R"({"weight_map":{"a":3}})", "index.json", &wm).message().find("not a file name"),
            std::string::npos);
}

// A model directory written the way save_pretrained writes one: a tiny Llama, its tensors in bf16.
struct TinyModel {
  test::TempDir dir;
  std::string config = R"({"architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":8,
    "intermediate_size":12,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1})";
  std::map<std::string, std::vector<std::int64_t>> tensors;
  TinyModel() {
    ModelConfig c;
    EXPECT_TRUE(parse_model_config(config, "config.json", &c).is_ok());
    tensors = expected_tensors(c);
    test::write_text(dir.file("config.json"), config);
  }
  // Writes `names` (default: all) into `file` with `dtype`.
  void write(const std::string& file, std::vector<std::string> names = {}, const char* dtype = "BF16") {
    if (names.empty())
      for (const auto& [n, s] : tensors) names.push_back(n);
    std::string h = "{";
    std::uint64_t off = 0;
    const std::uint64_t es = std::string(dtype) == "F32" ? 4 : std::string(dtype) == "I8" ? 1 : 2;
    for (const std::string& n : names) {
      const auto& shape = tensors.at(n);
      std::uint64_t count = 1;
      std::string dims;
      for (std::int64_t d : shape) count *= static_cast<std::uint64_t>(d), dims += (dims.empty() ? "" : ",") + std::to_string(d);
      h += fmt::format("{}\"{}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", h.size() > 1 ? "," : "",
                       n, dtype, dims, off, off + count * es);
      off += count * es;
    }
    h += "}";
    const auto bytes = file_of(h, off);
    std::ofstream(dir.file(file), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
};

TEST(ModelDir, SingleFileAndShardsOpen) {
  TinyModel m;
  m.write("model.safetensors");
  ModelDir d;
  ASSERT_TRUE(open_model_dir(m.dir.path(), &d).is_ok());
  EXPECT_EQ(d.tensors.size(), m.tensors.size());
  EXPECT_EQ(d.config.num_layers, 2);

  TinyModel s;
  std::vector<std::string> first, second;
  std::string wm;
  for (const auto& [n, shape] : s.tensors) {
    (n.find("layers.1.") == std::string::npos ? first : second).push_back(n);
    wm += fmt::format("{}\"{}\":\"{}\"", wm.empty() ? "" : ",", n,
                      n.find("layers.1.") == std::string::npos ? "model-00001-of-00002.safetensors"
                                                               : "model-00002-of-00002.safetensors");
  }
  s.write("model-00001-of-00002.safetensors", first);
  s.write("model-00002-of-00002.safetensors", second);
  test::write_text(s.dir.file("model.safetensors.index.json"), "{\"weight_map\":{" + wm + "}}");
  ASSERT_TRUE(open_model_dir(s.dir.path(), &d).is_ok());
  EXPECT_EQ(d.files.size(), 2u);
  EXPECT_EQ(d.tensors.size(), s.tensors.size());
}

TEST(ModelDir, BadDirectoriesAreNamed) {
  ModelDir d;
  {
    test::TempDir empty;
    const Status st = open_model_dir(empty.path(), &d);
    EXPECT_EQ(st.code(), StatusCode::kIoError);
    EXPECT_NE(st.message().find("no config.json"), std::string::npos) << st.message();
  }
  {
    TinyModel m;  // no weights
    EXPECT_NE(open_model_dir(m.dir.path(), &d).message().find("no model.safetensors"), std::string::npos);
  }
  {
    TinyModel m;
    std::vector<std::string> all;
    for (const auto& [n, s] : m.tensors)
      if (n != "model.norm.weight") all.push_back(n);
    m.write("model.safetensors", all);
    const Status st = open_model_dir(m.dir.path(), &d);
    EXPECT_NE(st.message().find("missing tensor 'model.norm.weight'"), std::string::npos) << st.message();
  }
  {
    TinyModel m;
    m.write("model.safetensors", {}, "I8");
    const Status st = open_model_dir(m.dir.path(), &d);
    EXPECT_EQ(st.code(), StatusCode::kNotSupported);
    EXPECT_NE(st.message().find("is I8; weights must be BF16, F16 or F32"), std::string::npos) << st.message();
  }
  {
    TinyModel m;  // the index names a shard that is not there, then a tensor its shard lacks
    m.write("a.safetensors", {"model.norm.weight"});
    test::write_text(m.dir.file("model.safetensors.index.json"),
                     R"({"weight_map":{"model.norm.weight":"a.safetensors","lm_head.weight":"b.safetensors"}})");
    Status st = open_model_dir(m.dir.path(), &d);
    EXPECT_NE(st.message().find("shard 'b.safetensors' does not exist"), std::string::npos) << st.message();
    test::write_text(m.dir.file("model.safetensors.index.json"),
                     R"({"weight_map":{"model.norm.weight":"a.safetensors","lm_head.weight":"a.safetensors"}})");
    st = open_model_dir(m.dir.path(), &d);
    EXPECT_NE(st.message().find("the index puts tensor 'lm_head.weight' in this shard, which lacks it"),
              std::string::npos) << st.message();
  }
  {
    TinyModel m;  // a tensor in a shard the index does not put there
    m.write("a.safetensors", {"model.norm.weight", "lm_head.weight"});
    test::write_text(m.dir.file("model.safetensors.index.json"), R"({"weight_map":{"model.norm.weight":"a.safetensors"}})");
    const Status st = open_model_dir(m.dir.path(), &d);
    EXPECT_NE(st.message().find("tensor 'lm_head.weight' is in this shard but the index does not put it here"),
              std::string::npos) << st.message();
  }
  {
    TinyModel m;  // a corrupt header is named with its file
    test::write_text(m.dir.file("model.safetensors"), "garbage!");
    const Status st = open_model_dir(m.dir.path(), &d);
    EXPECT_EQ(st.code(), StatusCode::kParseError);
    EXPECT_NE(st.message().find("model.safetensors"), std::string::npos) << st.message();
  }
}

TEST(ModelConfig, SpecialTokensAreReadAsOneIdOrAList) {
  SpecialTokens t;
  ASSERT_TRUE(parse_special_tokens(R"({"eos_token_id":2,"bos_token_id":1})", "c.json", &t).is_ok());
  EXPECT_EQ(t.eos, std::vector<std::int32_t>{2});
  EXPECT_EQ(t.bos, 1);
  ASSERT_TRUE(parse_special_tokens(R"({"eos_token_id":[128001,128009],"bos_token_id":null})", "c.json", &t).is_ok());
  EXPECT_EQ(t.eos, (std::vector<std::int32_t>{128001, 128009}));
  EXPECT_EQ(t.bos, -1);
  ASSERT_TRUE(parse_special_tokens("{}", "c.json", &t).is_ok());
  EXPECT_TRUE(t.eos.empty());
  for (const char* bad : {R"({"eos_token_id":"2"})", R"({"eos_token_id":[1,-3]})", R"({"bos_token_id":1.5})",
                          R"({"eos_token_id":4294967296})", "[1]", "{"}) {
    const Status st = parse_special_tokens(bad, "c.json", &t);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << bad;
    EXPECT_NE(st.message().find("c.json"), std::string::npos) << st.message();
  }
}

TEST(ModelDir, GenerationConfigOverridesTheEndTokens) {
  TinyModel m;
  m.write("model.safetensors");
  ModelDir d;
  ASSERT_TRUE(open_model_dir(m.dir.path(), &d).is_ok());
  EXPECT_TRUE(d.tokens.eos.empty());
  test::write_text(m.dir.file("generation_config.json"), R"({"eos_token_id":[7,9],"bos_token_id":3})");
  ASSERT_TRUE(open_model_dir(m.dir.path(), &d).is_ok());
  EXPECT_EQ(d.tokens.eos, (std::vector<std::int32_t>{7, 9}));
  EXPECT_EQ(d.tokens.bos, 3);
  test::write_text(m.dir.file("generation_config.json"), R"({"eos_token_id":"x"})");
  const Status st = open_model_dir(m.dir.path(), &d);
  EXPECT_NE(st.message().find("generation_config.json"), std::string::npos) << st.message();
}

TEST(ModelDir, AConfigThatIsNotARegularFileIsRefusedWithoutBlocking) {
  TinyModel m;
  m.write("model.safetensors");
  std::remove(m.dir.file("config.json").c_str());
  ASSERT_EQ(::mkfifo(m.dir.file("config.json").c_str(), 0600), 0);
  ModelDir d;
  const Status st = open_model_dir(m.dir.path(), &d);  // a FIFO would block a plain read forever
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tunable::model
