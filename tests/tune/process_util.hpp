// Helpers for tests that involve other processes: a lock holder, forked children with a deadline,
// and an alarm that turns a hang into a failure.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace tunable::test {

/// A test that would hang without the fix under test fails instead: SIGALRM ends the process after
/// `seconds` (ctest reports it), unless the guard is gone by then.
class HangGuard {
 public:
  explicit HangGuard(unsigned seconds) { ::alarm(seconds); }
  ~HangGuard() { ::alarm(0); }
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;
};

/// Another process holding an flock on `path` (as `flock path sleep 60` would) until destroyed.
class LockHolder {
 public:
  explicit LockHolder(const std::string& path) {
    int ready[2];
    if (::pipe(ready) != 0) return;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // Gone with the test: a test killed by its HangGuard must not leave the lock held (nor the
      // test runner's output pipe open).
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(1);
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0666);
      if (fd < 0 || ::flock(fd, LOCK_EX) != 0) _exit(1);
      const char c = 'x';
      if (::write(ready[1], &c, 1) != 1) _exit(1);
      for (;;) ::pause();
    }
    char c = 0;
    locked_ = pid_ > 0 && ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~LockHolder() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;
  bool locked() const { return locked_; }

 private:
  pid_t pid_ = -1;
  bool locked_ = false;
};

/// Outcome of run_in_child: its exit code, or the signal that ended it, or a timeout.
struct ChildResult {
  bool timed_out = false;
  int exit_code = -1;  ///< when it exited
  int signal = 0;      ///< when a signal ended it
};

/// Runs `fn` in a forked child whose exit code is fn's return value (an exception: 99). The child is
/// killed when it runs past `timeout_ms`. A forked child has only the forking thread: it must not use
/// anything that relies on threads the parent started (OpenBLAS's pool among them).
inline ChildResult run_in_child(const std::function<int()>& fn, int timeout_ms) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 99;
    try {
      code = fn();
    } catch (...) {
    }
    _exit(code);
  }
  ChildResult r;
  if (pid < 0) return r;
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(timeout_ms)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace tunable::test
