// Tokenizer encoding speed (Google Benchmark), through the public API only.
//
//   tunable_tokenizer_bench                                   # the added-token scan, built in
//   tunable_tokenizer_bench --tokenizer=DIR/tokenizer.model --text=FILE   # a real file as well
//
// BM_AddedTokens: a Llama 3 style byte-level tokenizer (its split pattern, 256 added tokens) encodes
// 1 MB of chat text holding 10,000 special tokens; the target is under 0.5 s. BM_File / BM_FileChunks
// encode a given file whole and in 4 KB prompts with a given tokenizer.json or tokenizer.model, for
// comparison with the reference packages (bench/tokenizer_reference.py runs the same text through
// `tokenizers` or `sentencepiece`).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tunable/tokenizer.hpp"

namespace {

using json = nlohmann::json;

std::string g_tokenizer, g_text;  // --tokenizer, --text

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "tunable_tokenizer_bench: %s\n", msg.c_str());
  std::exit(2);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<tunable::Tokenizer> load(const std::string& path) {
  std::unique_ptr<tunable::Tokenizer> t;
  const bool sp = path.size() >= 6 && path.compare(path.size() - 6, 6, ".model") == 0;
  const tunable::Status st = sp ? tunable::Tokenizer::load_sentencepiece(path, &t)
                                : tunable::Tokenizer::load_tokenizer_json(path, &t);
  if (!st.is_ok()) die(st.to_string());
  return t;
}

/// GPT-2's byte -> printable character table (ByteLevel's alphabet), as UTF-8.
std::vector<std::string> byte_chars() {
  std::vector<std::string> out(256);
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const int cp = printable ? b : 256 + n++;
    std::string s;
    if (cp < 0x80) s += static_cast<char>(cp);
    else s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
    out[b] = s;
  }
  return out;
}

/// Llama 3's shape: byte-level BPE over its split pattern, 256 added tokens. The vocabulary is the
/// 256 byte characters and the merges of lower-case letter pairs, enough for BPE to have work.
std::string llama3_like_json() {
  const std::vector<std::string> bc = byte_chars();
  json vocab = json::object(), merges = json::array(), added = json::array();
  int id = 0;
  for (const std::string& c : bc) vocab[c] = id++;
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) {
      vocab[std::string{a, b}] = id++;
      merges.push_back(std::string{a} + " " + std::string{b});
    }
  for (int i = 0; i < 256; ++i) {
    const std::string name = i == 0   ? "<|begin_of_text|>"
                             : i == 1 ? "<|start_header_id|>"
                             : i == 2 ? "<|end_header_id|>"
                             : i == 3 ? "<|eot_id|>"
                                      : fmt::format("<|reserved_special_token_{}|>", i);
    added.push_back({{"id", id++}, {"content", name}, {"special", true}});
  }
  const char* pattern =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", true}}},
            {"added_tokens", added},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"},
                                              {"invert", false}},
                                             {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
            {"decoder", {{"type", "ByteLevel"}}}};
  return j.dump();
}

void BM_AddedTokens(benchmark::State& state) {
  char path[] = "/tmp/tunable_tokenizer_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) die("mkstemp failed");
  close(fd);
  { std::ofstream(path) << llama3_like_json(); }
  auto t = load(path);
  std::remove(path);
  // 10,000 special tokens in 1 MB: 3,334 turns of 300 bytes, each a header (two special tokens
  // around the role), text and an end of turn, as a long chat is sent.
  const std::string head = "<|start_header_id|>user<|end_header_id|>\n\n", eot = "<|eot_id|>";
  const std::string words = "the quick brown fox jumps over the lazy dog, it's 2024; we're here. ";
  std::string body;
  while (body.size() < 300 - head.size() - eot.size()) body += words;
  body.resize(300 - head.size() - eot.size());
  std::string text;
  int specials = 0;
  for (; specials < 10000; specials += 3) text += head + body + eot;
  std::vector<std::int32_t> ids;
  for (auto _ : state) {
    if (!t->encode(text, false, &ids).is_ok()) die("encode failed");
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["bytes"] = static_cast<double>(text.size());
  state.counters["specials"] = specials;
  state.counters["ids"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_AddedTokens)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_File(benchmark::State& state) {
  static auto t = load(g_tokenizer);
  static const std::string text = read_file(g_text);
  std::vector<std::int32_t> ids;
  for (auto _ : state) {
    if (!t->encode(text, false, &ids).is_ok()) die("encode failed");
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["ids"] = static_cast<double>(ids.size());
}

/// The file cut into prompts of about 4 KB (at line ends), each encoded on its own: the per-call
/// costs that a whole-file encode hides.
void BM_FileChunks(benchmark::State& state) {
  static auto t = load(g_tokenizer);
  static const std::vector<std::string> chunks = [] {
    const std::string text = read_file(g_text);
    std::vector<std::string> out;
    for (std::size_t at = 0; at < text.size();) {
      std::size_t end = text.find('\n', std::min(text.size(), at + 4096));
      end = end == std::string::npos ? text.size() : end + 1;
      out.push_back(text.substr(at, end - at));
      at = end;
    }
    return out;
  }();
  std::vector<std::int32_t> ids;
  std::size_t bytes = 0;
  for (const std::string& c : chunks) bytes += c.size();
  for (auto _ : state) {
    for (const std::string& c : chunks) {
      if (!t->encode(c, false, &ids).is_ok()) die("encode failed");
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["prompts"] = static_cast<double>(chunks.size());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--tokenizer=", 0) == 0) g_tokenizer = std::string(a.substr(12));
    else if (a.rfind("--text=", 0) == 0) g_text = std::string(a.substr(7));
    else die(fmt::format("unknown argument '{}' (--tokenizer=FILE --text=FILE, or Google Benchmark's flags)", a));
  }
  if (g_tokenizer.empty() != g_text.empty()) die("--tokenizer and --text go together");
  if (!g_tokenizer.empty()) {
    benchmark::RegisterBenchmark("BM_File", BM_File)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
    benchmark::RegisterBenchmark("BM_FileChunks", BM_FileChunks)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
