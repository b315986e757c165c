// A seeded, time-bounded mutation fuzzer for what users and the network hand the engine: the
// safetensors header parser, config.json, tokenizer.json and tokenizer.model loaders, and encode /
// decode on hostile text. Built with AddressSanitizer and UndefinedBehaviorSanitizer (CMake target
// tunable_fuzz_loaders), so an out-of-bounds read, an overflow or an escaped exception ends the run
// with a report; a run that ends by itself has found nothing.
//
//   tunable_fuzz_loaders --seconds 45 --seed 59 --fixtures DIR
//
// The seeds are the inputs that once crashed, hung or exhausted memory (issue 59), valid files, and
// the tokenizer fixtures in DIR (tests/tokenizer/make_fixtures.py). Each iteration mutates one seed
// of one target. The same seed and iteration count replay the same inputs.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/safetensors.hpp"
#include "tokenizer/hf_tokenizer.hpp"

namespace {

using tunable::Status;

std::string st_file(const std::string& header, std::size_t data) {
  std::string f(8, '\0');
  for (int i = 0; i < 8; ++i) f[i] = static_cast<char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
  return f + header + std::string(data, '\x11');
}

std::string nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(rng_() % n) : 0; }
  std::string mutate(std::string s) {
    static const char kJson[] = "{}[],:\"0123456789-.eE\\ntrufalsn";
    const int edits = 1 + static_cast<int>(below(6));
    for (int e = 0; e < edits; ++e) {
      switch (below(7)) {
        case 0: if (!s.empty()) s[below(s.size())] = static_cast<char>(rng_()); break;
        case 1: s.insert(below(s.size() + 1), 1, kJson[below(sizeof kJson - 1)]); break;
        case 2: if (!s.empty()) s.erase(below(s.size()), 1 + below(8)); break;
        case 3: s.resize(below(s.size() + 1)); break;
        case 4: {  // repeat a chunk, which makes long runs and deep nesting
          if (s.empty()) break;
          const std::size_t at = below(s.size()), n = 1 + below(std::min<std::size_t>(64, s.size() - at));
          const std::string chunk = s.substr(at, n);
          for (std::size_t k = below(64); k > 0 && s.size() < (1u << 20); --k) s.insert(at, chunk);
          break;
        }
        case 5: if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 << below(8)); break;
        default: {  // an interesting number where a digit was
          static const char* kNumbers[] = {"0", "-1", "4294967296", "18446744073709551615", "1e308", "1000000000",
                                           "144115188075855872", "NaN", "65537", "2147483648"};
          const std::size_t at = s.find_first_of("0123456789", below(s.size() + 1));
          if (at != std::string::npos) s.replace(at, 1, kNumbers[below(10)]);
        }
      }
    }
    return s;
  }
  std::string hostile_text() {
    static const char* kPieces[] = {"\xff", "\xfe", "\xe2\x80", "\xef\xbf\xbd", "\xf0\x9f\x98", "<s>", "</s>", " ",
                                    "\xe2\x96\x81", "a", "ab", "12345", "\n", "\t", "\xc3\xa9", "\xcc\x81", "\0"};
    std::string t;
    for (std::size_t n = below(200); n > 0; --n) {
      const char* p = kPieces[below(sizeof kPieces / sizeof *kPieces)];
      t.append(p, *p ? std::strlen(p) : 1);
    }
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

struct Counts {
  long runs = 0, accepted = 0;
};

void fuzz_safetensors(const std::string& bytes, Counts* c) {
  // An exact-size copy, so a read past the end is a read past an allocation.
  std::unique_ptr<unsigned char[]> exact(new unsigned char[bytes.size() + 1]);
  std::memcpy(exact.get(), bytes.data(), bytes.size());
  tunable::model::StHeader h;
  if (tunable::model::parse_safetensors(exact.get(), bytes.size(), "fuzz.safetensors", &h).is_ok()) ++c->accepted;
  ++c->runs;
}

void fuzz_config(const std::string& text, Counts* c) {
  using namespace tunable::model;
  ModelConfig cfg;
  SpecialTokens tokens;
  (void)parse_special_tokens(text, "config.json", &tokens);
  ++c->runs;
  if (!parse_model_config(text, "config.json", &cfg).is_ok()) return;
  ++c->accepted;
  auto present = expected_tensors(cfg);  // bounded by the configuration limits
  if (!present.empty()) present.erase(present.begin());
  (void)check_config_against_tensors(cfg, present, "config.json");
  (void)check_tensors(cfg, present, "dir");
}

void use(const tunable::Tokenizer& t, Mutator& m) {
  std::vector<std::int32_t> ids;
  const std::string text = m.hostile_text();
  (void)t.encode(text, m.below(2) == 0, &ids);
  for (std::size_t k = m.below(4); k > 0; --k) ids.push_back(static_cast<std::int32_t>(m.below(t.vocab_size() + 3)) - 1);
  std::string out;
  (void)t.decode(ids, m.below(2) == 0, &out);
  tunable::TokenStreamer s(t, true);
  for (std::int32_t id : ids) (void)s.push(id, &out);
  (void)s.finish(&out);
}

void fuzz_tokenizer(const std::string& bytes, bool sentencepiece, Mutator& m, Counts* c) {
  std::unique_ptr<tunable::Tokenizer> t;
  const Status st = sentencepiece ? tunable::tok::parse_sp_tokenizer(bytes, "tokenizer.model", &t)
                                  : tunable::tok::parse_hf_tokenizer(bytes, "tokenizer.json", &t);
  ++c->runs;
  if (!st.is_ok()) return;
  ++c->accepted;
  for (int k = 0; k < 3; ++k) use(*t, m);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 30;
  std::uint64_t seed = 59;
  long max_iterations = -1;
  std::string fixtures;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--iterations") max_iterations = std::atol(v.c_str());
    else if (k == "--fixtures") fixtures = v;
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--seed N] [--iterations N] [--fixtures DIR]\n", argv[0]);
      return 2;
    }
  }

  const std::string one = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::string many = "{";
  for (int i = 0; i < 2000; ++i) many += fmt::format("{}\"t{}\":{{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[0,0]}}", i ? "," : "", i);
  many += "}";
  const std::vector<std::string> st_seeds = {
      st_file("{" + one + "}", 8),
      st_file(R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[8,20]},)" + one + "}", 20),
      st_file("{\"__metadata__\":" + nested(100000) + "}", 0),  // overflowed the stack
      st_file(many, 0),                                           // quadratic in the entry count
      st_file("{" + one + "," + one + "}", 8),
  };
  const std::string llama = R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":128256,
    "hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,
    "num_key_value_heads":8,"max_position_embeddings":131072,"rms_norm_eps":1e-05,"rope_theta":500000.0,
    "rope_scaling":{"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
    "original_max_position_embeddings":8192,"rope_type":"llama3"},"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","hidden_act":"silu","eos_token_id":[128001,128009],"bos_token_id":128000})";
  const std::vector<std::string> config_seeds = {
      llama,
      R"({"model_type":"llama","vocab_size":16,"hidden_size":8,"intermediate_size":12,"num_hidden_layers":1000000000,"num_attention_heads":2})",
      R"({"model_type":"llama","vocab_size":16,"hidden_size":8,"intermediate_size":12,"num_hidden_layers":2,"num_attention_heads":144115188075855872,"num_key_value_heads":1,"head_dim":2})",
      R"({"architectures":["Qwen2ForCausalLM"],"vocab_size":1000,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"sliding_window":4096,"use_sliding_window":false})",
      "{\"model_type\":\"llama\",\"x\":" + nested(100000) + "}",
  };
  std::vector<std::string> json_seeds = {
      R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<s>":3},"merges":["a b"],"byte_fallback":false},
        "added_tokens":[{"id":3,"content":"<s>","special":true}],"normalizer":{"type":"Sequence","normalizers":[
        {"type":"Prepend","prepend":"\u2581"},{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]},
        "pre_tokenizer":{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":true},
        "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},
        {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
        "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},
        {"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[3],"tokens":["<s>"]}}}})",
      R"({"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},"pre_tokenizer":{"type":"Metaspace","replacement":""}})",
      R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[],"byte_fallback":"yes"},"added_tokens":[{"id":"0","content":7}]})",
      R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Isolated"}})",
  };
  std::string deep;
  for (int i = 0; i < 50000; ++i) deep += R"({"type":"Sequence","normalizers":[)";
  for (int i = 0; i < 50000; ++i) deep += "]}";
  json_seeds.push_back(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"normalizer":)" + deep + "}");
  std::vector<std::string> sp_seeds;
  if (!fixtures.empty()) {
    for (const char* name : {"metaspace.json", "splits.json"}) {
      const std::string f = slurp(fixtures + "/" + name);
      if (!f.empty() && f.size() < (256u << 10)) json_seeds.push_back(f);
    }
    const std::string sp = slurp(fixtures + "/sp.model");
    if (sp.empty()) {
      std::fprintf(stderr, "fuzz_loaders: no sp.model in %s\n", fixtures.c_str());
      return 2;
    }
    sp_seeds.push_back(sp);
  }

  Mutator m(seed);
  Counts st, cfg, hf, sp;
  const auto t0 = std::chrono::steady_clock::now();
  long it = 0;
  for (; max_iterations < 0 || it < max_iterations; ++it) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) break;
    // Every seed is also tried unchanged once.
    const bool as_is = it < 64;
    switch (it % 4) {
      case 0: {
        const std::string& s = st_seeds[m.below(st_seeds.size())];
        fuzz_safetensors(as_is ? s : m.mutate(s), &st);
        break;
      }
      case 1: {
        const std::string& s = config_seeds[m.below(config_seeds.size())];
        fuzz_config(as_is ? s : m.mutate(s), &cfg);
        break;
      }
      case 2: {
        const std::string& s = json_seeds[m.below(json_seeds.size())];
        fuzz_tokenizer(as_is ? s : m.mutate(s), false, m, &hf);
        break;
      }
      default: {
        if (sp_seeds.empty()) break;
        // Most damage lands in the first 40 KB, where the pieces and the normalization table are.
        std::string s = sp_seeds[m.below(sp_seeds.size())];
        if (!as_is) {
          const std::size_t span = std::min<std::size_t>(s.size(), 40000);
          std::string head = m.mutate(s.substr(0, span));
          s = head + s.substr(span);
        }
        fuzz_tokenizer(s, true, m, &sp);
      }
    }
  }
  std::printf("fuzz_loaders: seed %llu, %ld iterations in %.1f s: safetensors %ld (%ld accepted), config %ld (%ld), "
              "tokenizer.json %ld (%ld), tokenizer.model %ld (%ld); no crash\n",
              static_cast<unsigned long long>(seed), it,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), st.runs, st.accepted,
              cfg.runs, cfg.accepted, hf.runs, hf.accepted, sp.runs, sp.accepted);
  return 0;
}
