#include "tune/results_file.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <random>
#include <set>

#include "test_util.hpp"

namespace tunable {
namespace {

using test::slurp;
using test::TempDir;
using test::write_text;

const std::vector<Validator> kVals = {{"TUNABLE_VERSION", "0.1.0"}, {"CPU_MODEL", "test cpu"}};

std::vector<std::string> backups_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  while (auto* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.find(".bak") != std::string::npos) out.push_back(dir + "/" + n);
  }
  closedir(d);
  return out;
}

TEST(ResultsFile, RoundTrip) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  {
    ResultsFile f(path, kVals);
    std::vector<ResultRecord> recs;
    LoadReport rep;
    ASSERT_TRUE(f.load(&recs, &rep).is_ok());
    EXPECT_TRUE(rep.created);
    EXPECT_TRUE(recs.empty());
    ASSERT_TRUE(f.append({"GemmTunableOp_float_NN", "nn_1_2_3_ld_1_3_1", "openblas_t2", 0.125}).is_ok());
    ASSERT_TRUE(f.append({"GemmTunableOp_float_TN", "tn_4_5_6_ld_6_6_4", "Default", 1.5}).is_ok());
  }
  EXPECT_EQ(slurp(path),
            "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,test cpu\n"
            "GemmTunableOp_float_NN,nn_1_2_3_ld_1_3_1,openblas_t2,0.125\n"
            "GemmTunableOp_float_TN,tn_4_5_6_ld_6_6_4,Default,1.5\n");
  ResultsFile again(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(again.load(&recs, &rep).is_ok());
  EXPECT_FALSE(rep.created);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].solution, "openblas_t2");
  EXPECT_DOUBLE_EQ(recs[0].time_ms, 0.125);
  EXPECT_EQ(recs[1].params_signature, "tn_4_5_6_ld_6_6_4");
}

TEST(ResultsFile, ParsesPyTorchFileWithThreeFieldLines) {
  ParsedResults p = parse_results(
      "Validator,PT_VERSION,2.11.0\r\n"
      "GemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_6144,Default,0.0233562\n"
      "GemmTunableOp_float_NN,nn_1024_512_2048,Gemm_Hipblaslt_NN_52565\n");
  EXPECT_TRUE(p.diagnostics.empty());
  ASSERT_EQ(p.validators.size(), 1u);
  EXPECT_EQ(p.validators[0].second, "2.11.0");
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_LT(p.records[1].time_ms, 0);
}

struct Malformed {
  const char* name;
  std::string line;
  const char* message_part;
};

class MalformedLine : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedLine, SkippedWithLineNumberAndReason) {
  const Malformed& c = GetParam();
  ParsedResults p = parse_results("Validator,A,1\nop,params,sol,1.0\n" + c.line + "\nop2,p2,s2,2\n");
  ASSERT_EQ(p.diagnostics.size(), 1u) << c.name;
  EXPECT_EQ(p.diagnostics[0].line, 3u);
  EXPECT_NE(p.diagnostics[0].message.find(c.message_part), std::string::npos)
      << p.diagnostics[0].message;
  // The good lines around it survive.
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[1].op_signature, "op2");
}

INSTANTIATE_TEST_SUITE_P(
    ResultsFile, MalformedLine,
    ::testing::Values(
        Malformed{"two_fields", "op,params", "3 or 4 fields"},
        Malformed{"five_fields", "a,b,c,1,extra", "3 or 4 fields"},
        Malformed{"validator_two", "Validator,ONLYKEY", "3 fields"},
        Malformed{"validator_four", "Validator,K,V,W", "3 fields"},
        Malformed{"bad_number", "op,params,sol,fast", "not a finite"},
        Malformed{"nan_time", "op,params,sol,nan", "not a finite"},
        Malformed{"inf_time", "op,params,sol,inf", "not a finite"},
        Malformed{"negative_time", "op,params,sol,-1", "not a finite"},
        Malformed{"trailing_junk", "op,params,sol,1.0x", "not a finite"},
        Malformed{"overflow", "op,params,sol,1e999", "not a finite"},
        Malformed{"empty_field", "op,,sol,1", "empty"},
        Malformed{"binary", std::string("op,pa\x01\x02\xff", 8) + ",sol,1", "binary"},
        Malformed{"nul_byte", std::string("op,p\0a,sol,1", 12), "binary"},
        Malformed{"huge", "op,params," + std::string(100000, 'x') + ",1", "longer than"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ResultsFile, RandomJunkNeverCrashes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string s(rng() % 3000, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 7 == 0 ? ',' : rng() % 7 == 1 ? '\n' : rng());
    ParsedResults p = parse_results(s);
    for (const auto& r : p.records) {
      EXPECT_FALSE(r.op_signature.empty());
      EXPECT_EQ(r.op_signature.find('\n'), std::string::npos);
    }
  }
}

TEST(ResultsFile, CorruptFileKeepsGoodLinesAndIsNotRewritten) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  const std::string text =
      "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,test cpu\n"
      "GemmTunableOp_float_NN,nn_1_2_3_ld_1_3_1,openblas_t2,0.125\n"
      "garbage\n\x7f\x45LF\x01\x02\nGemmTunableOp_float_NN,nn_2_2_2_ld_2_2_2,Default";  // no final \n
  write_text(path, text);
  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(f.load(&recs, &rep).is_ok());
  // The last line has no newline: a write cut short, whose "Default" may be the prefix of another
  // solution's name. It is reported and not used.
  EXPECT_EQ(recs.size(), 1u);
  ASSERT_EQ(rep.diagnostics.size(), 3u);
  EXPECT_EQ(rep.diagnostics[0].line, 4u);
  EXPECT_EQ(rep.diagnostics[1].line, 5u);
  EXPECT_EQ(rep.diagnostics[2].line, 6u);
  EXPECT_NE(rep.diagnostics[2].message.find("no newline"), std::string::npos) << rep.diagnostics[2].message;
  EXPECT_EQ(slurp(path), text);
  // The next append removes the torn line (completed by a newline it would parse) and never fuses
  // with it; the corrupt complete lines stay.
  std::string dropped;
  ASSERT_TRUE(f.append({"X", "y", "z", 1}, &dropped).is_ok());
  EXPECT_EQ(dropped, "GemmTunableOp_float_NN,nn_2_2_2_ld_2_2_2,Default");
  EXPECT_EQ(slurp(path), text.substr(0, text.rfind('\n') + 1) + "X,y,z,1\n");
}

TEST(ResultsFile, ValidatorMismatchKeepsBackupAndStartsFresh) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  const std::string old = "Validator,TUNABLE_VERSION,0.0.9\nValidator,CPU_MODEL,test cpu\nop,p,s,1\n";
  write_text(path, old);
  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(f.load(&recs, &rep).is_ok());
  EXPECT_TRUE(recs.empty());
  EXPECT_NE(rep.mismatch.find("TUNABLE_VERSION"), std::string::npos) << rep.mismatch;
  ASSERT_FALSE(rep.backup_path.empty());
  EXPECT_EQ(slurp(rep.backup_path), old);  // nothing lost
  EXPECT_EQ(slurp(path), "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,test cpu\n");
  // A second mismatch gets its own backup, never overwriting the first.
  write_text(path, "Validator,PT_VERSION,2.11.0\nop,p,s,1\n");
  LoadReport rep2;
  ASSERT_TRUE(ResultsFile(path, kVals).load(&recs, &rep2).is_ok());
  EXPECT_NE(rep2.backup_path, rep.backup_path);
  EXPECT_EQ(backups_in(dir.path()).size(), 2u);
}

TEST(ResultsFile, NoValidatorsCountsAsMismatch) {
  EXPECT_TRUE(validator_mismatch({}, kVals).has_value());
  EXPECT_FALSE(validator_mismatch(kVals, kVals).has_value());
  auto extra = kVals;
  extra.emplace_back("GPU_NAME", "x");
  EXPECT_TRUE(validator_mismatch(extra, kVals).has_value());
}

TEST(ResultsFile, UnwritablePathIsAClearError) {
  ResultsFile f("/proc/definitely/not/here/r.csv", kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  Status st = f.load(&recs, &rep);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("/proc/definitely/not/here/r.csv"), std::string::npos) << st.message();
}

TEST(ResultsFile, DirectoryIsAClearError) {
  TempDir dir;
  std::string text;
  bool exists = false;
  Status st = read_file(dir.path(), &text, &exists);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  const std::string path = dir.file("r.csv");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  st = ResultsFile(path, kVals).load(&recs, &rep);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("'" + path + "' is a directory"), std::string::npos) << st.message();
  EXPECT_TRUE(rep.backup_path.empty());
}

TEST(ResultsFile, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  // A blocking open would wait here for a writer forever (holding the lock).
  Status st = ResultsFile(path, kVals).load(&recs, &rep);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
}

TEST(ResultsFile, AppendRefusesAFileReplacedByOneWithOtherValidators) {
  // Two processes with different validators (two GPU models) on one path: B moves A's file aside
  // and starts its own; A's next result must not land under B's header.
  TempDir dir;
  const std::string path = dir.file("r.csv");
  ResultsFile a(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(a.load(&recs, &rep).is_ok());
  ASSERT_TRUE(a.append({"op", "p1", "s", 1}).is_ok());
  const std::vector<Validator> other = {{"TUNABLE_VERSION", "0.1.0"}, {"CPU_MODEL", "other cpu"}};
  ResultsFile b(path, other);
  LoadReport rep_b;
  ASSERT_TRUE(b.load(&recs, &rep_b).is_ok());
  ASSERT_FALSE(rep_b.backup_path.empty());
  const Status st = a.append({"op", "p2", "s", 1});
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("replaced"), std::string::npos) << st.message();
  ParsedResults now = parse_results(slurp(path));
  EXPECT_EQ(now.validators, other);
  EXPECT_TRUE(now.records.empty());
  EXPECT_EQ(parse_results(slurp(rep_b.backup_path)).records.size(), 1u);  // A's first result kept
  // B's own appends go on; a process with B's validators that loaded the earlier file may too.
  EXPECT_TRUE(b.append({"op", "p3", "s", 1}).is_ok());
}

TEST(ResultsFile, ReadOnlyPlaceIsReadButNeverWritten) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions; run as a user to check this";
  TempDir dir;
  const std::string sub = dir.file("shipped");
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  const std::string path = sub + "/r.csv";
  write_text(path, "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,test cpu\nop,p,s,1\n");
  ASSERT_EQ(::chmod(sub.c_str(), 0555), 0);  // no lock file can be created next to it
  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  const Status st = f.load(&recs, &rep);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(recs.size(), 1u);
  EXPECT_EQ(f.append({"op", "q", "s", 1}).code(), StatusCode::kIoError);
  ::chmod(sub.c_str(), 0755);
}

TEST(ResultsFile, ConflictingDuplicatesAreReportedAndTheLaterLineWins) {
  ParsedResults p = parse_results(
      "Validator,TUNABLE_VERSION,0.1.0\nop,p,fast,1\nop,p,fast,0.9\nop,p,Default,2\n");
  ASSERT_EQ(p.records.size(), 3u);
  ASSERT_EQ(p.diagnostics.size(), 1u);  // the same solution twice is no conflict
  EXPECT_EQ(p.diagnostics[0].line, 4u);
  EXPECT_NE(p.diagnostics[0].message.find("was fast on line 3"), std::string::npos) << p.diagnostics[0].message;
  ResultsStore store;
  for (const auto& r : p.records) store.put(r);
  EXPECT_EQ(store.find("op", "p")->solution, "Default");
}

TEST(ResultsFile, TimesAreDecimalsAsWritten) {
  for (const char* bad : {"op,p,s, 1", "op,p,s,+1", "op,p,s,0x1p3", "op,p,s,inf", "op,p,s,1 "}) {
    ParsedResults p = parse_results(std::string("Validator,V,1\n") + bad + "\n");
    EXPECT_TRUE(p.records.empty()) << bad;
    EXPECT_EQ(p.diagnostics.size(), 1u) << bad;
  }
  for (const char* good : {"op,p,s,1", "op,p,s,0.5", "op,p,s,1e-05", "op,p,s,.25", "op,p,s,2E+3"}) {
    ParsedResults p = parse_results(std::string("Validator,V,1\n") + good + "\n");
    EXPECT_EQ(p.records.size(), 1u) << good;
  }
}

TEST(ResultsFile, BackupNeverReplacesAnExistingFile) {
  // Whatever already holds a backup name (another program's file, a backup made in the same
  // second) is kept: the move takes the next free name.
  TempDir dir;
  const std::string path = dir.file("r.csv");
  std::vector<std::string> squatters;
  const std::time_t now = std::time(nullptr);
  for (std::time_t t = now; t <= now + 2; ++t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
    squatters.push_back(path + "." + ts + ".bak");
    write_text(squatters.back(), "someone else's\n");
  }
  write_text(path, "Validator,TUNABLE_VERSION,0.0.9\nop,p,s,1\n");
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(ResultsFile(path, kVals).load(&recs, &rep).is_ok());
  ASSERT_FALSE(rep.backup_path.empty());
  for (const auto& q : squatters) {
    EXPECT_NE(rep.backup_path, q);
    EXPECT_EQ(slurp(q), "someone else's\n");
  }
  EXPECT_EQ(slurp(rep.backup_path), "Validator,TUNABLE_VERSION,0.0.9\nop,p,s,1\n");
}

TEST(ResultsFile, OrdinalInsertion) {
  EXPECT_EQ(insert_ordinal("tunable_results.csv", Device::cuda(0)), "tunable_results0.csv");
  EXPECT_EQ(insert_ordinal("src/matmul_result.csv", Device::cuda(3)), "src/matmul_result3.csv");
  EXPECT_EQ(insert_ordinal("a.b/results", Device::cuda(1)), "a.b/results1");
  EXPECT_EQ(insert_ordinal("res_%d.csv", Device::cuda(2)), "res_2.csv");
  EXPECT_EQ(insert_ordinal("tunable_results.csv", Device::cpu()), "tunable_results_cpu.csv");
  EXPECT_EQ(insert_ordinal("res_%d.csv", Device::cpu()), "res_cpu.csv");
  EXPECT_EQ(insert_ordinal(".hidden", Device::cuda(0)), ".hidden0");
}

TEST(ResultsFile, TwoProcessesAppendingLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  constexpr int kPerProcess = 200;
  pid_t kids[2];
  for (int p = 0; p < 2; ++p) {
    kids[p] = fork();
    ASSERT_GE(kids[p], 0);
    if (kids[p] == 0) {
      ResultsFile f(path, kVals);
      std::vector<ResultRecord> recs;
      LoadReport rep;
      if (!f.load(&recs, &rep).is_ok()) _exit(1);
      for (int i = 0; i < kPerProcess; ++i) {
        if (!f.append({"op", "p" + std::to_string(p) + "_" + std::to_string(i), "s", 1.0}).is_ok())
          _exit(2);
      }
      _exit(0);
    }
  }
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
  }
  ParsedResults parsed = parse_results(slurp(path));
  EXPECT_TRUE(parsed.diagnostics.empty());
  EXPECT_EQ(parsed.validators.size(), kVals.size());  // the header was written exactly once
  std::set<std::string> keys;
  for (const auto& r : parsed.records) keys.insert(r.params_signature);
  EXPECT_EQ(keys.size(), 2u * kPerProcess);
  EXPECT_EQ(parsed.records.size(), 2u * kPerProcess);
}

TEST(UntunedFile, AppendsDeduplicated) {
  TempDir dir;
  const std::string path = dir.file("u.csv");
  write_text(path, "opA,p1\n");
  {
    UntunedFile u(path);
    ASSERT_TRUE(u.record("opA", "p1").is_ok());  // already in the file
    ASSERT_TRUE(u.record("opB", "p2").is_ok());
    ASSERT_TRUE(u.record("opB", "p2").is_ok());
  }
  UntunedFile other(path);  // another process's view
  ASSERT_TRUE(other.record("opB", "p2").is_ok());
  ASSERT_TRUE(other.record("opC", "p3").is_ok());
  EXPECT_EQ(slurp(path), "opA,p1\nopB,p2\nopC,p3\n");
}

TEST(ResultsStore, PutFindAll) {
  ResultsStore s;
  s.put({"a", "x", "s1", 1});
  s.put({"a", "x", "s2", 0.5});  // later result for the same key replaces the earlier
  s.put({"b", "y", "s3", 2});
  EXPECT_EQ(s.size(), 2u);
  ASSERT_TRUE(s.find("a", "x").has_value());
  EXPECT_EQ(s.find("a", "x")->solution, "s2");
  EXPECT_FALSE(s.find("a", "y").has_value());
}

}  // namespace
}  // namespace tunable
