// Tokenizer files and prompts built to hurt: nesting past the stack, fields of the wrong type,
// corrupt SentencePiece normalization tables, prompts too long or built to make the search for
// added tokens quadratic. Every one ends in a Status naming the file and the field, or in ids.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tunable/tokenizer.hpp"

namespace tunable {
namespace {

using json = nlohmann::json;

json minimal() {
  return json::parse(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<s>":3},"merges":["a b"]},
    "added_tokens":[{"id":3,"content":"<s>","special":true}]})");
}

Status load_json(const test::TempDir& d, const std::string& text, std::unique_ptr<Tokenizer>* t) {
  test::write_text(d.file("tokenizer.json"), text);
  return Tokenizer::load_tokenizer_json(d.file("tokenizer.json"), t);
}

TEST(HostileTokenizer, DeepJsonIsRefusedBeforeParsing) {
  test::TempDir d;
  std::unique_ptr<Tokenizer> t;
  // Sequence normalizers nested 50,000 deep: a 1.5 MB file that overflowed the stack.
  std::string deep;
  for (int i = 0; i < 50000; ++i) deep += R"({"type":"Sequence","normalizers":[)";
  for (int i = 0; i < 50000; ++i) deep += "]}";
  json j = minimal();
  const std::string text = j.dump().substr(0, j.dump().size() - 1) + ",\"normalizer\":" + deep + "}";
  const Status st = load_json(d, text, &t);
  EXPECT_EQ(st.code(), StatusCode::kParseError) << st.to_string();
  EXPECT_NE(st.message().find("tokenizer.json: JSON nested deeper than 64 levels"), std::string::npos) << st.message();
}

TEST(HostileTokenizer, FieldsOfTheWrongTypeAreNamedNotThrown) {
  test::TempDir d;
  struct Case {
    std::function<void(json&)> damage;
    const char* says;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["model"]["byte_fallback"] = 1; }, "model.byte_fallback is 1, not true or false"},
      {[](json& j) { j["model"]["dropout"] = "x"; }, "model.dropout is \"x\", not a number"},
      {[](json& j) { j["model"]["unk_token"] = 3; }, "model.unk_token is 3, not a string"},
      {[](json& j) { j["model"]["vocab"]["c"] = 1 << 22; }, "vocab['c'] is 4194304, not a token id (0 to 4194303)"},
      {[](json& j) { j["added_tokens"] = "x"; }, "added_tokens is \"x\", not a list"},
      {[](json& j) { j["added_tokens"][0]["id"] = "3"; }, "added_tokens[0].id is \"3\", not an integer"},
      {[](json& j) { j["added_tokens"][0]["special"] = "no"; }, "added_tokens[0].special is \"no\", not true or false"},
      {[](json& j) { j["normalizer"] = 5; }, "normalizer is 5, not an object"},
      {[](json& j) { j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", 5}}}, {"content", " "}}; },
       "normalizer.pattern.String is 5, not a string"},
      {[](json& j) { j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{"type", "Prepend"}, {"prepend", 1}}}}; },
       "normalizer.normalizers is {\"prepend\":1,\"type\":\"Prepend\"}, not a list"},
      {[](json& j) {
         j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", 1}}})}};
       },
       "normalizer.normalizers[0].prepend is 1, not a string"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Isolated"},
                                          {"invert", "yes"}}; },
       "pre_tokenizer.invert is \"yes\", not true or false"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::object()}}; },
       "pre_tokenizer.pretokenizers is {}, not a list"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", ""}}; },  // looped forever
       "pre_tokenizer.replacement is '', not one character"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", 1}}; },
       "pre_tokenizer.individual_digits is 1, not true or false"},
      {[](json& j) { j["decoder"] = {{"type", "Metaspace"}, {"replacement", "ab"}}; },
       "decoder.replacement is 'ab', not one character"},
      {[](json& j) { j["decoder"] = {{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}}; },
       "decoder.start is -1, not an integer in [0, 1048576]"},
      {[](json& j) { j["decoder"] = {{"type", "Replace"}, {"pattern", 3}, {"content", " "}}; },
       "decoder.pattern is 3, not an object"},
      {[](json& j) { j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array({{{"SpecialToken", {{"id", 5}}}}})}}; },
       "post_processor.single[0].SpecialToken.id is 5, not a string"},
      {[](json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", json::array({{{"SpecialToken", {{"id", "<s>"}}}}})},
                                {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", json::array({"a"})}}}}}};
       },
       "post_processor.special_tokens.<s>.ids[0] is \"a\", not a token id of the vocabulary"},
      {[](json& j) {  // an id past the vocabulary would reach the model as a prompt token
         j["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", json::array({{{"SpecialToken", {{"id", "<s>"}}}}})},
                                {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", json::array({999})}}}}}};
       },
       "post_processor.special_tokens.<s>.ids[0] is 999, not a token id of the vocabulary"},
      {[](json& j) { j["post_processor"] = {{"type", "Sequence"}, {"processors", 7}}; },
       "post_processor.processors is 7, not a list"},
  };
  for (const Case& c : cases) {
    json j = minimal();
    c.damage(j);
    std::unique_ptr<Tokenizer> t;
    const Status st = load_json(d, j.dump(), &t);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << c.says << ": " << st.to_string();
    EXPECT_NE(st.message().find(d.file("tokenizer.json") + ": "), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << "want '" << c.says << "' in: " << st.message();
  }
}

TEST(HostileTokenizer, PromptsOverTheLimitAreRefusedAndAddedTokensAreFoundInLinearTime) {
  test::TempDir d;
  json j = minimal();
  j["added_tokens"].push_back({{"id", 4}, {"content", "<never>"}, {"special", true}});
  std::unique_ptr<Tokenizer> t;
  ASSERT_TRUE(load_json(d, j.dump(), &t).is_ok());
  std::vector<std::int32_t> ids;
  const std::string too_long(Tokenizer::kMaxTextBytes + 1, 'a');
  const Status st = t->encode(too_long, false, &ids);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("the text is 16777217 bytes; the limit is 16777216 (16 MiB)"), std::string::npos)
      << st.message();
  // 1.5 MB of one added token and none of the other: each cut searched the whole rest for "<never>".
  std::string many;
  for (int i = 0; i < 500000; ++i) many += "<s>";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(t->encode(many, false, &ids).is_ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  EXPECT_EQ(ids.size(), 500000u);
}

// Llama 3 ships 256 added tokens, others thousands: the search must not visit every added token at
// every cut, nor scan the text once per added token. 50,000 added tokens sharing a prefix, and
// 50,000 occurrences of one of them, took tens of seconds that way; one pass takes milliseconds.
TEST(HostileTokenizer, AddedTokensAreFoundInTimeLinearInTheTextWhateverTheirNumber) {
  test::TempDir d;
  json j = minimal();
  constexpr int kAdded = 50000;
  for (int i = 0; i < kAdded; ++i)
    j["added_tokens"].push_back({{"id", 4 + i}, {"content", fmt::format("<|t{}|>", i)}, {"special", true}});
  std::unique_ptr<Tokenizer> t;
  ASSERT_TRUE(load_json(d, j.dump(), &t).is_ok());
  std::string text;
  std::vector<std::int32_t> want;
  for (int i = 0; i < kAdded; ++i) {
    // "<|t1" starts many tokens and is none: dropped, as characters outside the vocabulary are.
    text += i % 2 ? "<|t7|>ab" : "<|t4999|><|t1";
    if (i % 2) want.insert(want.end(), {4 + 7, 2});
    else want.push_back(4 + 4999);
  }
  std::vector<std::int32_t> ids;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(t->encode(text, false, &ids).is_ok());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0);
  EXPECT_TRUE(ids == want) << ids.size() << " ids, " << want.size() << " wanted";
}

TEST(HostileTokenizer, UnreadableTokenizerFilesAreNotPassedOverAsMissing) {
  test::TempDir d;
  ASSERT_EQ(::symlink("tokenizer.json", d.file("tokenizer.json").c_str()), 0);  // a loop
  std::unique_ptr<Tokenizer> t;
  Status st = Tokenizer::load_dir(d.path(), &t);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.to_string();
  EXPECT_NE(st.message().find("tokenizer.json': Too many levels of symbolic links"), std::string::npos) << st.message();
  test::TempDir f;
  ASSERT_EQ(::mkfifo(f.file("tokenizer.model").c_str(), 0600), 0);
  st = Tokenizer::load_dir(f.path(), &t);  // must not block
  EXPECT_NE(st.message().find("is not a regular file"), std::string::npos) << st.message();
}

// ---- SentencePiece normalization tables --------------------------------------------------------

std::string varint(std::uint64_t v) {
  std::string s;
  do {
    s.push_back(static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0)));
    v >>= 7;
  } while (v);
  return s;
}
std::string bytes_field(int number, const std::string& payload) {
  return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}

// The precompiled_charsmap of a serialized ModelProto's normalizer_spec (the last one given).
std::string charsmap_of(const std::string& model) {
  std::string found;
  std::size_t at = 0;
  auto read_varint = [](const std::string& s, std::size_t* i) {
    std::uint64_t v = 0;
    for (int shift = 0; *i < s.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(s[(*i)++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  auto fields = [&](const std::string& msg, const std::function<void(std::uint64_t, const std::string&)>& f) {
    std::size_t i = 0;
    while (i < msg.size()) {
      const std::uint64_t key = read_varint(msg, &i);
      if ((key & 7) == 0) read_varint(msg, &i);
      else if ((key & 7) == 1) i += 8;
      else if ((key & 7) == 5) i += 4;
      else {
        const std::uint64_t n = read_varint(msg, &i);
        f(key >> 3, msg.substr(i, n));
        i += n;
      }
    }
  };
  fields(model, [&](std::uint64_t field, const std::string& spec) {
    if (field == 3) fields(spec, [&](std::uint64_t f, const std::string& v) { if (f == 2) found = v; });
  });
  (void)at;
  return found;
}

class SentencePieceTables : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("TUNABLE_TOKENIZER_FIXTURES");
    if (!dir) GTEST_FAIL() << "TUNABLE_TOKENIZER_FIXTURES is not set (ctest sets it after make_fixtures.py)";
    model_ = test::slurp(std::string(dir) + "/sp.model");
    charsmap_ = charsmap_of(model_);
    ASSERT_GT(charsmap_.size(), 1000u) << "the fixture is trained with nmt_nfkc, which has a table";
  }
  // The model with its table replaced: a second normalizer_spec (or denormalizer_spec) carrying only
  // the table, which protobuf merges over the first.
  Status load_with(const std::string& table, int spec = 3) {
    test::write_text(dir_.file("tokenizer.model"), model_ + bytes_field(spec, bytes_field(2, table)));
    std::unique_ptr<Tokenizer> t;
    const Status st = Tokenizer::load_sentencepiece(dir_.file("tokenizer.model"), &t);
    if (st.is_ok()) {  // whatever loads must tokenize hostile text without crashing
      std::vector<std::int32_t> ids;
      EXPECT_TRUE(t->encode("\xff\xfe Hello \xef\xbf\xbd \xe2\x80", true, &ids).is_ok());
    }
    return st;
  }
  std::uint32_t trie_bytes() const {
    std::uint32_t n = 0;
    for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(charsmap_[i]);
    return n;
  }
  test::TempDir dir_;
  std::string model_, charsmap_;
};

TEST_F(SentencePieceTables, CorruptTablesAreRefusedAtLoad) {
  ASSERT_TRUE(load_with(charsmap_).is_ok());  // the table itself, given twice, is fine
  struct Case {
    std::string table;
    const char* says;
  };
  std::string past = charsmap_;
  const auto size = static_cast<std::uint32_t>(charsmap_.size());
  for (int i = 0; i < 4; ++i) past[i] = static_cast<char>(size >> (8 * i));
  std::string root = charsmap_;  // the root unit's offset sends every lookup far past the array
  root[4] = root[5] = 0;
  root[6] = root[7] = static_cast<char>(0xFF);
  std::string unterminated = charsmap_;
  for (std::size_t i = 4 + trie_bytes(); i < unterminated.size(); ++i)
    if (unterminated[i] == '\0') unterminated[i] = 'x';
  const std::vector<Case> cases = {
      {past, "its trie of"},
      {charsmap_.substr(0, 3), "too short for its trie size"},
      {charsmap_.substr(0, 4 + trie_bytes()), "is outside its 0 bytes of strings"},  // every rule's string cut off
      {unterminated, "or unterminated"},
      {root, "its root reads past"},
      {std::string(4, '\0') + "abc", "its trie is empty"},
  };
  for (const Case& c : cases) {
    const Status st = load_with(c.table);
    EXPECT_EQ(st.code(), StatusCode::kParseError) << c.says << ": " << st.to_string();
    EXPECT_NE(st.message().find("tokenizer.model: normalizer_spec.precompiled_charsmap is corrupt: "), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << "want '" << c.says << "' in: " << st.message();
  }
  const Status st = load_with(unterminated, 5);  // the decoder's table too
  EXPECT_NE(st.message().find("denormalizer_spec.precompiled_charsmap is corrupt"), std::string::npos) << st.message();
}

TEST_F(SentencePieceTables, RandomDamageToTheTrieIsRefusedOrHarmless) {
  std::mt19937 rng(59);
  int refused = 0;
  for (int it = 0; it < 200; ++it) {
    std::string t = charsmap_;
    for (int e = 0; e < 4; ++e) t[4 + rng() % (t.size() - 4)] = static_cast<char>(rng());
    if (!load_with(t).is_ok()) ++refused;
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace tunable
