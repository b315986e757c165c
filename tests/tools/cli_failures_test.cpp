// The `tunable` CLI when things go wrong: what it says must be what happened. A full disk, a memory
// limit, operands too large to address or to allocate, a results file that is a directory, a lock
// another process holds, an untuned file repeating one problem.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../tune/process_util.hpp"
#include "test_util.hpp"
#include "model/config.hpp"
#include "tune/results_file.hpp"

namespace tunable {
namespace {

struct CliRun {
  bool timed_out = false;
  int code = -1;  ///< exit code; -1 when a signal ended it
  std::string out;
};

/// Limits the CLI runs under, as `ulimit -f` / `ulimit -v` would set them.
struct Limits {
  long long file_bytes = -1;        ///< RLIMIT_FSIZE (SIGXFSZ ignored, so a write past it fails with EFBIG)
  long long extra_address_mib = -1;  ///< RLIMIT_AS: this test process's size plus this many MiB
};

std::size_t vm_size_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) << 10;
  return 0;
}

CliRun run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}, Limits lim = {},
            int timeout_ms = 60000) {
  int out[2];
  if (::pipe(out) != 0) return {};
  const std::size_t as_limit = lim.extra_address_mib >= 0 ? vm_size_bytes() + (lim.extra_address_mib << 20) : 0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    ::close(out[1]);
    ::setenv("CUDA_VISIBLE_DEVICES", "", 1);  // "auto" stays on the CPU even on a GPU machine
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl;
    if (lim.file_bytes >= 0) {
      rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(lim.file_bytes);
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    if (as_limit > 0) {
      rl.rlim_cur = rl.rlim_max = as_limit;
      ::setrlimit(RLIMIT_AS, &rl);
    }
    std::vector<char*> argv{const_cast<char*>(TUNABLE_CLI_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(TUNABLE_CLI_PATH, argv.data());
    _exit(127);
  }
  ::close(out[1]);
  CliRun r;
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  for (;;) {
    const int left = timeout_ms - static_cast<int>(std::chrono::duration<double, std::milli>(
                                                       std::chrono::steady_clock::now() - t0).count());
    if (left <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) continue;
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    r.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  return r;
}

bool has(const CliRun& r, const std::string& s) { return r.out.find(s) != std::string::npos; }

std::vector<std::string> tune_args(const std::string& file, int m, int n, int k, const char* dtype = "fp32") {
  return {"tune", "--device", "cpu", "--m", std::to_string(m), "--n", std::to_string(n), "--k", std::to_string(k),
          "--dtype", dtype, "--seconds", "0.01", "--verbose", "0", "--file", file};
}

TEST(CliFailures, AFailedAppendIsReportedNotWritten) {
  test::TempDir dir;
  const std::string file = dir.file("r.csv"), written = dir.file("r_cpu.csv");
  CliRun first = run_cli(tune_args(file, 16, 16, 16));
  ASSERT_EQ(first.code, 0) << first.out;
  const std::string before = test::slurp(written);
  // The disk is full 10 bytes after what the file holds: the next result's line cannot be written.
  CliRun full = run_cli(tune_args(file, 24, 24, 24), {}, Limits{static_cast<long long>(before.size()) + 10, -1});
  EXPECT_NE(full.code, 0) << full.out;
  EXPECT_FALSE(has(full, "wrote")) << full.out;
  EXPECT_FALSE(has(full, "internal")) << full.out;
  EXPECT_TRUE(has(full, "io_error: the tuned result")) << full.out;
  EXPECT_TRUE(has(full, "could not be written")) << full.out;
  EXPECT_TRUE(has(full, std::strerror(EFBIG))) << full.out;  // the library's warning says why
  EXPECT_EQ(test::slurp(written), before) << "a torn line was left behind";
}

TEST(CliFailures, TheResultsFileIsCheckedBeforeAnyBufferOrTiming) {
  // With a directory as the file, a shape whose operands take 16 GiB must not allocate them first.
  test::TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("r_cpu.csv").c_str(), 0755), 0);
  CliRun r = run_cli(tune_args(dir.file("r.csv"), 2147483647, 2, 1), {}, Limits{-1, 1024}, 30000);
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r, "is a directory")) << r.out;
  EXPECT_FALSE(has(r, "GEMM ")) << r.out;
}

TEST(CliFailures, OperandsTooLargeForTheHostNameTheirSize) {
  test::TempDir dir;
  CliRun r = run_cli(tune_args(dir.file("r.csv"), 2147483647, 2, 1, "fp64"), {}, Limits{-1, 1024}, 30000);
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r, "the operands need 48.0 GiB of host memory (A 16.0 GiB, B 16 B, C 32.0 GiB)")) << r.out;
  EXPECT_FALSE(has(r, "bad_alloc")) << r.out;
}

TEST(CliFailures, OperandSizesThatOverflowAreRefused) {
  // m * n = 2^61 + 2^30 - 1 fp64 elements: 8 times that wrapped to 8 GiB, and the fill wrote past it.
  test::TempDir dir;
  CliRun r = run_cli(tune_args(dir.file("r.csv"), 2147483647, 1073741825, 1, "fp64"), {}, Limits{-1, 1024}, 30000);
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "C would hold 2305843010287435775 elements of 8 bytes")) << r.out;
}

TEST(CliFailures, TuningWithoutTheMemoryForItSaysSoInsteadOfInternal) {
  // Operands of 256 MiB under an address-space limit 600 MiB above a process of this size (the CLI
  // maps about as much at start); tuning would need 1.5 GiB more (an input copy, the double-precision
  // reference and its check), far past any difference in size between the two processes.
  test::TempDir dir;
  CliRun r = run_cli(tune_args(dir.file("r.csv"), 8192, 8192, 1), {}, Limits{-1, 600}, 60000);
  ASSERT_FALSE(r.timed_out) << r.out;
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "not enough host memory to tune")) << r.out;
  EXPECT_TRUE(has(r, "recorded as untuned")) << r.out;  // the call itself ran Default
  EXPECT_FALSE(has(r, "internal")) << r.out;
}

TEST(CliFailures, TuneFileTunesEachProblemOnce) {
  test::TempDir dir;
  std::string lines;
  for (int i = 0; i < 50; ++i) lines += "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\n";
  lines += "GemmTunableOp_float_NT,nt_8_8_8_ld_8_8_8\nGemmTunableOp_float_NT,nt_8_8_8_ld_8_8_8\n";
  test::write_text(dir.file("u.csv"), lines);
  CliRun r = run_cli({"tune-file", dir.file("u.csv"), "--device", "cpu", "--file", dir.file("r.csv")});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "tuned 2 of 2 problems")) << r.out;
  EXPECT_TRUE(has(r, "(50 duplicate lines skipped)")) << r.out;
  EXPECT_FALSE(has(r, "[3/")) << r.out;
  EXPECT_EQ(parse_results(test::slurp(dir.file("r_cpu.csv"))).records.size(), 2u);
}

// The processes of `tune-file --devices` share one work list: started at once on the CPU provider,
// two of them tune every problem exactly once between them and both land in the results file.
TEST(CliFailures, TuneFileClaimsEachProblemForExactlyOneProcess) {
  test::TempDir dir;
  std::string lines;
  const int kProblems = 12;
  for (int i = 0; i < kProblems; ++i)
    lines += fmt::format("GemmTunableOp_float_NN,nn_{0}_8_8_ld_{0}_8_{0}\n", 8 + i);
  test::write_text(dir.file("u.csv"), lines);
  test::write_text(dir.file("claim"), "");
  pid_t pids[2];
  for (int c = 0; c < 2; ++c) {
    pids[c] = ::fork();
    ASSERT_GE(pids[c], 0);
    if (pids[c] == 0) {
      const int fd = ::open(dir.file(fmt::format("out{}", c)).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
      const std::string u = dir.file("u.csv"), claim = dir.file("claim"), file = dir.file("r.csv");
      const char* argv[] = {TUNABLE_CLI_PATH, "tune-file", u.c_str(), "--device", "cpu", "--claim",
                            claim.c_str(), "--file", file.c_str(), nullptr};
      ::execv(TUNABLE_CLI_PATH, const_cast<char**>(argv));
      _exit(127);
    }
  }
  for (pid_t p : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(p, &status, 0), p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  const std::string out = test::slurp(dir.file("out0")) + test::slurp(dir.file("out1"));
  for (int i = 1; i <= kProblems; ++i) {
    const std::string tag = fmt::format("cpu [{}/{}] ", i, kProblems);
    std::size_t seen = 0;
    for (std::size_t at = out.find(tag); at != std::string::npos; at = out.find(tag, at + 1)) ++seen;
    EXPECT_EQ(seen, 1u) << tag << " in\n" << out;
  }
  EXPECT_EQ(parse_results(test::slurp(dir.file("r_cpu.csv"))).records.size(), static_cast<std::size_t>(kProblems));
  EXPECT_EQ(test::slurp(dir.file("claim")), std::to_string(kProblems + 2));  // each process's last claim ends it
}

TEST(CliFailures, TuneFileOnDevicesNeedsAGpuAndExcludesDevice) {
  test::TempDir dir;
  test::write_text(dir.file("u.csv"), "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\n");
  CliRun r = run_cli({"tune-file", dir.file("u.csv"), "--devices", "all", "--file", dir.file("r.csv")});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "--devices all given but no CUDA device is visible")) << r.out;
  r = run_cli({"tune-file", dir.file("u.csv"), "--devices", "0", "--device", "cpu", "--file", dir.file("r.csv")});
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "excludes")) << r.out;
  r = run_cli({"tune-file", dir.file("u.csv"), "--device", "cuda:x", "--file", dir.file("r.csv")});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "--device must be cpu, cuda, cuda:N or auto (got 'cuda:x')")) << r.out;
}

TEST(CliFailures, ALockHeldElsewhereIsWaitedForThenGivenUp) {
  test::TempDir dir;
  test::write_text(dir.file("u.csv"), "GemmTunableOp_float_NN,nn_8_8_8_ld_8_8_8\n");
  test::LockHolder holder(dir.file("r_cpu.csv.lock"));
  ASSERT_TRUE(holder.locked());
  const auto t0 = std::chrono::steady_clock::now();
  CliRun r = run_cli({"tune-file", dir.file("u.csv"), "--device", "cpu", "--file", dir.file("r.csv")},
                  {"TUNABLE_LOCK_TIMEOUT_MS=1500"}, {}, 20000);
  ASSERT_FALSE(r.timed_out) << "hung on the lock:\n" << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r, "waiting for the lock on '" + dir.file("r_cpu.csv.lock") + "'")) << r.out;
  EXPECT_TRUE(has(r, "gave up waiting for the lock")) << r.out;
}

TEST(CliFailures, ShowReportsATornLastLineAndABom) {
  test::TempDir dir;
  test::write_text(dir.file("torn.csv"), "Validator,A,1\nop,p,openblas_t16,1\nop,q,openblas_t1");
  CliRun r = run_cli({"show", dir.file("torn.csv")});
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_TRUE(has(r, "torn.csv:3: last line has no newline")) << r.out;
  EXPECT_FALSE(has(r, "openblas_t1 ")) << r.out;
  test::write_text(dir.file("bom.csv"), "\xEF\xBB\xBFValidator,A,1\nop,p,s,1\n");
  r = run_cli({"show", dir.file("bom.csv")});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "1 validators, 1 results")) << r.out;
}


TEST(CliFailures, GenerateNamesAMissingTokenizerAndBadIdsBeforeAnyGpuWork) {
  test::TempDir dir;
  CliRun r = run_cli({"generate", "--model", dir.path(), "--prompt", "Hello"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "no tokenizer.json or tokenizer.model")) << r.out;
  r = run_cli({"generate", "--model", dir.path(), "--prompt-ids", "1,x"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "--prompt-ids: 'x' is not a token id")) << r.out;
  r = run_cli({"generate", "--model", dir.path()});
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "--prompt,--prompt-ids")) << r.out;
  r = run_cli({"bench-model", "--model", dir.path()});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "cannot be used")) << r.out;  // CUDA hidden: no device, said so
}


// A model directory as save_pretrained writes one (bf16, every tensor the configuration needs).
void write_model(const std::string& dir, const std::string& config) {
  test::write_text(dir + "/config.json", config);
  model::ModelConfig c;
  ASSERT_TRUE(model::parse_model_config(config, "config.json", &c).is_ok());
  std::string h = "{";
  std::uint64_t off = 0;
  for (const auto& [name, shape] : model::expected_tensors(c)) {
    std::uint64_t n = 1;
    std::string dims;
    for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d), dims += (dims.empty() ? "" : ",") + std::to_string(d);
    h += fmt::format("{}\"{}\":{{\"dtype\":\"BF16\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", h.size() > 1 ? "," : "",
                     name, dims, off, off + 2 * n);
    off += 2 * n;
  }
  h += "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(h.size() >> (8 * i));
  bytes += h + std::string(off, '\0');
  std::ofstream(dir + "/model.safetensors", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(CliFailures, TheEngineRefusesUnsupportedModelsAndAMissingGpuByName) {
  test::TempDir dir;
  // head_dim 4: refused before any GPU work, naming what the attention kernels take.
  write_model(dir.path(), R"({"architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":8,
    "intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1})");
  CliRun r = run_cli({"generate", "--model", dir.path(), "--prompt-ids", "1,2"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "head_dim 4 is not supported by the attention kernels (64, 128, 256)")) << r.out;
  // A text prompt goes through the tokenizer library (loaded at run time) first: the model's
  // refusal after it shows the text was tokenized.
  test::write_text(dir.file("tokenizer.json"), R"({"model":{"type":"BPE","vocab":{"h":0,"i":1,"hi":2},
    "merges":["h i"]},"added_tokens":[]})");
  r = run_cli({"generate", "--model", dir.path(), "--prompt", "hi"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "head_dim 4 is not supported")) << r.out;
  test::write_text(dir.file("tokenizer.json"), "{broken");
  r = run_cli({"generate", "--model", dir.path(), "--prompt", "hi"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "tokenizer.json: not valid JSON")) << r.out;
  r = run_cli({"generate", "--model", dir.path(), "--prompt", "hi"},
              {"TUNABLE_TOKENIZER_LIBRARY=/nonexistent/libtunable_tokenizer.so"});
  EXPECT_EQ(r.code, 1) << r.out;
  // FP8 weights need every linear layer's features in multiples of 16: refused by name at load,
  // before any GPU work (the same model loads in bf16 up to the GPU).
  test::TempDir odd;
  write_model(odd.path(), R"({"architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":64,
    "intermediate_size":24,"num_hidden_layers":1,"num_attention_heads":1,"num_key_value_heads":1})");
  r = run_cli({"generate", "--model", odd.path(), "--prompt-ids", "1,2", "--fp8"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "FP8 weights need") && has(r, "intermediate_size is 24")) << r.out;
  r = run_cli({"generate", "--model", odd.path(), "--prompt-ids", "1,2"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_FALSE(has(r, "FP8 weights need")) << r.out;
  // A supported model with the GPU hidden: a CUDA error that says so, no crash.
  test::TempDir ok;
  write_model(ok.path(), R"({"architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":64,
    "intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":1,"num_key_value_heads":1})");
  r = run_cli({"generate", "--model", ok.path(), "--prompt-ids", "1,2"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "no_device: no GPU")) << r.out;  // not a driver-version error with a source path
  EXPECT_FALSE(has(r, ".cpp")) << r.out;
}

// Hostile files and arguments (issue 59): each ends quickly in an error naming what is wrong.
TEST(CliFailures, HostileFilesAndArgumentsEndInNamedErrors) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  CliRun r = run_cli({"show", dir.file("fifo")}, {}, {}, 20000);  // blocked forever
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "is not a regular file")) << r.out;
  r = run_cli({"show", "/dev/zero"}, {}, {}, 20000);  // read until allocation failed
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(has(r, "'/dev/zero' is not a regular file")) << r.out;
  {
    std::ofstream(dir.file("big.csv")) << "Validator,A,1\n";
    ASSERT_EQ(::truncate(dir.file("big.csv").c_str(), 1ll << 30), 0);  // sparse: 1 GB was read whole first
  }
  r = run_cli({"show", dir.file("big.csv")}, {}, {}, 20000);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "1024.0 MiB, over the 64 MiB")) << r.out;

  write_model(dir.path(), R"({"architectures":["LlamaForCausalLM"],"vocab_size":16,"hidden_size":64,
    "intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":1,"num_key_value_heads":1})");
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::string m = dir.path();
  const std::vector<Case> cases = {
      {{"generate", "--model", m, "--prompt-ids", "1", "--temperature", "nan"}, "'nan' is not a finite number"},
      {{"generate", "--model", m, "--prompt-ids", "1", "--top-p", "NaN"}, "'NaN' is not a finite number"},
      {{"generate", "--model", m, "--prompt-ids", "1", "--seed", "-1"}, "'-1' is not a seed"},
      {{"generate", "--model", m, "--prompt-ids", "1", "--seed", "18446744073709551616"}, "is not a seed"},
      {{"generate", "--model", m, "--prompt-ids", ""}, "--prompt-ids: no values given"},
      {{"bench-model", "--model", m, "--batch", "1,x"}, "--batch: 'x' is not a count"},
  };
  for (const Case& c : cases) {
    r = run_cli(c.args);
    EXPECT_NE(r.code, 0) << r.out;
    EXPECT_TRUE(has(r, c.says)) << c.says << " in: " << r.out;
    EXPECT_FALSE(has(r, "--prompt-ids: '")) << r.out;
  }
  // A FIFO for the weights: refused, not waited on.
  std::remove(dir.file("model.safetensors").c_str());
  ASSERT_EQ(::mkfifo(dir.file("model.safetensors").c_str(), 0600), 0);
  r = run_cli({"generate", "--model", m, "--prompt-ids", "1"}, {}, {}, 20000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(has(r, "model.safetensors' is not a regular file")) << r.out;
  // Nesting past the stack, in the config and in the tokenizer, named with the file.
  test::write_text(dir.file("config.json"), "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  r = run_cli({"generate", "--model", m, "--prompt-ids", "1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "config.json: JSON nested deeper than 64 levels")) << r.out;
  // A tokenizer field of the wrong type: the file and the field, not the JSON library's words.
  test::write_text(dir.file("tokenizer.json"), R"({"model":{"type":"BPE","vocab":{"h":0},"merges":[],
    "byte_fallback":"yes"}})");
  r = run_cli({"generate", "--model", m, "--prompt", "hi"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "tokenizer.json: model.byte_fallback is \"yes\", not true or false")) << r.out;
  // `tunable run` checks the preload library the environment names before starting anything.
  r = run_cli({"run", "--", "true"}, {"TUNABLE_PRELOAD=/nonexistent/libtunable_preload.so"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "TUNABLE_PRELOAD='/nonexistent/libtunable_preload.so' is not a readable file")) << r.out;
}

}  // namespace
}  // namespace tunable
