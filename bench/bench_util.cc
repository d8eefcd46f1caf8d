#include "bench/bench_util.h"

#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

#include "common/random.h"
#include "server/ready_record.h"

namespace fanout::bench {

std::string BinDir() { return fs::path(fs::read_symlink("/proc/self/exe")).parent_path().string(); }

std::string WorkDir(const std::string& requested, const char* name, bool* own) {
  *own = requested.empty();
  if (!*own) return requested;
  std::string templ = (fs::temp_directory_path() / (std::string(name) + "-XXXXXX")).string();
  return mkdtemp(templ.data());
}

void EnsureRmatDataset(const std::string& dir, int scale, int parts, int feature_dim) {
  if (fs::exists(dir + "/meta.json")) return;
  std::printf(
      "partitioning R-MAT scale %d (%d-dim features, %d part(s) by range, out-neighbors) ...\n",
      scale, feature_dim, parts);
  std::string cmd = BinDir() + "/fanout-partition --quiet --format rmat --rmat-scale " +
                    std::to_string(scale) + " --feature-dim " + std::to_string(feature_dim) +
                    " --parts " + std::to_string(parts) +
                    " --method range --direction out --output " + dir + " > /dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "fanout-partition failed: %s\n", cmd.c_str());
    std::exit(1);
  }
}

ServerProcess StartServerProcess(const std::string& dataset_dir, int partition, bool admin,
                                 const std::vector<std::string>& extra) {
  int out[2];
  if (pipe(out) != 0) std::exit(1);
  std::string server = BinDir() + "/fanout-server", p = std::to_string(partition);
  std::vector<std::string> args = {server,   "--dataset", dataset_dir,    "--partition",     p,
                                   "--port", "0",         "--admin-port", admin ? "0" : "-1"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ServerProcess s;
  s.pid = fork();
  if (s.pid == 0) {
    prctl(PR_SET_PDEATHSIG,
          SIGKILL);  // never outlive the bench/test that started it (e.g. under timeout)
    dup2(out[1], 1);
    close(out[0]);
    execv(server.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  char line[4096];
  server::ReadyRecord ready;
  for (;;) {  // UCX may print warnings before the ready record
    if (!fgets(line, sizeof line, f)) {
      std::fprintf(stderr, "fanout-server for partition %d did not start\n", partition);
      std::exit(1);
    }
    if (server::DecodeReadyRecord(line, &ready)) break;
    if (std::string(line).rfind("fanout-server ready:", 0) == 0) s.ready_line = line;  // for people
  }
  fclose(f);  // the server's later output goes to a closed pipe: it only prints on shutdown
  s.rpc = ready.rpc();
  s.admin_port = ready.admin_port;
  return s;
}

int StopServerProcess(ServerProcess* server) {
  if (server->pid <= 0) return -1;
  kill(server->pid, SIGTERM);
  int status = 0;
  waitpid(server->pid, &status, 0);
  server->pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void WriteJson(const std::string& path, const nlohmann::json& cases) {
  if (path.empty()) return;
  std::ofstream(path) << cases.dump(2) << "\n";
  std::printf("wrote %s\n", path.c_str());
}

std::vector<int64_t> RandomIds(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = lo + static_cast<int64_t>(DrawBelow(rng.Next(), hi - lo));
  return v;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

ChildResult RunChild(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    execv(args[0], args.data());
    std::perror("execv");
    _exit(127);
  }
  ChildResult r;
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/io");
    std::string key;
    int64_t value = 0;
    while (f >> key >> value)
      if (key == "wchar:") r.write_bytes = value;
  }
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_rss = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  return r;
}

nlohmann::json AdminStats(int admin_port, int read_timeout_s) {
  httplib::Client c("127.0.0.1", admin_port);
  c.set_read_timeout(read_timeout_s, 0);
  auto r = c.Get("/stats");
  if (!r || r->status != 200) return nlohmann::json::object();
  return nlohmann::json::parse(r->body);
}

}  // namespace fanout::bench
