// `tunable tune-file --devices all|0,1,...`: offline tuning spread over the GPUs of a host.
//
// One process per GPU (each its own CUDA context, cuBLAS handles and tuning lock, as a program on
// that GPU would have; a crash on one GPU does not take the others down). The parent writes the
// unique problems, biggest first, to a snapshot file; each child takes the next one from a shared
// counter whenever it is free, so a GPU that drew small problems takes more of them. Each child
// writes its results into its own device's file (the ordinal is inserted into the name, as a
// program on that GPU will read it); the parent then merges every device's new results into every
// other device's file through the library's locked append, and checks that each problem landed.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cli/commands.hpp"
#include "tunable/context.hpp"
#include "tunable/gemm.hpp"
#include "tunable/results.hpp"

extern char** environ;

namespace tunable::cli {
namespace {

std::vector<int> parse_devices(const std::string& spec) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw Error(StatusCode::kNoDevice, fmt::format("--devices {} given but no CUDA device is visible", spec));
  std::vector<int> out;
  if (spec == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string item = spec.substr(pos, comma - pos);
    if (item.empty() || item.size() > 6 || item.find_first_not_of("0123456789") != std::string::npos)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--devices takes 'all' or CUDA ordinals separated by commas (got '{}')", spec));
    const int d = std::stoi(item);
    if (d >= count)
      throw Error(StatusCode::kNoDevice, fmt::format("--devices names cuda:{} but {} device(s) are visible", d, count));
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw Error(StatusCode::kInvalidArgument, fmt::format("--devices names cuda:{} twice", d));
    out.push_back(d);
    pos = comma + 1;
  }
  return out;
}

// Seconds a call of the problem takes at best on an H100-class GPU (bytes at 3 TB/s, flops at
// 600 TFLOP/s): only the order matters, and tuning time follows the time of one call.
double estimated_cost(const std::string& op, const std::string& ps) {
  GemmDesc d;
  if (!parse_gemm_signature(op, ps, &d).is_ok()) return 0;  // fused ops: memory-bound and small
  const double b = static_cast<double>(d.batch);
  const double flops = 2.0 * b * d.m * d.n * d.k;
  const double bytes = b * (static_cast<double>(d.m) * d.k + static_cast<double>(d.k) * d.n +
                            static_cast<double>(d.m) * d.n) * 2;
  return std::max(bytes / 3e12, flops / 6e14);
}

std::string self_executable() {
  std::string p = executable_path();
  if (p.empty()) throw Error(StatusCode::kIoError, "cannot find this executable (/proc/self/exe) to start the tuners");
  return p;
}

struct TempDir {
  std::string path;
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/tunable_tune_file_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw Error(StatusCode::kIoError, fmt::format("cannot create a directory like {}: {}", tmpl, std::strerror(errno)));
    path = tmpl;
  }
  ~TempDir() {
    for (const char* f : {"/problems.csv", "/claim"}) std::remove((path + f).c_str());
    ::rmdir(path.c_str());
  }
};

Options merge_options(const TuneFileArgs& a) {
  Options o = Options::from_environment();
  o.enabled = true;
  o.tuning = false;  // the parent only merges
  o.verbose = 0;
  if (a.file_given) o.filename = a.file;
  return o;
}

}  // namespace

int run_tune_file_on_devices(const TuneFileArgs& a) {
  const std::vector<int> devices = parse_devices(a.devices);
  std::size_t duplicates = 0, bad_lines = 0;
  auto problems = read_unique_problems(a.untuned, &duplicates, &bad_lines);
  const Options o = merge_options(a);
  if (o.filename.empty())
    throw Error(StatusCode::kInvalidArgument, "no results file to tune into (--file or TUNABLE_FILENAME is empty)");
  // Biggest first: the last problems handed out are the short ones, so the GPUs finish together.
  // Biggest first; each problem's cost parsed once, not in every comparison.
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < problems.size(); ++i) order.emplace_back(estimated_cost(problems[i].first, problems[i].second), i);
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  {
    std::vector<std::pair<std::string, std::string>> sorted;
    for (const auto& o : order) sorted.push_back(std::move(problems[o.second]));
    problems = std::move(sorted);
  }
  TempDir tmp;
  const std::string snapshot = tmp.path + "/problems.csv", claim = tmp.path + "/claim";
  {
    std::ofstream f(snapshot);
    for (const auto& [op, ps] : problems) f << op << ',' << ps << '\n';
    std::ofstream c(claim);
    f.flush();
    c.flush();
    if (!f || !c) throw Error(StatusCode::kIoError, fmt::format("cannot write the work list under {}", tmp.path));
  }
  fmt::print("tuning {} problems{} on {} GPUs, one process each\n", problems.size(),
             duplicates ? fmt::format(" ({} duplicate lines skipped)", duplicates) : std::string(), devices.size());
  std::fflush(stdout);

  const std::string exe = self_executable();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<int, pid_t>> children;
  int failed = 0;
  for (int d : devices) {
    std::vector<std::string> args = {"tunable", "tune-file", snapshot, "--device", fmt::format("cuda:{}", d),
                                     "--claim", claim};
    if (a.file_given) args.insert(args.end(), {"--file", a.file});
    if (a.verbose_given) args.insert(args.end(), {"--verbose", std::to_string(a.verbose)});
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int e = ::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ);
    if (e != 0) {
      fmt::print(stderr, "tunable tune-file: cannot start the tuner for cuda:{}: {}\n", d, std::strerror(e));
      ++failed;
      continue;
    }
    children.emplace_back(d, pid);
  }
  for (const auto& [d, pid] : children) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    ++failed;
    if (WIFSIGNALED(status))
      fmt::print(stderr, "tunable tune-file: the tuner on cuda:{} was killed by signal {} ({})\n", d,
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
      fmt::print(stderr, "tunable tune-file: the tuner on cuda:{} exited with status {}\n", d, WEXITSTATUS(status));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Every device's file gets every other device's results. A device whose file cannot be used is
  // reported and left out; the others still merge.
  std::vector<std::unique_ptr<Context>> ctx;
  std::vector<std::string> paths;
  for (int d : devices) {
    ctx.push_back(std::make_unique<Context>(Device::cuda(d), o));
    paths.push_back(ctx.back()->results_path());
    const Status st = ctx.back()->load_results();
    if (!st.is_ok()) {
      fmt::print(stderr, "tunable tune-file: {}: {}\n", paths.back(), st.to_string());
      ++failed;
    }
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::size_t added_total = 0;
    for (std::size_t j = 0; j < devices.size(); ++j) {
      if (i == j || ::access(paths[j].c_str(), F_OK) != 0) continue;
      ResultsFileContents from;
      Status st = read_results_file(paths[j], &from);
      std::size_t added = 0;
      if (st.is_ok()) st = import_results(*ctx[i], from, &added);
      added_total += added;
      if (!st.is_ok()) {
        fmt::print(stderr, "tunable tune-file: merging {} into {}: {}\n", paths[j], paths[i], st.to_string());
        ++failed;
      }
    }
    std::set<std::pair<std::string, std::string>> have;
    for (const ResultRecord& r : ctx[i]->results()) have.insert({r.op_signature, r.params_signature});
    std::size_t missing = 0;
    for (const auto& p : problems)
      if (!have.count(p) && ++missing <= 5) fmt::print(stderr, "  {} lacks {},{}\n", paths[i], p.first, p.second);
    fmt::print("{}: {} results merged from the other GPUs; {} of the {} problems present\n", paths[i], added_total,
               problems.size() - missing, problems.size());
    if (missing) ++failed;
  }
  fmt::print("tuned {} problems on {} GPUs in {:.1f} s\n", problems.size(), devices.size(), wall);
  return failed == 0 && bad_lines == 0 ? 0 : 3;
}

}  // namespace tunable::cli
