// Helpers shared by the end-to-end benchmarks: the work folder, the R-MAT
// benchmark dataset on disk, fanout-server child processes, JSON output.
#ifndef FANOUT_BENCH_BENCH_UTIL_H_
#define FANOUT_BENCH_BENCH_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/cpu.h"

namespace fanout::bench {

// The folder holding this binary (build/bin).
std::string BinDir();

// `requested`, or a fresh temporary folder named after `name` (then *own is
// true and the caller removes it).
std::string WorkDir(const std::string& requested, const char* name, bool* own);

// Writes DIR (unless it already holds a dataset) by running fanout-partition
// on the R-MAT benchmark graph: `parts` partitions by range (global ids stay
// the generator's), out-neighbors, `feature_dim` float32 features. Exits on failure.
void EnsureRmatDataset(const std::string& dir, int scale, int parts, int feature_dim);

struct ServerProcess {
  pid_t pid = -1;
  std::string ready_line;  // what the server printed when ready
  std::string rpc;         // host:port
  int admin_port = -1;     // -1 when started without an admin endpoint
};

// Starts `fanout-server` for one partition on free loopback ports and waits
// for its ready line. Exits on failure.
ServerProcess StartServerProcess(const std::string& dataset_dir, int partition, bool admin,
                                 const std::vector<std::string>& extra = {});

// SIGTERM, then waits; returns the exit status (0 when it drained cleanly).
int StopServerProcess(ServerProcess* server);

// A child process run to its end (RunChild).
struct ChildResult {
  int exit_code = -1;
  double wall_s = 0;
  int64_t peak_rss = 0;
  int64_t write_bytes = 0;  // wchar: bytes passed to write(2) and friends
};

// Runs argv (argv[0] a path) to its end, its output passing through:
// wall time, peak RSS (wait4) and bytes written (/proc/PID/io wchar, read
// before the child is reaped).
ChildResult RunChild(const std::vector<std::string>& argv);

// GET /stats of the admin endpoint on 127.0.0.1:admin_port, parsed; an
// empty object when it does not answer 200 within read_timeout_s.
nlohmann::json AdminStats(int admin_port, int read_timeout_s);

// Writes the cases (a JSON array) to `path` if it is not empty.
void WriteJson(const std::string& path, const nlohmann::json& cases);

// Runs fn(thread, iteration) -> units on `threads` threads (pinned to CPUs
// 0..threads-1 when `pin`) for about `seconds`; returns the units/s summed
// over the threads.
template <typename Fn>
double Measure(int threads, double seconds, Fn fn, bool pin = false) {
  using Clock = std::chrono::steady_clock;
  std::atomic<int64_t> units{0};
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      if (pin) (void)PinThisThread(t);
      int64_t u = 0, i = 0;
      auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
      while (Clock::now() < deadline) u += fn(t, i++);
      units += u;
    });
  }
  for (auto& th : ts) th.join();
  return units.load() / std::chrono::duration<double>(Clock::now() - start).count();
}

// n ids drawn uniformly from [lo, hi) (seeded: the same ids every run).
std::vector<int64_t> RandomIds(int64_t n, int64_t lo, int64_t hi, uint64_t seed);

// The median (0 for none).
double Median(std::vector<double> v);

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_BENCH_UTIL_H_
