// The `tunable` CLI driven as a user would: exit codes and what it prints.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "test_util.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

struct CliRun {
  int code;
  std::string out;
};

CliRun run_cli(const std::string& args, const std::string& env = "") {
  // CUDA_VISIBLE_DEVICES="" keeps "auto" on the CPU even on a GPU machine.
  std::string cmd = std::string("CUDA_VISIBLE_DEVICES= ") + env + " " + TUNABLE_CLI_PATH + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(Cli, TuneShowTuneFile) {
  test::TempDir dir;
  const std::string file = dir.file("r.csv");
  CliRun t = run_cli("tune --device cpu --m 64 --n 48 --k 40 --dtype fp32 --trans nt --seconds 0.05 "
                  "--verbose 0 --file " + file);
  ASSERT_EQ(t.code, 0) << t.out;
  for (const char* s : {"untuned :", "tuned   :", "reloaded:", "tuned 0 problems", "iter/s"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << " missing in\n" << t.out;

  CliRun s = run_cli("show " + dir.file("r_cpu.csv"));
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("GemmTunableOp_float_NT"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("nt_64_48_40_ld_64_48_64"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("OPENBLAS_VERSION"), std::string::npos) << s.out;

  test::write_text(dir.file("untuned.csv"),
                   "GemmTunableOp_double_TT,tt_33_17_9_ld_9_17_33\nnot a signature\n"
                   "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\n");
  CliRun f = run_cli("tune-file " + dir.file("untuned.csv") + " --device cpu --file " + file);
  EXPECT_EQ(f.code, 3) << f.out;  // one bad line: reported, the rest tuned
  EXPECT_NE(f.out.find("untuned.csv:2:"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("tuned 2 of 2 problems"), std::string::npos) << f.out;
  EXPECT_EQ(parse_results(test::slurp(dir.file("r_cpu.csv"))).records.size(), 3u);
}

TEST(Cli, ShowReadsPyTorchTunableOpFile) {
  CliRun s = run_cli(std::string("show ") + TUNABLE_TEST_DATA_DIR + "/pytorch-tunableop-results.csv");
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("PT_VERSION"), std::string::npos);
  EXPECT_NE(s.out.find("GemmTunableOp_BFloat16_TN"), std::string::npos);
}

TEST(Cli, ShowReportsCorruptLines) {
  test::TempDir dir;
  test::write_text(dir.file("bad.csv"), "Validator,A,1\nop,p,s,1\nop,p\nop,p,s,zzz\n");
  CliRun s = run_cli("show " + dir.file("bad.csv"));
  EXPECT_EQ(s.code, 3);
  EXPECT_NE(s.out.find("bad.csv:3:"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("bad.csv:4:"), std::string::npos) << s.out;
}

TEST(Cli, ClearErrors) {
  CliRun r = run_cli("tune --device cpu --dtype int7");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("unknown --dtype 'int7'"), std::string::npos) << r.out;
  r = run_cli("tune --device cpu --m -4");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("m must be positive"), std::string::npos) << r.out;
  r = run_cli("tune --device cuda");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("no CUDA device"), std::string::npos) << r.out;
  r = run_cli("show /nonexistent/file.csv");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  r = run_cli("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("tune-file"), std::string::npos);
  r = run_cli("tune --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--trans"), std::string::npos);
  r = run_cli("bogus");  // named, not "a subcommand is required"
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("bogus"), std::string::npos) << r.out;
  r = run_cli("");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("subcommand is required"), std::string::npos) << r.out;
  for (const char* s : {"-1", "nan", "1e30"}) {
    r = run_cli(std::string("tune --device cpu --seconds ") + s);
    EXPECT_NE(r.code, 0) << s;
    EXPECT_NE(r.out.find("--seconds"), std::string::npos) << s << ": " << r.out;
  }
}

TEST(Cli, UnusableResultsFileFailsBeforeAnyTiming) {
  test::TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("r_cpu.csv").c_str(), 0755), 0);
  CliRun r = run_cli("tune --device cpu --m 8 --n 8 --k 8 --seconds 0.01 --file " + dir.file("r.csv"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("is a directory"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("untuned :"), std::string::npos) << "timed before checking the file:\n" << r.out;
  test::write_text(dir.file("u.csv"), "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\n");
  r = run_cli("tune-file " + dir.file("u.csv") + " --device cpu --file " + dir.file("r.csv"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("is a directory"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[1/1]"), std::string::npos) << "tuned before checking the file:\n" << r.out;
}

TEST(Cli, TuneFileTakesTheEnvironmentAndItsFlagsOverrideIt) {
  test::TempDir dir;
  test::write_text(dir.file("u.csv"), "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\n");
  CliRun r = run_cli("tune-file " + dir.file("u.csv") + " --device cpu --file " + dir.file("r.csv"),
                     "TUNABLE_MAX_TUNING_ITERATIONS=bogus");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("TUNABLE_MAX_TUNING_ITERATIONS"), std::string::npos) << r.out;
  r = run_cli("tune-file " + dir.file("u.csv") + " --device cpu", "TUNABLE_FILENAME=" + dir.file("env.csv"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(parse_results(test::slurp(dir.file("env_cpu.csv"))).records.size(), 1u);
  r = run_cli("tune-file " + dir.file("u.csv") + " --device cpu --file " + dir.file("flag.csv"),
              "TUNABLE_FILENAME=" + dir.file("env.csv"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(parse_results(test::slurp(dir.file("flag_cpu.csv"))).records.size(), 1u);
}

TEST(Cli, ASecondDemoRunSaysItReusedTheStoredResult) {
  test::TempDir dir;
  const std::string args = "tune --device cpu --m 16 --n 16 --k 16 --seconds 0.02 --verbose 0 --file " + dir.file("r.csv");
  CliRun first = run_cli(args);
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_NE(first.out.find("tuning took"), std::string::npos) << first.out;
  CliRun second = run_cli(args);
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_EQ(second.out.find("tuning took"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("already stored"), std::string::npos) << second.out;
}

// `tunable run` on programs that make no GEMM (no GPU needed): the preload and the mode's
// environment reach the program, its exit status comes back, and the preload leaves it alone.
TEST(Cli, RunSetsUpThePreloadAndTheModeAndPassesTheExitStatusOn) {
  test::TempDir dir;
  const std::string show_env =
      "-- sh -c 'echo \"preload=$LD_PRELOAD enabled=$TUNABLE_ENABLED tuning=$TUNABLE_TUNING "
      "record=$TUNABLE_RECORD_UNTUNED file=$TUNABLE_FILENAME\"'";
  CliRun r = run_cli("run --record --file " + dir.file("r.csv") + " " + show_env);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("libtunable_preload.so"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("enabled=1 tuning=0 record=1 file=" + dir.file("r.csv")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the interposer saw no cuBLAS GEMM call"), std::string::npos) << r.out;
  CliRun t = run_cli("run --tune " + show_env);
  EXPECT_NE(t.out.find("enabled=1 tuning=1 record= "), std::string::npos) << t.out;
  CliRun u = run_cli("run " + show_env);  // --use is the default
  EXPECT_NE(u.out.find("enabled=1 tuning=0 record= "), std::string::npos) << u.out;
  // An LD_PRELOAD the user already had is kept, after ours.
  CliRun keep = run_cli("run " + show_env, "LD_PRELOAD=libc.so.6");
  EXPECT_NE(keep.out.find("libtunable_preload.so:libc.so.6"), std::string::npos) << keep.out;

  EXPECT_EQ(run_cli("run -- sh -c 'exit 7'").code, 7);
  CliRun missing = run_cli("run -- /nonexistent/program");
  EXPECT_EQ(missing.code, 127) << missing.out;
  EXPECT_NE(missing.out.find("cannot run /nonexistent/program"), std::string::npos) << missing.out;
  CliRun both = run_cli("run --use --tune -- true");
  EXPECT_NE(both.code, 0) << both.out;
  CliRun none = run_cli("run");
  EXPECT_NE(none.code, 0) << none.out;
  EXPECT_NE(none.out.find("command"), std::string::npos) << none.out;
  // A report file given by the user receives the report instead of the terminal.
  CliRun rep = run_cli("run --report " + dir.file("report.txt") + " -- true");
  EXPECT_EQ(rep.code, 0) << rep.out;
  EXPECT_EQ(rep.out.find("interposer"), std::string::npos) << rep.out;
}

TEST(Cli, ShowListsWhatARunRecorded) {
  test::TempDir dir;
  test::write_text(dir.file("u.csv"),
                   "GemmTunableOp_BFloat16_TN,tn_4096_1_4096_ld_4096_4096_4096\n"
                   "RmsNormTunableOp_BFloat16,rows_1_hidden_4096\n"
                   "GemmTunableOp_BFloat16_TN,tn_4096_1_4096_ld_4096_4096_4096\n");
  CliRun r = run_cli("show " + dir.file("u.csv"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("untuned file, 2 problems recorded (1 repeated lines)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows_1_hidden_4096"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tune them with: tunable tune-file"), std::string::npos) << r.out;
}

TEST(Cli, ShowReadsAnInterposerReport) {
  test::TempDir dir;
  // Two processes appended their reports (a program that starts a child under the same preload).
  test::write_text(dir.file("report.txt"),
                   "tunable interposer: served 6 of 10 GEMM calls\n"
                   "  cublasGemmEx                 served                                                   6\n"
                   "  cublasGemmEx                 forwarded: no tuned result (or Default is best)          4\n"
                   "tunable interposer: served 1 of 3 GEMM calls\n"
                   "  not served (2 calls): C of another type than A and B (0 vs 2)\n");
  CliRun r = run_cli("show " + dir.file("report.txt"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("forwarded: no tuned result"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 process(es), 7 of 13 GEMM calls served by tuned solutions"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tunable
