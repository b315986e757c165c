// The tokenizers against the `tokenizers` and `sentencepiece` libraries (fixtures written by
// tests/tokenizer/make_fixtures.py into TUNABLE_TOKENIZER_FIXTURES), the streamer, and bad files.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tunable/tokenizer.hpp"

namespace tunable {
namespace {

using json = nlohmann::json;

std::string fixtures_dir() {
  const char* d = std::getenv("TUNABLE_TOKENIZER_FIXTURES");
  return d ? d : "";
}

std::string from_hex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

json manifest() {
  std::ifstream f(fixtures_dir() + "/manifest.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

std::unique_ptr<Tokenizer> load(const json& fx) {
  std::unique_ptr<Tokenizer> t;
  const std::string path = fixtures_dir() + "/" + fx["file"].get<std::string>();
  const Status st = fx["kind"] == "tokenizer.model" ? Tokenizer::load_sentencepiece(path, &t)
                                                     : Tokenizer::load_tokenizer_json(path, &t);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return t;
}

class Fixtures : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fixtures_dir().empty()) GTEST_FAIL() << "TUNABLE_TOKENIZER_FIXTURES is not set (ctest sets it after make_fixtures.py)";
  }
};

TEST_F(Fixtures, IdsAndTextEqualTheReferenceLibraries) {
  const json m = manifest();
  ASSERT_GE(m.size(), 6u);
  for (const json& fx : m) {
    SCOPED_TRACE(fx["name"].get<std::string>());
    auto t = load(fx);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->vocab_size(), fx["vocab_size"].get<std::int32_t>());
    int n = 0;
    for (const json& c : fx["cases"]) {
      const std::string input = from_hex(c["input_hex"].get<std::string>());
      SCOPED_TRACE(fmt::format("case {}: {}", n++, c["input_hex"].get<std::string>()));
      std::vector<std::int32_t> ids, ids_sp;
      ASSERT_TRUE(t->encode(input, false, &ids).is_ok());
      ASSERT_TRUE(t->encode(input, true, &ids_sp).is_ok());
      EXPECT_EQ(ids, c["ids"].get<std::vector<std::int32_t>>());
      EXPECT_EQ(ids_sp, c["ids_special"].get<std::vector<std::int32_t>>());
      std::string text, text_skip;
      ASSERT_TRUE(t->decode(c["ids_special"].get<std::vector<std::int32_t>>(), false, &text).is_ok());
      ASSERT_TRUE(t->decode(c["ids_special"].get<std::vector<std::int32_t>>(), true, &text_skip).is_ok());
      EXPECT_EQ(text, c["decoded"].get<std::string>());
      EXPECT_EQ(text_skip, c["decoded_skip"].get<std::string>());
    }
  }
}

TEST_F(Fixtures, StreamedTextEqualsTheWholeDecode) {
  for (const json& fx : manifest()) {
    SCOPED_TRACE(fx["name"].get<std::string>());
    auto t = load(fx);
    ASSERT_TRUE(t);
    for (const json& c : fx["cases"]) {
      const auto ids = c["ids"].get<std::vector<std::int32_t>>();
      TokenStreamer s(*t, true);
      std::string streamed, piece;
      for (std::int32_t id : ids) {
        ASSERT_TRUE(s.push(id, &piece).is_ok());
        streamed += piece;
      }
      ASSERT_TRUE(s.push(t->vocab_size() + 5, &piece).is_ok());  // past the vocabulary: no text
      EXPECT_EQ(piece, "");
      ASSERT_TRUE(s.finish(&piece).is_ok());
      streamed += piece;
      std::string whole;
      ASSERT_TRUE(t->decode(ids, true, &whole).is_ok());
      EXPECT_EQ(streamed, whole) << c["input_hex"];
    }
  }
}

TEST_F(Fixtures, ADirectoryPrefersTokenizerJsonAndIdsOutsideTheVocabularyAreRefused) {
  test::TempDir d;
  std::unique_ptr<Tokenizer> t;
  Status st = Tokenizer::load_dir(d.path(), &t);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("no tokenizer.json or tokenizer.model"), std::string::npos) << st.message();
  std::ifstream src(fixtures_dir() + "/llama3.json");
  std::stringstream ss;
  ss << src.rdbuf();
  test::write_text(d.file("tokenizer.json"), ss.str());
  ASSERT_TRUE(Tokenizer::load_dir(d.path(), &t).is_ok());
  std::string text;
  st = t->decode({0, t->vocab_size()}, false, &text);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(fmt::format("id {} (position 1)", t->vocab_size())), std::string::npos) << st.message();
}

// A minimal valid tokenizer.json, damaged one field at a time.
json minimal() {
  return json::parse(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},
    "normalizer":null,"pre_tokenizer":null,"decoder":null,"post_processor":null,"added_tokens":[]})");
}

TEST(TokenizerJson, AMinimalModelMergesAndBadFilesAreNamed) {
  test::TempDir d;
  std::unique_ptr<Tokenizer> t;
  test::write_text(d.file("ok.json"), minimal().dump());
  ASSERT_TRUE(Tokenizer::load_tokenizer_json(d.file("ok.json"), &t).is_ok());
  std::vector<std::int32_t> ids;
  ASSERT_TRUE(t->encode("abab", true, &ids).is_ok());
  EXPECT_EQ(ids, (std::vector<std::int32_t>{2, 2}));

  struct Case {
    std::function<void(json&)> damage;
    StatusCode code;
    const char* says;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["model"]["type"] = "WordPiece"; }, StatusCode::kNotSupported, "model type 'WordPiece'"},
      {[](json& j) { j["model"]["merges"] = json::array({"a c"}); }, StatusCode::kParseError, "merge 'a c' uses a token outside"},
      {[](json& j) { j["model"]["merges"] = json::array({"ab"}); }, StatusCode::kParseError, "merge 'ab' is not two tokens"},
      {[](json& j) { j["model"]["vocab"]["c"] = 1; }, StatusCode::kParseError, "token id 1 is given to two"},
      {[](json& j) { j["model"]["vocab"]["c"] = -4; }, StatusCode::kParseError, "vocab['c'] is -4"},
      {[](json& j) { j["model"].erase("vocab"); }, StatusCode::kParseError, "model.vocab is missing"},
      {[](json& j) { j["model"]["unk_token"] = "<unk>"; }, StatusCode::kParseError, "unk_token '<unk>' is not in"},
      {[](json& j) { j["model"]["dropout"] = 0.1; }, StatusCode::kNotSupported, "dropout"},
      {[](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }, StatusCode::kNotSupported, "normalizer type 'Lowercase'"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}}; }, StatusCode::kNotSupported,
       "pre_tokenizer type 'BertPreTokenizer'"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "("}}}, {"behavior", "Isolated"}}; },
       StatusCode::kNotSupported, "does not compile"},
      {[](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Merged"}}; },
       StatusCode::kParseError, "Split behavior 'Merged' is not one of"},
      {[](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, StatusCode::kNotSupported, "decoder type 'WordPiece'"},
      {[](json& j) { j["post_processor"] = {{"type", "BertProcessing"}}; }, StatusCode::kNotSupported,
       "post_processor type 'BertProcessing'"},
      {[](json& j) { j["added_tokens"] = json::array({{{"id", 2}, {"content", "<x>"}}}); }, StatusCode::kParseError,
       "added token '<x>' has id 2, which 'ab' holds"},
  };
  for (const Case& c : cases) {
    json j = minimal();
    c.damage(j);
    test::write_text(d.file("bad.json"), j.dump());
    const Status st = Tokenizer::load_tokenizer_json(d.file("bad.json"), &t);
    EXPECT_EQ(st.code(), c.code) << c.says << ": " << st.to_string();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("bad.json"), std::string::npos) << st.message();
  }
  test::write_text(d.file("bad.json"), "{not json");
  EXPECT_EQ(Tokenizer::load_tokenizer_json(d.file("bad.json"), &t).code(), StatusCode::kParseError);
  test::write_text(d.file("bad.model"), "not a sentencepiece model");
  const Status st = Tokenizer::load_sentencepiece(d.file("bad.model"), &t);
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_NE(st.message().find("not a SentencePiece model"), std::string::npos) << st.message();
  EXPECT_EQ(Tokenizer::load_tokenizer_json(d.path(), &t).code(), StatusCode::kIoError);  // a directory
}

}  // namespace
}  // namespace tunable
