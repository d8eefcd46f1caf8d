// fanout-sample: generates the R-MAT benchmark graph (or a smaller one) and
// samples mini-batches from it in process, printing the batch shapes and the
// sampling throughput. The first thing `./run demo` shows.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/thread_pool.h"
#include "common/version.h"
#include "datasets/rmat.h"
#include "sampler/multihop.h"

using fanout::ArrayView;
using fanout::Status;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<int64_t> ParseFanouts(const std::string& text, std::string* error) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      *error = "--fanout: '" + item + "' is not an integer (expected e.g. 15,10,5)";
      return {};
    }
  }
  if (out.empty()) *error = "--fanout is empty (expected e.g. 15,10,5)";
  return out;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-sample: generate the R-MAT benchmark graph and sample mini-batches from it in "
      "process,\n"
      "printing the shapes of the first batch and the sampling throughput."};
  app.set_version_flag("--version", fanout::VersionLine("fanout-sample"));
  int scale = 16;
  int64_t edge_factor = 16;
  std::string fanout_text = "15,10,5";
  int64_t batch_size = 1024;
  int64_t batches = 50;
  int threads = 1;
  uint64_t seed = 1;
  app.add_option("--scale", scale, "R-MAT scale: 2^scale nodes (the benchmark uses 20)")
      ->default_val(16)
      ->check(CLI::Range(1, 30));
  app.add_option("--edge-factor", edge_factor, "Edges per node")
      ->default_val(16)
      ->check(CLI::Range(0, 1024));
  app.add_option("--fanout", fanout_text, "Comma-separated fanouts per hop; -1 = all neighbors")
      ->default_val("15,10,5");
  app.add_option("--batch-size", batch_size, "Seeds per mini-batch")
      ->default_val(1024)
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--batches", batches, "Number of mini-batches to sample")
      ->default_val(50)
      ->check(CLI::Range(1, 1000000));
  app.add_option("--threads", threads, "Threads sampling each batch (1 = the calling thread only)")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  app.add_option("--seed", seed, "Request seed of the first batch (batch i uses seed + i)")
      ->default_val(1);
  CLI11_PARSE(app, argc, argv);

  std::string error;
  fanout::sampler::MultiHopOptions options;
  options.fanouts = ParseFanouts(fanout_text, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "fanout-sample: %s\n", error.c_str());
    return 2;
  }

  fanout::datasets::RmatOptions rmat;
  rmat.scale = scale;
  rmat.edge_factor = edge_factor;
  fanout::sampler::CsrArrays csr;
  auto t0 = Clock::now();
  bool tty = isatty(2);
  Status st = fanout::datasets::GenerateRmat(rmat, &csr, [&](int64_t done, int64_t total) {
    if (!tty) return;
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    double rate = done / std::max(secs, 1e-9);
    std::fprintf(stderr, "\rgenerating R-MAT: %5.1f%%  %.1f M edges/s  ETA %.0f s   ",
                 100.0 * done / std::max<int64_t>(total, 1), rate / 1e6,
                 (total - done) / std::max(rate, 1.0));
  });
  if (tty) std::fprintf(stderr, "\n");
  if (!st.ok()) {
    std::fprintf(stderr, "fanout-sample: %s\n", st.ToString().c_str());
    return 1;
  }
  double gen_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("R-MAT scale %d: %lld nodes, %lld edges, generated in %.2f s\n", scale,
              static_cast<long long>(csr.num_nodes()), static_cast<long long>(csr.num_edges()),
              gen_s);

  fanout::ThreadPool pool(threads - 1);
  fanout::sampler::CsrGraph graph = csr.View();
  fanout::sampler::MultiHopSampler sampler(graph, options, threads > 1 ? &pool : nullptr);
  fanout::sampler::SampledSubgraph sub;
  std::vector<int64_t> seeds(batch_size);
  fanout::SplitMix64 rng(seed * 7919 + 17);
  int64_t edges = 0, nodes = 0;
  double secs = 0;
  for (int64_t b = 0; b < batches; ++b) {
    for (auto& s : seeds) s = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), csr.num_nodes()));
    auto t = Clock::now();
    st = sampler.Sample(seeds, seed + b, &sub);
    secs += std::chrono::duration<double>(Clock::now() - t).count();
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-sample: batch %lld: %s\n", static_cast<long long>(b),
                   st.ToString().c_str());
      return 1;
    }
    edges += static_cast<int64_t>(sub.row.size());
    nodes += static_cast<int64_t>(sub.n_id.size());
    if (b == 0) {
      std::printf("batch 0 (fanouts %s, batch_size %lld):\n", Join(options.fanouts).c_str(),
                  static_cast<long long>(sub.batch_size));
      std::printf("  n_id               [%zu]\n", sub.n_id.size());
      std::printf("  edge_index         [2, %zu]\n", sub.row.size());
      std::printf("  edge_id            [%zu]\n", sub.edge_id.size());
      std::printf("  num_sampled_nodes  %s\n", Join(sub.num_sampled_nodes).c_str());
      std::printf("  num_sampled_edges  %s\n", Join(sub.num_sampled_edges).c_str());
    }
  }
  std::printf(
      "sampled %lld batches with %d thread(s): %.1f batches/s, %.2f M sampled edges/s, "
      "%.2f M nodes/s\n",
      static_cast<long long>(batches), threads, batches / secs, edges / secs / 1e6,
      nodes / secs / 1e6);
  return 0;
}
