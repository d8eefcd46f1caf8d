// fanout-bench-peers-worker: Fanout's side of `./run bench peers`, case
// in_process (bench/peers_bench.py runs it beside the peers' own workers in
// bench/peers_worker.py). It maps the graph the bench wrote as NumPy files
// (DIR/indptr.npy, DIR/indices.npy: int64 CSR whose row v holds v's
// in-neighbors, the rows every system samples) and the round's seed order
// (--order: int64 train ids, shuffled by the bench; batch b is its b-th slice
// of --batch ids, wrapping), copies the CSR into memory laid out as
// fanout-server holds a partition (huge pages; neighbor ids in 32 bits where
// they fit, --index-bits), and samples [15,10,5] batches on one pinned
// thread with MultiHopSampler for --seconds after --warmup batches. It prints
// one JSON object: batches, sampled edges, wall and CPU seconds of the
// process.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cpu.h"
#include "common/version.h"
#include "sampler/multihop.h"

namespace sp = fanout::sampler;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fanout-bench-peers-worker: %s\n", what.c_str());
  std::exit(1);
}

// A read-only mapping of a one-dimensional little-endian int64 .npy file
// (format 1.0-3.0, C order): what numpy.save writes for an int64 vector.
struct NpyInt64 {
  const int64_t* data = nullptr;
  int64_t size = 0;
  void* map = MAP_FAILED;
  size_t map_bytes = 0;

  explicit NpyInt64(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) Fail(path + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) Fail(path + ": " + std::strerror(errno));
    map_bytes = static_cast<size_t>(st.st_size);
    if (map_bytes < 12) Fail(path + ": too short for a .npy file");
    map = mmap(nullptr, map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) Fail(path + ": mmap: " + std::strerror(errno));
    const auto* p = static_cast<const unsigned char*>(map);
    if (std::memcmp(p, "\x93NUMPY", 6) != 0) Fail(path + ": not a .npy file");
    size_t header_len = 0, header_at = 0;
    if (p[6] == 1) {
      header_len = p[8] | (size_t{p[9]} << 8), header_at = 10;
    } else if (p[6] == 2 || p[6] == 3) {
      header_len = p[8] | (size_t{p[9]} << 8) | (size_t{p[10]} << 16) | (size_t{p[11]} << 24);
      header_at = 12;
    } else {
      Fail(path + ": .npy format version " + std::to_string(p[6]) + " is not known");
    }
    if (header_at + header_len > map_bytes) Fail(path + ": header runs past the file");
    const std::string header(reinterpret_cast<const char*>(p + header_at), header_len);
    if (header.find("'descr': '<i8'") == std::string::npos)
      Fail(path + ": not int64 little-endian (header " + header + ")");
    if (header.find("'fortran_order': False") == std::string::npos)
      Fail(path + ": Fortran order is not read");
    const size_t open_paren = header.find("'shape': (");
    if (open_paren == std::string::npos) Fail(path + ": no shape in the header");
    const char* s = header.c_str() + open_paren + 10;
    char* end = nullptr;
    const long long n = std::strtoll(s, &end, 10);
    if (end == s || n < 0 || (*end != ',' && *end != ')') || (*end == ',' && end[1] != ')'))
      Fail(path + ": not a one-dimensional array (header " + header + ")");
    const size_t data_at = header_at + header_len;
    if (data_at % 8 != 0) Fail(path + ": data not 8-byte aligned");
    if ((map_bytes - data_at) / 8 < static_cast<size_t>(n))
      Fail(path + ": shorter than its shape says");
    data = reinterpret_cast<const int64_t*>(p + data_at);
    size = n;
  }
  ~NpyInt64() {
    if (map != MAP_FAILED) munmap(map, map_bytes);
  }
  NpyInt64(const NpyInt64&) = delete;
  NpyInt64& operator=(const NpyInt64&) = delete;
};

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-peers-worker: Fanout's in-process sampler on the graph `./run bench peers` "
      "wrote (indptr.npy, indices.npy), one pinned thread, batches from a seed order; prints one "
      "JSON object (batches, edges, wall and CPU seconds). Run by bench/peers_bench.py."};
  std::string graph_dir, order_path;
  double seconds = 5;
  int64_t batch = 1024, warmup = 3;
  int cpu = 0, index_bits = 0;
  std::vector<int64_t> fanouts{15, 10, 5};
  app.add_option("--graph", graph_dir, "Folder with indptr.npy and indices.npy (int64 CSR)")
      ->required();
  app.add_option("--order", order_path, "int64 .npy of seed ids in batch order (wraps)")
      ->required();
  app.add_option("--seconds", seconds, "Timed sampling per run")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--batch", batch, "Seeds per batch")->check(CLI::Range(1, 1 << 24));
  app.add_option("--warmup", warmup, "Untimed batches first")->check(CLI::Range(0, 1000));
  app.add_option("--fanouts", fanouts, "Fanout per hop")->delimiter(',');
  app.add_option("--cpu", cpu, "CPU to pin the sampling thread to")->check(CLI::Range(0, 4095));
  app.add_option("--index-bits", index_bits,
                 "Neighbor ids held in 32 or 64 bits; 0 = 32 where they fit, as fanout-server does")
      ->check(CLI::IsMember({0, 32, 64}));
  app.set_version_flag("--version", fanout::VersionLine("fanout-bench-peers-worker"));
  CLI11_PARSE(app, argc, argv);

  const NpyInt64 indptr(graph_dir + "/indptr.npy"), indices(graph_dir + "/indices.npy"),
      order(order_path);
  if (order.size == 0) Fail(order_path + ": no seeds");
  // The arrays as fanout-server holds them (datasets/store_reader.cc): in
  // memory advised for huge pages, neighbor ids narrowed to 32 bits where
  // every id fits.
  const int64_t num_nodes = indptr.size - 1;
  if (index_bits == 0) index_bits = num_nodes <= (int64_t{1} << 31) ? 32 : 64;
  if (index_bits == 32 && num_nodes > (int64_t{1} << 31))
    Fail("--index-bits 32: the graph has more than 2^31 nodes");
  std::vector<int64_t> own_indptr, own_indices;
  std::vector<int32_t> own_indices32;
  fanout::ReserveHuge(&own_indptr, static_cast<size_t>(indptr.size));
  own_indptr.assign(indptr.data, indptr.data + indptr.size);
  if (index_bits == 32) {
    fanout::ReserveHuge(&own_indices32, static_cast<size_t>(indices.size));
    own_indices32.resize(static_cast<size_t>(indices.size));
    for (int64_t e = 0; e < indices.size; ++e) {
      if (indices.data[e] < 0 || indices.data[e] >= num_nodes)
        Fail("indices.npy: entry " + std::to_string(e) + " is not a node");
      own_indices32[static_cast<size_t>(e)] = static_cast<int32_t>(indices.data[e]);
    }
  } else {
    fanout::ReserveHuge(&own_indices, static_cast<size_t>(indices.size));
    own_indices.assign(indices.data, indices.data + indices.size);
  }
  sp::CsrGraph graph;
  fanout::Status st =
      index_bits == 32
          ? sp::CsrGraph::Create32(
                fanout::ArrayView<const int64_t>(own_indptr.data(), own_indptr.size()),
                fanout::ArrayView<const int32_t>(own_indices32.data(), own_indices32.size()), {},
                {}, &graph)
          : sp::CsrGraph::Create(
                fanout::ArrayView<const int64_t>(own_indptr.data(), own_indptr.size()),
                fanout::ArrayView<const int64_t>(own_indices.data(), own_indices.size()), {}, {},
                &graph);
  if (!st.ok()) Fail("the graph: " + st.ToString());
  st = graph.Validate();
  if (!st.ok()) Fail("the graph: " + st.ToString());
  for (int64_t i = 0; i < order.size; ++i)
    if (order.data[i] < 0 || order.data[i] >= graph.num_nodes())
      Fail(order_path + ": seed " + std::to_string(order.data[i]) + " is not a node");
  (void)fanout::PinThisThread(cpu);
  sp::MultiHopOptions options;
  options.fanouts = fanouts;
  sp::MultiHopSampler sampler(graph, options, nullptr);
  sp::SampledSubgraph sub;
  std::vector<int64_t> seeds(static_cast<size_t>(batch));
  int64_t next = 0, b = 0, edges = 0, nodes = 0, batches = 0;
  auto one = [&] {
    for (auto& s : seeds) {
      s = order.data[next];
      if (++next == order.size) next = 0;
    }
    st = sampler.Sample(seeds, static_cast<uint64_t>(b++), &sub);
    if (!st.ok()) Fail("sampling: " + st.ToString());
  };
  for (int64_t i = 0; i < warmup; ++i) one();
  const double cpu0 = CpuSeconds();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  do {
    one();
    edges += static_cast<int64_t>(sub.row.size());
    nodes += static_cast<int64_t>(sub.n_id.size());
    ++batches;
  } while (Clock::now() < deadline);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu_s = CpuSeconds() - cpu0;
  nlohmann::json out = {{"system", "fanout"},
                        {"batches", batches},
                        {"edges", edges},
                        {"nodes", nodes},
                        {"wall_s", wall},
                        {"cpu_s", cpu_s},
                        {"version", fanout::VersionString()},
                        {"sampler", "MultiHopSampler"},
                        {"index_bits", index_bits}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
