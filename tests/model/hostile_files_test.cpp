// Model directories built to hurt: nesting that overflows a recursive reader, headers with more
// entries than any checkpoint, FIFOs where files belong, sizes that would allocate without end,
// fields of the wrong type, paths that cannot be looked at. Each must end in a Status naming the
// file and the field, quickly, without blocking.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/json_depth.hpp"
#include "model/config.hpp"
#include "model/model_dir.hpp"
#include "model/safetensors.hpp"
#include "test_util.hpp"

namespace tunable::model {
namespace {

std::string nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::vector<unsigned char> st_file(const std::string& header) {
  std::vector<unsigned char> f(8);
  for (int i = 0; i < 8; ++i) f[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
  f.insert(f.end(), header.begin(), header.end());
  return f;
}

void expect_says(const Status& st, StatusCode code, const std::string& file, const std::string& says) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(file), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(says), std::string::npos) << "want '" << says << "' in: " << st.message();
}

const std::string kDeep = "JSON nested deeper than 64 levels";

TEST(HostileModelFiles, DeepJsonIsRefusedBeforeParsingEverywhere) {
  const std::string deep = nested(100000);  // 200 KB: overflowed the stack when printed or copied
  ModelConfig c;
  expect_says(parse_model_config("{\"model_type\":\"llama\",\"x\":" + deep + "}", "cfg.json", &c),
              StatusCode::kParseError, "cfg.json", kDeep);
  std::map<std::string, std::string> wm;
  expect_says(parse_safetensors_index("{\"weight_map\":" + deep + "}", "index.json", &wm), StatusCode::kParseError,
              "index.json", kDeep);
  SpecialTokens t;
  expect_says(parse_special_tokens("{\"eos_token_id\":" + deep + "}", "gen.json", &t), StatusCode::kParseError,
              "gen.json", kDeep);
  const auto f = st_file("{\"__metadata__\":" + deep + "}");
  StHeader h;
  expect_says(parse_safetensors(f.data(), f.size(), "m.st", &h), StatusCode::kParseError, "m.st", kDeep);
  // The limit itself: 64 levels are read, 65 are not; brackets inside strings do not count.
  const std::string at_limit = nested(64);
  EXPECT_TRUE(check_json_depth(at_limit.data(), at_limit.data() + at_limit.size(), "x").is_ok());
  const std::string in_string = "[\"" + std::string(100, '[') + "\\\"{\"]";
  EXPECT_TRUE(check_json_depth(in_string.data(), in_string.data() + in_string.size(), "x").is_ok());
  const std::string over = nested(65);
  expect_says(check_json_depth(over.data(), over.data() + over.size(), "x"), StatusCode::kParseError, "x",
              "(at byte 64); the limit is 64");
}

TEST(HostileModelFiles, HeadersParseInLinearTimeUpToTheEntryLimit) {
  auto header_of = [](std::uint64_t entries) {
    std::string h = "{";
    h.reserve(entries * 60);
    for (std::uint64_t i = 0; i < entries; ++i)
      h += fmt::format("{}\"t{}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", i ? "," : "", i);
    return h + "}";
  };
  const auto full = st_file(header_of(kMaxHeaderEntries));  // 6 MB: took minutes when parsing was quadratic
  StHeader h;
  const auto t0 = std::chrono::steady_clock::now();
  const Status ok = parse_safetensors(full.data(), full.size(), "m.st", &h);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(ok.is_ok()) << ok.to_string();
  EXPECT_EQ(h.tensors.size(), kMaxHeaderEntries);
  EXPECT_LT(s, 10.0);  // about 0.3 s in a release build
  const auto over = st_file(header_of(kMaxHeaderEntries + 1));
  expect_says(parse_safetensors(over.data(), over.size(), "m.st", &h), StatusCode::kParseError, "m.st",
              "the header has more than 100000 entries; the limit is 100000");
}

// A directory save_pretrained could have written: a tiny Llama with every tensor in bf16.
struct Dir {
  test::TempDir dir;
  std::string config = R"({"architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":8,
    "intermediate_size":12,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1)";
  explicit Dir(const std::string& extra = "", int layers_in_checkpoint = 2) {
    test::write_text(dir.file("config.json"), config + extra + "}");
    ModelConfig c;
    const std::string base = config + ",\"num_hidden_layers\":" + std::to_string(layers_in_checkpoint) + "}";
    EXPECT_TRUE(parse_model_config(base, "config.json", &c).is_ok());
    std::string h = "{";
    std::uint64_t off = 0;
    for (const auto& [name, shape] : expected_tensors(c)) {
      std::uint64_t n = 2;
      std::string dims;
      for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d), dims += (dims.empty() ? "" : ",") + std::to_string(d);
      h += fmt::format("{}\"{}\":{{\"dtype\":\"BF16\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", h.size() > 1 ? "," : "",
                       name, dims, off, off + n);
      off += n;
    }
    auto bytes = st_file(h + "}");
    bytes.resize(bytes.size() + off);
    test::write_text(dir.file("model.safetensors"), std::string(bytes.begin(), bytes.end()));
  }
};

TEST(HostileModelFiles, AFifoWhereAFileBelongsIsRefusedWithoutBlocking) {
  for (const char* name : {"model.safetensors", "generation_config.json", "model.safetensors.index.json"}) {
    Dir d;
    std::remove(d.dir.file(name).c_str());
    ASSERT_EQ(::mkfifo(d.dir.file(name).c_str(), 0600), 0);
    ModelDir m;
    expect_says(open_model_dir(d.dir.path(), &m), StatusCode::kIoError, name, "is not a regular file");
  }
}

TEST(HostileModelFiles, ConfigNumbersHaveLimitsAndAreCheckedAgainstTheTensors) {
  struct Case {
    std::string extra;
    const char* says;
  };
  const std::vector<Case> cases = {
      {R"(,"num_hidden_layers":1000000000)", "num_hidden_layers is 1000000000, over the limit of 1024"},
      {R"(,"num_attention_heads":144115188075855872,"num_key_value_heads":1)",  // 2^57: overflowed q = heads x head_dim
       "num_attention_heads is 144115188075855872, over the limit of 1024"},
      {R"(,"head_dim":18446744073709551615)", "head_dim is 18446744073709551615, over the limit of 1024"},
      {R"(,"vocab_size":4294967296)", "vocab_size is 4294967296, over the limit of 16777216"},
      {R"(,"hidden_size":131072)", "hidden_size is 131072, over the limit of 65536"},
      {R"(,"intermediate_size":2097152)", "intermediate_size is 2097152, over the limit of 1048576"},
      {R"(,"max_position_embeddings":33554432)", "max_position_embeddings is 33554432, over the limit of 16777216"},
      {R"(,"sliding_window":-5)", "sliding_window is -5, not a positive integer"},
      {R"(,"num_hidden_layers":3)", "num_hidden_layers is 3, but the checkpoint's tensors hold 2 layers"},
      {R"(,"vocab_size":32)", "vocab_size is 32, but model.embed_tokens.weight has 16 rows"},
      {R"(,"tie_word_embeddings":"yes")", "tie_word_embeddings is \"yes\", not true or false"},
      {R"(,"hidden_act":7)", "hidden_act is 7, not a string"},
      {R"(,"architectures":"LlamaForCausalLM")", "architectures is \"LlamaForCausalLM\", not a list of names"},
  };
  for (const Case& c : cases) {
    Dir d(c.extra);
    ModelDir m;
    expect_says(open_model_dir(d.dir.path(), &m), StatusCode::kParseError, "config.json", c.says);
  }
  Dir fine;
  ModelDir m;
  EXPECT_TRUE(open_model_dir(fine.dir.path(), &m).is_ok());
}

TEST(HostileModelFiles, ASymlinkLoopIsNotReportedAsMissing) {
  Dir d;
  std::remove(d.dir.file("config.json").c_str());
  ASSERT_EQ(::symlink("config.json", d.dir.file("config.json").c_str()), 0);  // a loop
  ModelDir m;
  Status st = open_model_dir(d.dir.path(), &m);
  expect_says(st, StatusCode::kIoError, "config.json", "Too many levels of symbolic links");
  EXPECT_EQ(st.message().find("no config.json"), std::string::npos) << st.message();
}

TEST(HostileModelFiles, AnUnsearchableDirectoryIsNotReportedAsMissing) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file: no permission error to provoke";
  Dir p;
  ASSERT_EQ(::chmod(p.dir.path().c_str(), 0), 0);
  ModelDir m;
  const Status st = open_model_dir(p.dir.path() + "/", &m);
  ::chmod(p.dir.path().c_str(), 0700);
  expect_says(st, StatusCode::kIoError, "config.json", "Permission denied");
}

}  // namespace
}  // namespace tunable::model
