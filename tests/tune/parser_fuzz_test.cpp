// Seeded mutations of valid results and untuned files through both parsers and through the file
// loader and appender: no crash, no hang, every diagnostic names a line the text has, every record
// is well-formed, and an append always leaves a file whose new line is whole.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "test_util.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

constexpr int kMutations = 400;
constexpr std::uint32_t kSeed = 38;

const std::vector<Validator> kVals = {{"TUNABLE_VERSION", "0.1.0"}, {"CPU_MODEL", "test cpu"}};

std::string valid_results(std::mt19937& rng) {
  std::string s = "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,test cpu\n";
  const char* sols[] = {"Default", "openblas_t16", "cpu_blocked_mc64_kc256_nc512_mr8_nr8", "cublasLt_a6_t20_s0"};
  for (int i = 0, n = 1 + rng() % 12; i < n; ++i) {
    const int m = 1 + rng() % 4096, k = 1 + rng() % 4096;
    s += fmt::format("GemmTunableOp_float_NN,nn_{}_{}_{}_ld_{}_{}_{},{}", m, 1 + rng() % 64, k, m, k, m, sols[rng() % 4]);
    if (rng() % 4 != 0) s += fmt::format(",{:.6g}", std::ldexp(static_cast<double>(rng() % 100000), -10));
    s += rng() % 8 == 0 ? "\r\n" : "\n";
  }
  return s;
}

std::string valid_untuned(std::mt19937& rng) {
  std::string s;
  for (int i = 0, n = 1 + rng() % 12; i < n; ++i)
    s += fmt::format("GemmTunableOp_BFloat16_TN,tn_{}_{}_4096_ld_4096_4096_{}\n", 1 + rng() % 8192, 1 + rng() % 64,
                     1 + rng() % 8192);
  return s;
}

// One to four of: byte flips, inserted junk, deleted or duplicated ranges, a cut (torn) end, an over-long
// run, a BOM, CRLF endings, swapped halves.
std::string mutate(std::string s, std::mt19937& rng) {
  const char junk[] = {',', '\n', '\r', '\0', '\x7f', '\xff', '\xef', '\xbb', '\xbf', ' ', '\t', '-', 'e', '.'};
  for (int op = 0, n = 1 + rng() % 4; op < n; ++op) {
    const std::size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 9) {
      case 0:
        if (!s.empty()) s[at] = static_cast<char>(rng());
        break;
      case 1:
        for (int i = 0, k = 1 + rng() % 8; i < k; ++i) s.insert(s.begin() + at, junk[rng() % sizeof junk]);
        break;
      case 2:
        s.erase(at, rng() % 64);
        break;
      case 3:
        s.insert(at, s.substr(at, rng() % 200));
        break;
      case 4:
        s.resize(at);  // a write cut short
        break;
      case 5:
        s.insert(at, std::string(kMaxLineLength + rng() % 64, static_cast<char>('a' + rng() % 26)));
        break;
      case 6:
        s = "\xEF\xBB\xBF" + s;
        break;
      case 7: {
        std::string crlf;
        for (char c : s) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
        s = crlf;
        break;
      }
      default:
        s = s.substr(at) + s.substr(0, at);
        break;
    }
  }
  return s;
}

// Lines for_each_line numbers: one per newline, plus an unterminated last one.
std::size_t line_count(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  const std::size_t bom = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  return n + (s.size() > bom && s.back() != '\n' ? 1 : 0);
}

void expect_diagnostics_name_lines(const std::vector<ParseDiagnostic>& diags, const std::string& text, int trial) {
  const std::size_t lines = line_count(text);
  for (const auto& d : diags) {
    EXPECT_GE(d.line, 1u) << "trial " << trial << ": " << d.message;
    EXPECT_LE(d.line, lines) << "trial " << trial << ": " << d.message;
    EXPECT_FALSE(d.message.empty()) << "trial " << trial;
  }
}

bool clean_field(const std::string& f) {
  if (f.empty()) return false;
  for (unsigned char c : f)
    if (c == ',' || c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f) return false;
  return true;
}

TEST(ParserFuzz, SeededMutationsOfResultsAndUntunedFiles) {
  std::mt19937 rng(kSeed);
  const auto t0 = std::chrono::steady_clock::now();
  for (int trial = 0; trial < kMutations; ++trial) {
    const std::string results = mutate(valid_results(rng), rng);
    ParsedResults p = parse_results(results);
    expect_diagnostics_name_lines(p.diagnostics, results, trial);
    for (const auto& r : p.records) {
      EXPECT_TRUE(clean_field(r.op_signature) && clean_field(r.params_signature) && clean_field(r.solution))
          << "trial " << trial << ": " << format_record(r);
      EXPECT_TRUE(r.time_ms == -1.0 || (std::isfinite(r.time_ms) && r.time_ms >= 0)) << "trial " << trial;
    }
    for (const auto& [k, v] : p.validators) EXPECT_FALSE(k.empty()) << "trial " << trial;

    const std::string untuned = mutate(valid_untuned(rng), rng);
    std::vector<ParseDiagnostic> diags;
    for (const auto& [op, ps] : parse_untuned(untuned, &diags)) {
      EXPECT_FALSE(op.empty() || ps.empty()) << "trial " << trial;
      EXPECT_EQ(ps.find('\n'), std::string::npos) << "trial " << trial;
    }
    expect_diagnostics_name_lines(diags, untuned, trial);
  }
  // A hang would be a timeout; a slow parser shows here first (each text is a few KiB).
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

TEST(ParserFuzz, LoadAndAppendOnMutatedFilesLeaveWholeLines) {
  std::mt19937 rng(kSeed + 1);
  test::TempDir dir;
  for (int trial = 0; trial < kMutations / 4; ++trial) {
    const std::string path = dir.file("r" + std::to_string(trial) + ".csv");
    test::write_text(path, mutate(valid_results(rng), rng));
    ResultsFile f(path, kVals);
    std::vector<ResultRecord> recs;
    LoadReport rep;
    const Status loaded = f.load(&recs, &rep);
    if (!loaded.is_ok()) {
      EXPECT_EQ(loaded.code(), StatusCode::kIoError) << "trial " << trial << ": " << loaded.to_string();
      continue;
    }
    const ResultRecord mine{"GemmTunableOp_float_NN", "nn_fuzz_" + std::to_string(trial), "Default", 1.0};
    ASSERT_TRUE(f.append(mine).is_ok()) << "trial " << trial;
    const std::string after = test::slurp(path);
    ASSERT_FALSE(after.empty());
    EXPECT_EQ(after.back(), '\n') << "trial " << trial;
    std::size_t found = 0;
    for (const auto& r : parse_results(after).records) found += r.params_signature == mine.params_signature;
    EXPECT_EQ(found, 1u) << "trial " << trial << ":\n" << after;
    // Whatever the mutation left, this process's header is the file's or the file was started afresh.
    EXPECT_FALSE(validator_mismatch(parse_results(after).validators, kVals).has_value()) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tunable
