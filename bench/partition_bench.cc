// fanout-bench-partition: partitions the R-MAT benchmark graph (default scale
// 22, 64-dim features) into 4 parts with METIS and with random, recording wall
// time, peak RSS and store size, then loads one partition and compares the
// load rate with the disk's sequential read rate of the same files, both
// measured cold (pages evicted with posix_fadvise) in the same run.
//
// Case "bounded": a graph larger than the memory it may use (default R-MAT
// scale 24, 268 M edges, --memory-limit 4G) partitioned in bounded memory:
// wall time, peak RSS beside the limit, bytes the process wrote (spill and
// stores, from /proc/<pid>/io) per second beside the disk's sequential write
// rate measured in the same run (8 MiB writes, then fdatasync).
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/bench_util.h"
#include "common/cpu.h"
#include "datasets/bounded_partition.h"
#include "datasets/partition_store.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using fanout::bench::ChildResult;
using fanout::bench::RunChild;

int64_t FolderBytes(const std::string& dir) {
  int64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) total += static_cast<int64_t>(e.file_size());
  return total;
}

void Evict(const std::string& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    int fd = open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

// Sequential read of every file in the folder with 8 MiB reads; bytes/s.
double SequentialRead(const std::string& dir) {
  std::vector<char> buf(8 << 20);
  int64_t bytes = 0;
  auto t0 = Clock::now();
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    int fd = open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    ssize_t n;
    while ((n = read(fd, buf.data(), buf.size())) > 0) bytes += n;
    close(fd);
  }
  return bytes / std::chrono::duration<double>(Clock::now() - t0).count();
}

// The disk's sequential write rate: `bytes` in 8 MiB writes to a new file in
// `dir`, then fdatasync (bytes/s; the file is removed).
double SequentialWrite(const std::string& dir, int64_t bytes) {
  std::string path = dir + "/write-probe";
  std::vector<char> buf(8 << 20, 'x');
  auto t0 = Clock::now();
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) return 0;
  int64_t done = 0;
  while (done < bytes) {
    ssize_t n = write(fd, buf.data(), buf.size());
    if (n <= 0) break;
    done += n;
  }
  fdatasync(fd);
  close(fd);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  unlink(path.c_str());
  return done / secs;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-partition: partition the R-MAT benchmark graph with METIS and random, then "
      "load a partition."};
  int scale = 22, parts = 4;
  int64_t feature_dim = 64;
  std::string work, json_path;
  std::vector<std::string> methods{"metis", "random"};
  app.add_option("--scale", scale, "R-MAT scale")->default_val(22)->check(CLI::Range(8, 26));
  app.add_option("--feature-dim", feature_dim, "Synthetic feature dimension")->default_val(64);
  app.add_option("--parts", parts, "Partitions")->default_val(4);
  int bounded_scale = 24;
  int64_t bounded_feature_dim = 0;
  std::string memory_limit = "4G", bounded_method = "random";
  bool bounded = true;
  app.add_option("--methods", methods,
                 "Partitioners to measure in memory (none: skip them and the load case)")
      ->default_val(methods);
  app.add_option("--bounded-scale", bounded_scale, "Case bounded: R-MAT scale")
      ->default_val(24)
      ->check(CLI::Range(8, 30));
  app.add_option("--bounded-feature-dim", bounded_feature_dim,
                 "Case bounded: synthetic feature dimension")
      ->default_val(0);
  app.add_option("--bounded-method", bounded_method, "Case bounded: random, range or hash")
      ->default_val("random")
      ->check(CLI::IsMember({"random", "range", "hash"}));
  app.add_option("--memory-limit", memory_limit, "Case bounded: fanout-partition --memory-limit")
      ->default_val("4G");
  app.add_option("--bounded", bounded, "Run case bounded (true/false)")->default_val(true);
  app.add_option("--work-dir", work,
                 "Folder for the stores (default: a temporary folder, removed after)");
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  bool own_work = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-partition", &own_work);
  std::string tool = fanout::bench::BinDir() + "/fanout-partition";
  nlohmann::json cases = nlohmann::json::array();
  std::string load_dir;
  if (methods.size() == 1 && methods[0] == "none") methods.clear();
  for (const std::string& m : methods) {
    std::string out = work + "/rmat" + std::to_string(scale) + "-" + m;
    fs::remove_all(out);
    std::printf("partitioning R-MAT scale %d (%lld-dim features) into %d parts with %s ...\n",
                scale, static_cast<long long>(feature_dim), parts, m.c_str());
    ChildResult r =
        RunChild({tool, "--format", "rmat", "--rmat-scale", std::to_string(scale), "--feature-dim",
                  std::to_string(feature_dim), "--num-classes", "16", "--parts",
                  std::to_string(parts), "--method", m, "--output", out, "--quiet"});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "fanout-partition failed (exit %d)\n", r.exit_code);
      return 1;
    }
    fanout::datasets::DatasetMeta meta;
    if (!fanout::datasets::ReadDatasetMeta(out, &meta).ok()) return 1;
    int64_t bytes = FolderBytes(out);
    std::printf(
        "  %s: %.1f s wall, peak RSS %.2f GiB, store %.2f GiB, edge cut %.4f, node balance %.3f\n",
        m.c_str(), r.wall_s, r.peak_rss / double(1 << 30), bytes / double(1 << 30),
        meta.stats.edge_cut_fraction, meta.stats.node_balance);
    cases.push_back({{"case", "partition"},
                     {"method", m},
                     {"scale", scale},
                     {"parts", parts},
                     {"feature_dim", feature_dim},
                     {"wall_s", r.wall_s},
                     {"peak_rss_bytes", r.peak_rss},
                     {"store_bytes", bytes},
                     {"edge_cut_fraction", meta.stats.edge_cut_fraction},
                     {"node_balance", meta.stats.node_balance}});
    load_dir = out;
  }

  if (bounded) {
    std::string out = work + "/rmat" + std::to_string(bounded_scale) + "-bounded";
    fs::remove_all(out);
    const int64_t probe_bytes = int64_t{2} << 30;
    std::printf("disk: sequential write of %.1f GiB in %s ...\n", probe_bytes / double(1 << 30),
                work.c_str());
    double disk_write = SequentialWrite(work, probe_bytes);
    std::printf(
        "partitioning R-MAT scale %d (%lld-dim features) into %d parts with %s in bounded memory "
        "(%s) ...\n",
        bounded_scale, static_cast<long long>(bounded_feature_dim), parts, bounded_method.c_str(),
        memory_limit.c_str());
    ChildResult r = RunChild(
        {tool, "--format", "rmat", "--rmat-scale", std::to_string(bounded_scale), "--feature-dim",
         std::to_string(bounded_feature_dim), "--parts", std::to_string(parts), "--method",
         bounded_method, "--memory-limit", memory_limit, "--spill-dir", work, "--output", out});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "fanout-partition failed (exit %d)\n", r.exit_code);
      return 1;
    }
    fanout::datasets::DatasetMeta meta;
    if (!fanout::datasets::ReadDatasetMeta(out, &meta).ok()) return 1;
    int64_t limit_bytes = 0;
    if (!fanout::datasets::ParseByteSize(memory_limit, &limit_bytes).ok()) return 1;
    const int64_t store = FolderBytes(out);
    const double write_rate = r.write_bytes / r.wall_s;
    std::printf(
        "  bounded: %lld edges in %.1f s (%.2f M edges/s); peak RSS %.2f GiB of the %.2f GiB limit "
        "(%.2f)\n",
        static_cast<long long>(meta.num_edges), r.wall_s, meta.num_edges / r.wall_s / 1e6,
        r.peak_rss / double(1 << 30), limit_bytes / double(1 << 30),
        r.peak_rss / double(limit_bytes));
    std::printf(
        "  wrote %.2f GiB (store %.2f GiB, the rest spill) = %.0f MB/s; disk sequential write %.0f "
        "MB/s; "
        "ratio %.2f\n",
        r.write_bytes / double(1 << 30), store / double(1 << 30), write_rate / 1e6,
        disk_write / 1e6, write_rate / disk_write);
    cases.push_back({{"case", "bounded"},
                     {"method", bounded_method},
                     {"scale", bounded_scale},
                     {"parts", parts},
                     {"feature_dim", bounded_feature_dim},
                     {"memory_limit_bytes", limit_bytes},
                     {"peak_rss_bytes", r.peak_rss},
                     {"under_limit", r.peak_rss <= limit_bytes},
                     {"edges", meta.num_edges},
                     {"seconds", r.wall_s},
                     {"bytes_written", r.write_bytes},
                     {"store_bytes", store},
                     {"write_bytes_per_s", write_rate},
                     {"disk_write_bytes_per_s", disk_write},
                     {"ratio", write_rate / disk_write}});
    fs::remove_all(out);
  }

  if (load_dir.empty()) {
    if (own_work) fs::remove_all(work);
    fanout::bench::WriteJson(json_path, cases);
    return 0;
  }
  // Load partition 0 of the last store, cold, beside a cold sequential read.
  std::string part_dir = load_dir + "/part-0";
  int64_t part_bytes = FolderBytes(part_dir);
  Evict(part_dir);
  double disk = SequentialRead(part_dir);
  Evict(part_dir);
  auto t0 = Clock::now();
  fanout::datasets::PartitionData data;
  fanout::datasets::OpenOptions oo;
  oo.expected_num_parts = parts;
  fanout::Status st = fanout::datasets::OpenPartition(load_dir, 0, oo, &data);
  double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  double hot_read = SequentialRead(part_dir);
  auto t1 = Clock::now();
  st = fanout::datasets::OpenPartition(load_dir, 0, oo, &data);
  double hot_load_s = std::chrono::duration<double>(Clock::now() - t1).count();
  double rate = part_bytes / load_s, hot_rate = part_bytes / hot_load_s;
  std::printf("load part 0 (%.2f GiB on disk, %lld nodes, %lld edges, arrays %.2f GiB):\n",
              part_bytes / double(1 << 30), static_cast<long long>(data.num_nodes()),
              static_cast<long long>(data.indices.size()), data.RawBytes() / double(1 << 30));
  std::printf(
      "  cold: load %.2f s = %.0f MB/s; sequential read of the same files %.0f MB/s; ratio %.2f\n",
      load_s, rate / 1e6, disk / 1e6, rate / disk);
  std::printf(
      "  hot (page cache): load %.2f s = %.0f MB/s; sequential read %.0f MB/s; ratio %.2f\n",
      hot_load_s, hot_rate / 1e6, hot_read / 1e6, hot_rate / hot_read);
  cases.push_back({{"case", "load"},
                   {"store_bytes", part_bytes},
                   {"array_bytes", data.RawBytes()},
                   {"load_s", load_s},
                   {"bytes_per_s", rate},
                   {"disk_read_bytes_per_s", disk},
                   {"ratio", rate / disk},
                   {"hot_bytes_per_s", hot_rate},
                   {"hot_read_bytes_per_s", hot_read},
                   {"hot_ratio", hot_rate / hot_read}});
  if (own_work) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  return 0;
}
