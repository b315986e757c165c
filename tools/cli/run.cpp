// `tunable run`: a program on tuned GEMMs without code changes. Starts the command with the cuBLAS
// preload library and the TUNABLE_* environment of the chosen mode, waits for it, and prints what
// the interposer served.
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "tunable/status.hpp"

namespace tunable::cli {

std::string executable_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

namespace {

std::string dir_of_executable() {
  const std::string p = executable_path();
  const std::size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// The preload library: TUNABLE_PRELOAD, else where a build tree (build/tools/tunable next to
// build/libtunable_preload.so) or an install (bin/ and lib/) puts it.
std::string find_preload() {
  if (const char* p = std::getenv("TUNABLE_PRELOAD")) {
    // The program would start without the interposer, or with whatever the variable names: check
    // it names a readable shared library file before handing it to the dynamic loader.
    struct stat st {};
    if (*p == '\0' || ::stat(p, &st) != 0 || !S_ISREG(st.st_mode) || ::access(p, R_OK) != 0)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("TUNABLE_PRELOAD='{}' is not a readable file{}", p,
                              *p && ::stat(p, &st) != 0 ? fmt::format(" ({})", std::strerror(errno)) : ""));
    return p;
  }
  const std::string dir = dir_of_executable();
  for (const std::string& c : {dir + "/../libtunable_preload.so", dir + "/../lib/libtunable_preload.so",
                               dir + "/libtunable_preload.so"})
    if (::access(c.c_str(), R_OK) == 0) return c;
  return "";
}

void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

}  // namespace

int run_program(const RunArgs& a) {
  if (a.command.empty()) {
    std::fprintf(stderr, "tunable run: no command given (tunable run [--use|--record|--tune] -- COMMAND ...)\n");
    return 2;
  }
  const std::string preload = find_preload();
  if (preload.empty()) {
    std::fprintf(stderr,
                 "tunable run: libtunable_preload.so was not found next to this executable; set TUNABLE_PRELOAD\n");
    return 2;
  }
  const char* old = std::getenv("LD_PRELOAD");
  set("LD_PRELOAD", old && *old ? preload + ":" + old : preload);
  set("TUNABLE_ENABLED", "1");
  // use: stored results only; record: also write each miss to the untuned file; tune: tune each
  // miss at its first call outside a capture, as PyTorch's TunableOp does.
  set("TUNABLE_TUNING", a.mode == "tune" ? "1" : "0");
  if (a.mode == "record") set("TUNABLE_RECORD_UNTUNED", "1");
  if (!a.file.empty()) set("TUNABLE_FILENAME", a.file);
  if (!a.untuned.empty()) set("TUNABLE_UNTUNED_FILENAME", a.untuned);
  char report_tmpl[] = "/tmp/tunable_run_report_XXXXXX";
  const int fd = ::mkstemp(report_tmpl);
  const std::string report = a.report.empty() ? (fd >= 0 ? report_tmpl : "") : a.report;
  if (fd >= 0) ::close(fd);
  if (!report.empty()) set("TUNABLE_PRELOAD_REPORT", report);

  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "tunable run: fork failed: %s\n", std::strerror(errno));
    return 2;
  }
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "tunable run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (a.report.empty() && fd >= 0) {
    std::ifstream in(report);
    std::stringstream text;
    text << in.rdbuf();
    if (!text.str().empty()) std::fprintf(stderr, "%s", text.str().c_str());
    else std::fprintf(stderr, "tunable run: the interposer saw no cuBLAS GEMM call\n");
    std::remove(report_tmpl);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace tunable::cli
