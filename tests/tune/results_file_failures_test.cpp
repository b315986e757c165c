// Results and untuned files under the failures a hostile environment brings: a full disk, a file
// copied over in place, a byte order mark, a lock another process holds, a FIFO as the verbose log,
// an oversized file and a file name with "%d" twice. Each test failed before its fix.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "process_util.hpp"
#include "test_util.hpp"
#include "tune/context_impl.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

using test::slurp;
using test::TempDir;
using test::write_text;

const std::vector<Validator> kVals = {{"TUNABLE_VERSION", "0.1.0"}, {"CPU_MODEL", "test cpu"}};
const std::string kHeader = "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,test cpu\n";

// A full disk: `g_budget` more bytes get written, then every write fails with ENOSPC (a short write
// first, as the kernel does when the disk fills in the middle of a buffer).
std::atomic<long long> g_budget{0};
ssize_t full_disk_write(int fd, const void* buf, std::size_t n) {
  const long long left = g_budget.load();
  if (left <= 0) {
    errno = ENOSPC;
    return -1;
  }
  const ssize_t w = ::write(fd, buf, std::min<std::size_t>(n, static_cast<std::size_t>(left)));
  if (w > 0) g_budget -= w;
  return w;
}

class FullDisk {
 public:
  explicit FullDisk(long long bytes_left) {
    g_budget = bytes_left;
    set_write_fn_for_testing(full_disk_write);
  }
  ~FullDisk() { set_write_fn_for_testing(nullptr); }
};

Status load(ResultsFile& f, std::vector<ResultRecord>* recs, LoadReport* rep) { return f.load(recs, rep); }

const ResultRecord kR1{"GemmTunableOp_float_NN", "nn_8_8_8_ld_8_8_8", "openblas_t16", 0.5};
const ResultRecord kR2{"GemmTunableOp_float_NN", "nn_72_72_72_ld_72_72_72", "openblas_t16", 1.5};
const ResultRecord kR3{"GemmTunableOp_float_NN", "nn_9_9_9_ld_9_9_9", "Default", 2};

TEST(FullDisk, AFailedAppendIsCutBackAndLeavesNoTornLine) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(load(f, &recs, &rep).is_ok());
  ASSERT_TRUE(f.append(kR1).is_ok());
  {
    FullDisk disk(20);  // the line gets cut after 20 bytes: "...,nn_72_72_72_ld_72_72_72,Defa" on a real disk
    const Status st = f.append(kR2);
    EXPECT_EQ(st.code(), StatusCode::kIoError);
    EXPECT_NE(st.message().find(std::strerror(ENOSPC)), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("partial line was removed"), std::string::npos) << st.message();
  }
  EXPECT_EQ(slurp(path), kHeader + format_record(kR1) + "\n");
  ASSERT_TRUE(f.append(kR3).is_ok());  // space again: the file goes on cleanly
  EXPECT_EQ(slurp(path), kHeader + format_record(kR1) + "\n" + format_record(kR3) + "\n");
  ParsedResults p = parse_results(slurp(path));
  EXPECT_TRUE(p.diagnostics.empty());
  EXPECT_EQ(p.records.size(), 2u);
}

TEST(FullDisk, AFailedHeaderLeavesAnEmptyFileThatIsStartedAgain) {
  TempDir dir;
  const std::string path = dir.file("r.csv");
  {
    FullDisk disk(10);
    ResultsFile f(path, kVals);
    std::vector<ResultRecord> recs;
    LoadReport rep;
    EXPECT_EQ(load(f, &recs, &rep).code(), StatusCode::kIoError);
  }
  EXPECT_EQ(slurp(path), "");
  ResultsFile again(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(load(again, &recs, &rep).is_ok());
  EXPECT_TRUE(rep.created);
  EXPECT_EQ(slurp(path), kHeader);
}

TEST(FullDisk, OurHeaderCutShortIsStartedAgain) {
  // A process killed (or a disk filled) while it wrote a new file's header: no .bak of a fragment,
  // no refusal to append, the header written again.
  TempDir dir;
  const std::string path = dir.file("r.csv");
  for (std::size_t cut : {std::size_t{0}, std::size_t{12}, kHeader.find('\n') + 1, kHeader.size() - 1}) {
    write_text(path, kHeader.substr(0, cut));
    ResultsFile f(path, kVals);
    std::vector<ResultRecord> recs;
    LoadReport rep;
    ASSERT_TRUE(load(f, &recs, &rep).is_ok()) << cut;
    EXPECT_TRUE(rep.created) << cut;
    EXPECT_TRUE(rep.backup_path.empty()) << cut;
    EXPECT_EQ(slurp(path), kHeader) << cut;
    write_text(path, kHeader.substr(0, cut));  // and again under a process that loaded it whole
    ASSERT_TRUE(f.append(kR1).is_ok()) << cut;
    EXPECT_EQ(slurp(path), kHeader + format_record(kR1) + "\n") << cut;
  }
}

TEST(FullDisk, ATornLastLineIsIgnoredWhenReadAndRemovedByTheNextAppend) {
  // A cut whose prefix is another valid name: "openblas_t16" cut to "openblas_t1" must not run.
  TempDir dir;
  const std::string path = dir.file("r.csv");
  const std::string good = kHeader + format_record(kR1) + "\n";
  write_text(path, good + "GemmTunableOp_float_NN,nn_72_72_72_ld_72_72_72,openblas_t1");
  ParsedResults p = parse_results(slurp(path));
  ASSERT_EQ(p.records.size(), 1u);
  ASSERT_EQ(p.diagnostics.size(), 1u);
  EXPECT_EQ(p.diagnostics[0].line, 4u);
  EXPECT_NE(p.diagnostics[0].message.find("no newline"), std::string::npos) << p.diagnostics[0].message;

  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(load(f, &recs, &rep).is_ok());
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].params_signature, kR1.params_signature);
  ASSERT_EQ(rep.diagnostics.size(), 1u);
  EXPECT_TRUE(rep.backup_path.empty());
  std::string dropped;
  ASSERT_TRUE(f.append(kR2, &dropped).is_ok());
  EXPECT_EQ(dropped, "GemmTunableOp_float_NN,nn_72_72_72_ld_72_72_72,openblas_t1");
  EXPECT_EQ(slurp(path), good + format_record(kR2) + "\n");
}

TEST(FullDisk, UntunedFileTornLineIsIgnoredAndAFailedRecordIsCutBack) {
  TempDir dir;
  const std::string path = dir.file("u.csv");
  write_text(path, "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\nGemmTunableOp_float_NN,nn_72_7");
  std::vector<ParseDiagnostic> diags;
  auto pairs = parse_untuned(slurp(path), &diags);
  ASSERT_EQ(pairs.size(), 1u);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].line, 2u);
  UntunedFile u(path);
  ASSERT_TRUE(u.record("GemmTunableOp_float_NN", "nn_9_9_9_ld_9_9_9").is_ok());
  EXPECT_EQ(slurp(path), "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\nGemmTunableOp_float_NN,nn_9_9_9_ld_9_9_9\n");
  {
    FullDisk disk(5);
    EXPECT_EQ(u.record("GemmTunableOp_float_NN", "nn_7_7_7_ld_7_7_7").code(), StatusCode::kIoError);
  }
  EXPECT_EQ(slurp(path), "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\nGemmTunableOp_float_NN,nn_9_9_9_ld_9_9_9\n");
  ASSERT_TRUE(u.record("GemmTunableOp_float_NN", "nn_7_7_7_ld_7_7_7").is_ok());  // not taken as recorded
  EXPECT_NE(slurp(path).find("nn_7_7_7_ld_7_7_7\n"), std::string::npos);
}

TEST(InPlaceOverwrite, AppendRefusesAFileCopiedOverInPlace) {
  // `cp foreign.csv r_cpu.csv` while a process tunes: same inode, larger, other validators.
  TempDir dir;
  const std::string path = dir.file("r.csv");
  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(load(f, &recs, &rep).is_ok());
  ASSERT_TRUE(f.append(kR1).is_ok());
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  std::string foreign = "Validator,TUNABLE_VERSION,0.1.0\nValidator,CPU_MODEL,another cpu\n";
  for (int i = 0; i < 20; ++i) foreign += "GemmTunableOp_float_NN,nn_" + std::to_string(i) + "_1_1_ld_1_1_1,Default,1\n";
  write_text(path, foreign);  // truncates and rewrites the same inode
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  ASSERT_EQ(before.st_ino, after.st_ino);
  ASSERT_GT(after.st_size, before.st_size);
  const Status st = f.append(kR2);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("replaced or rewritten"), std::string::npos) << st.message();
  EXPECT_EQ(slurp(path), foreign);
  // The same validators written over in place (another process of this build) are appended to.
  write_text(path, kHeader + format_record(kR3) + "\n");
  ASSERT_TRUE(f.append(kR2).is_ok());
  EXPECT_EQ(slurp(path), kHeader + format_record(kR3) + "\n" + format_record(kR2) + "\n");
}

TEST(ByteOrderMark, ALeadingBomIsIgnored) {
  const std::string bom = "\xEF\xBB\xBF";
  ParsedResults p = parse_results(bom + kHeader + format_record(kR1) + "\n");
  EXPECT_TRUE(p.diagnostics.empty());
  EXPECT_EQ(p.validators, kVals);
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.records[0].op_signature, kR1.op_signature);

  TempDir dir;
  const std::string path = dir.file("r.csv");
  write_text(path, bom + kHeader + format_record(kR1) + "\n");
  ResultsFile f(path, kVals);
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(load(f, &recs, &rep).is_ok());
  EXPECT_TRUE(rep.backup_path.empty()) << rep.mismatch;
  EXPECT_EQ(recs.size(), 1u);
  ASSERT_TRUE(f.append(kR2).is_ok());
  EXPECT_EQ(slurp(path), bom + kHeader + format_record(kR1) + "\n" + format_record(kR2) + "\n");

  std::vector<ParseDiagnostic> diags;
  auto pairs = parse_untuned(bom + "opA,p1\n", &diags);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first, "opA");
}

// Notices of a lock wait, collected.
struct Notices {
  std::vector<std::string> seen;
  LockWait wait(int timeout_ms, int notice_after_ms) {
    LockWait w;
    w.timeout_ms = timeout_ms;
    w.notice_after_ms = notice_after_ms;
    w.notice = [this](const std::string& s) { seen.push_back(s); };
    return w;
  }
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

TEST(LockHolder, LoadWaitsBoundedThenReadsWithoutWriting) {
  test::HangGuard guard(30);
  TempDir dir;
  const std::string path = dir.file("r.csv");
  write_text(path, kHeader + format_record(kR1) + "\n");
  test::LockHolder holder(path + ".lock");
  ASSERT_TRUE(holder.locked());
  Notices n;
  ResultsFile f(path, kVals, n.wait(400, 100));
  std::vector<ResultRecord> recs;
  LoadReport rep;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(load(f, &recs, &rep).is_ok());
  const double waited = ms_since(t0);
  EXPECT_GE(waited, 390);
  EXPECT_LT(waited, 5000);
  ASSERT_EQ(n.seen.size(), 1u);
  EXPECT_NE(n.seen[0].find("waiting for the lock on '" + path + ".lock'"), std::string::npos) << n.seen[0];
  EXPECT_EQ(recs.size(), 1u);  // its results are used
  EXPECT_NE(rep.read_only.find("gave up waiting for the lock"), std::string::npos) << rep.read_only;
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.append(kR2).code(), StatusCode::kIoError);  // and it is not written, without a second wait
  EXPECT_LT(ms_since(t1), 100);
  EXPECT_EQ(slurp(path), kHeader + format_record(kR1) + "\n");
}

TEST(LockHolder, AnAppendThatTimesOutGivesTheFileUp) {
  test::HangGuard guard(30);
  TempDir dir;
  const std::string path = dir.file("r.csv");
  Notices n;
  ResultsFile f(path, kVals, n.wait(300, 1000));
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ASSERT_TRUE(load(f, &recs, &rep).is_ok());
  test::LockHolder holder(path + ".lock");
  ASSERT_TRUE(holder.locked());
  auto t0 = std::chrono::steady_clock::now();
  const Status st = f.append(kR1);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("gave up waiting for the lock"), std::string::npos) << st.message();
  EXPECT_GE(ms_since(t0), 290);
  EXPECT_TRUE(n.seen.empty());  // shorter than the notice delay
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.append(kR2).code(), StatusCode::kIoError);  // given up: no second wait
  EXPECT_LT(ms_since(t0), 100);
  // An untuned file: the same bounded wait.
  test::LockHolder holder_u(dir.file("u.csv.lock"));
  UntunedFile u(dir.file("u.csv"), n.wait(200, 1000));
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(u.record("op", "p").code(), StatusCode::kIoError);
  EXPECT_LT(ms_since(t0), 5000);
  EXPECT_EQ(slurp(path), kHeader);
}

TEST(LockHolder, AContextWarnsAndRunsWithoutPersisting) {
  test::HangGuard guard(30);
  TempDir dir;
  Options o;
  o.enabled = true;
  o.filename = dir.file("r.csv");
  o.lock_timeout_ms = 1300;  // past the one-second notice
  test::LockHolder holder(dir.file("r_cpu.csv.lock"));
  ASSERT_TRUE(holder.locked());
  ContextImpl ctx(Device::cpu(), o, kVals);
  testing::internal::CaptureStderr();
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = ctx.ensure_loaded();  // no file yet, and it cannot be created without the lock
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_LT(ms_since(t0), 10000);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(err.find("waiting for the lock on"), std::string::npos) << err;
  EXPECT_NE(err.find("results stay in memory"), std::string::npos) << err;
  const Status added = ctx.add_result(kR1);  // kept in memory, reported
  EXPECT_EQ(added.code(), StatusCode::kIoError);
  EXPECT_EQ(ctx.find(kR1.op_signature, kR1.params_signature)->solution, kR1.solution);
}

TEST(LockHolder, TimeoutComesFromTheEnvironment) {
  {
    test::ScopedEnv env("TUNABLE_LOCK_TIMEOUT_MS", "250");
    EXPECT_EQ(Options::from_environment().lock_timeout_ms, 250);
  }
  EXPECT_EQ(Options().lock_timeout_ms, 10000);
  test::ScopedEnv bad("TUNABLE_LOCK_TIMEOUT_MS", "-1");
  try {
    (void)Options::from_environment();
    ADD_FAILURE() << "a negative lock timeout was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TUNABLE_LOCK_TIMEOUT_MS"), std::string::npos) << e.what();
  }
}

TEST(VerboseFifo, AFifoWithNoReaderIsRefusedWithoutBlocking) {
  test::HangGuard guard(30);
  TempDir dir;
  Options o;
  o.verbose = 1;
  o.filename.clear();
  o.verbose_filename = dir.file("log.txt");
  const std::string fifo = insert_ordinal(o.verbose_filename, Device::cpu());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  testing::internal::CaptureStderr();
  ContextImpl ctx(Device::cpu(), o, kVals);  // a blocking open would wait here for a reader forever
  const Status st = ctx.set_options(o);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("FIFO with no reader"), std::string::npos) << st.message();
  EXPECT_NE(err.find("logging to stderr"), std::string::npos) << err;

  // With a reader the FIFO is a fine log (a pipe from `tee` or a process substitution).
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(ctx.set_options(o).is_ok());
  ctx.log().line(1, "hello through the fifo");
  char buf[64] = {};
  EXPECT_GT(::read(reader, buf, sizeof buf - 1), 0);
  EXPECT_NE(std::string(buf).find("hello through the fifo"), std::string::npos) << buf;
  o.verbose = 0;
  ASSERT_TRUE(ctx.set_options(o).is_ok());  // closes the FIFO before the reader goes
  ::close(reader);
}

// Bytes this process has read through read(2)-like calls so far.
long long bytes_read_so_far() {
  std::ifstream io("/proc/self/io");
  std::string key;
  long long v = 0;
  while (io >> key >> v)
    if (key == "rchar:") return v;
  return -1;
}

TEST(OversizedFile, RefusedFromItsSizeBeforeReadingIt) {
  TempDir dir;
  const std::string path = dir.file("r_huge.csv");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 300ll << 20), 0);  // sparse: 300 MiB of zeros that take no disk
  ::close(fd);
  std::string text;
  bool exists = false;
  const long long before = bytes_read_so_far();
  const Status st = read_file(path, &text, &exists);
  const long long after = bytes_read_so_far();
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("it is not read"), std::string::npos) << st.message();
  EXPECT_TRUE(text.empty());
  if (before >= 0) EXPECT_LT(after - before, 1 << 20) << "the file was read before being refused";
  std::vector<ResultRecord> recs;
  LoadReport rep;
  ResultsFile f(path, kVals);
  EXPECT_EQ(load(f, &recs, &rep).code(), StatusCode::kIoError);
  EXPECT_TRUE(rep.backup_path.empty());  // kept where it is, never moved or clobbered
  struct stat sb {};
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_size, 300ll << 20);
}

TEST(FilenameOrdinal, EveryPercentDIsReplaced) {
  EXPECT_EQ(insert_ordinal("x%d%d.csv", Device::cuda(1)), "x11.csv");
  EXPECT_EQ(insert_ordinal("run%d/res_%d.csv", Device::cpu()), "runcpu/res_cpu.csv");
  EXPECT_EQ(insert_ordinal("%d", Device::cuda(7)), "7");
  EXPECT_EQ(insert_ordinal("a%%d.csv", Device::cuda(2)), "a%2.csv");
}

}  // namespace
}  // namespace tunable
