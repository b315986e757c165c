// Several processes appending to one results file and one untuned file, one of them killed with
// SIGKILL in the middle of writing a line: afterwards every line is whole and every problem is
// there exactly once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "process_util.hpp"
#include "test_util.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

const std::vector<Validator> kVals = {{"TUNABLE_VERSION", "0.1.0"}, {"CPU_MODEL", "test cpu"}};
constexpr int kWriters = 4;
constexpr int kPerWriter = 150;
constexpr int kVictimWhole = 5;  // lines the victim writes whole before it is killed in the next one
constexpr int kUntunedProblems = 40;

// Writes the first half of a buffer, then the process is killed: the kernel drops the lock with it.
ssize_t killed_mid_write(int fd, const void* buf, std::size_t n) {
  const ssize_t w = ::write(fd, buf, n / 2);
  if (w > 0) ::raise(SIGKILL);
  return w;
}

std::string result_key(int writer, int i) { return "w" + std::to_string(writer) + "_" + std::to_string(i); }

// A writer process: waits at the gate, then appends its results and records untuned problems that
// overlap with every other writer's. The victim (writer kWriters) is killed in its sixth line.
int writer(int id, int gate, const std::string& results, const std::string& untuned) {
  char c;
  if (::read(gate, &c, 1) != 0) return 20;  // the parent closes the gate: read returns 0
  ResultsFile f(results, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  if (!f.load(&recs, &rep).is_ok()) return 21;
  const bool victim = id == kWriters;
  UntunedFile u(untuned);
  for (int i = 0; i < kPerWriter; ++i) {
    if (victim && i == kVictimWhole) set_write_fn_for_testing(killed_mid_write);
    if (!f.append({"GemmTunableOp_float_NN", result_key(id, i), "openblas_t16", 0.5 + i}).is_ok()) return 22;
    if (!victim && !u.record("GemmTunableOp_float_NN", "p" + std::to_string((i + 7 * id) % kUntunedProblems)).is_ok())
      return 23;
  }
  return victim ? 24 : 0;  // the victim never gets here
}

TEST(ConcurrentAppend, ProcessesAppendingWithOneKilledMidLineLeaveWholeLinesOnce) {
  test::HangGuard guard(60);
  test::TempDir dir;
  const std::string results = dir.file("r.csv"), untuned = dir.file("u.csv");
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> kids;
  for (int id = 0; id <= kWriters; ++id) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      _exit(writer(id, gate[0], results, untuned));
    }
    kids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // all start at once
  for (int id = 0; id <= kWriters; ++id) {
    int status = 0;
    ASSERT_EQ(::waitpid(kids[id], &status, 0), kids[id]);
    if (id == kWriters) {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the victim was not killed mid-line";
    } else {
      ASSERT_TRUE(WIFEXITED(status)) << "writer " << id;
      EXPECT_EQ(WEXITSTATUS(status), 0) << "writer " << id;
    }
  }
  // A later process appends once more: if the victim's torn line was the last one, it goes now.
  ResultsFile later(results, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(later.load(&recs, &rep).is_ok());
  EXPECT_LE(rep.diagnostics.size(), 1u);  // at most the victim's torn line, when it was the last
  ASSERT_TRUE(later.append({"GemmTunableOp_float_NN", "later", "Default", 1}).is_ok());

  const std::string text = test::slurp(results);
  ASSERT_EQ(text.back(), '\n');
  ParsedResults p = parse_results(text);
  for (const auto& d : p.diagnostics) ADD_FAILURE() << "line " << d.line << ": " << d.message;
  EXPECT_EQ(p.validators, kVals);  // the header once
  std::map<std::string, int> seen;
  for (const auto& r : p.records) ++seen[r.params_signature];
  for (int id = 0; id <= kWriters; ++id) {
    const int whole = id == kWriters ? kVictimWhole : kPerWriter;
    for (int i = 0; i < whole; ++i) EXPECT_EQ(seen[result_key(id, i)], 1) << result_key(id, i);
  }
  EXPECT_EQ(seen.count(result_key(kWriters, kVictimWhole)), 0u) << "the torn line was used";
  EXPECT_EQ(seen["later"], 1);
  EXPECT_EQ(p.records.size(), static_cast<std::size_t>(kWriters * kPerWriter + kVictimWhole + 1));

  std::vector<ParseDiagnostic> diags;
  std::map<std::string, int> problems;
  for (const auto& [op, ps] : parse_untuned(test::slurp(untuned), &diags)) ++problems[ps];
  EXPECT_TRUE(diags.empty());
  EXPECT_EQ(problems.size(), static_cast<std::size_t>(kUntunedProblems));
  for (const auto& [ps, n] : problems) EXPECT_EQ(n, 1) << ps;
}

}  // namespace
}  // namespace tunable
