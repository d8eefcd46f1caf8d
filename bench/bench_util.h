// Helpers shared by the end-to-end benchmarks: the work folder, the R-MAT
// benchmark dataset on disk, fanout-server child processes, JSON output.
#ifndef FANOUT_BENCH_BENCH_UTIL_H_
#define FANOUT_BENCH_BENCH_UTIL_H_

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>

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
ServerProcess StartServerProcess(const std::string& dataset_dir, int partition, bool admin);

// SIGTERM, then waits; returns the exit status (0 when it drained cleanly).
int StopServerProcess(ServerProcess* server);

// Writes the cases (a JSON array) to `path` if it is not empty.
void WriteJson(const std::string& path, const nlohmann::json& cases);

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_BENCH_UTIL_H_
