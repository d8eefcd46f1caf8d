// fanout-server child processes for tests that kill, stop or restart a
// server the way an operator's cluster would (kill -9, SIGSTOP).
#ifndef FANOUT_TESTS_SERVER_CHILD_SERVER_H_
#define FANOUT_TESTS_SERVER_CHILD_SERVER_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "server/ready_record.h"

namespace fanout::server::testing {

// A fanout-server child process, its ports read from its ready record.
struct Child {
  pid_t pid = -1;
  int port = 0, data_port = 0, admin_port = 0;  // admin: only with --admin-port 0 (else off)
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

// Starts fanout-server for `partition` of `dir` on any free ports, with
// `extra` flags; returns once it is ready (port 0 when it never was).
inline Child StartChild(const std::string& dir, int partition,
                        const std::vector<std::string>& extra = {}) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  const std::string bin = std::string(FANOUT_BIN_DIR) + "/fanout-server",
                    p = std::to_string(partition);
  std::vector<std::string> args = {bin, "--dataset", dir, "--partition", p, "--port", "0"};
  if (std::find(extra.begin(), extra.end(), "--admin-port") == extra.end()) {
    args.push_back("--admin-port");
    args.push_back("-1");
  }
  args.insert(args.end(), extra.begin(), extra.end());
  // Children are killed and stopped to test the RPC paths' faults: no
  // same-host export unless a test asks for one.
  if (std::find(extra.begin(), extra.end(), "--local-socket") == extra.end()) {
    args.push_back("--local-socket");
    args.push_back("off");
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    prctl(PR_SET_PDEATHSIG,
          SIGKILL);  // never outlive the bench/test that started it (e.g. under timeout)
    dup2(out[1], 1);
    close(out[0]);
    // Nothing of the test runner's stays open in the child (ctest waits for it).
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  char line[4096] = {0};
  ReadyRecord ready;
  bool is_ready = false;
  while (!is_ready && fgets(line, sizeof line, f) != nullptr)  // UCX may print warnings first
    is_ready = DecodeReadyRecord(line, &ready);
  fclose(f);
  if (!is_ready) return c;
  c.port = ready.rpc_port;
  c.data_port = ready.data_port;
  c.admin_port = ready.admin_port;
  return c;
}

// Kills (SIGCONT first, for a stopped one) and reaps whatever child is still
// running when it goes out of scope: no child outlives a test, whatever fails.
struct Reaper {
  std::vector<Child*> c;
  ~Reaper() {
    for (Child* x : c)
      if (x->pid > 0 && waitpid(x->pid, nullptr, WNOHANG) == 0) {
        kill(x->pid, SIGCONT);
        kill(x->pid, SIGKILL);
        waitpid(x->pid, nullptr, 0);
      }
  }
};

// SIGSTOP, and wait until every thread of the process has stopped (the
// signal is asynchronous: a request sent at once could still be answered).
inline void StopProcess(pid_t pid) {
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  for (int i = 0; i < 400; ++i) {
    bool all = true;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(path, ec)) {
      std::ifstream f(t.path() / "stat");
      std::string line;
      std::getline(f, line);
      const size_t r = line.rfind(')');
      if (r == std::string::npos || r + 2 >= line.size() ||
          (line[r + 2] != 'T' && line[r + 2] != 't'))
        all = false;
    }
    if (all && !ec) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  FAIL() << "process " << pid << " did not stop";
}

// kill -9, and reap it.
inline void KillProcess(Child* c) {
  kill(c->pid, SIGKILL);
  waitpid(c->pid, nullptr, 0);
  c->pid = -1;
}

}  // namespace fanout::server::testing

#endif  // FANOUT_TESTS_SERVER_CHILD_SERVER_H_
