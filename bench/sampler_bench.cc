// fanout-bench-sampler: multi-hop sampling throughput on the R-MAT benchmark
// graph, beside the machine's random 8-byte read rate measured in the same
// run. Writes a JSON array of cases with --json.
//
// --index-bits 32 holds the neighbor ids as int32 (the servers' compact
// topology), built by streaming the generator twice (count, then fill: 4
// bytes per edge, so a billion-edge graph fits). The random-read probe is an
// array of the graph's own CSR size (--probe-bytes own, the default: a smaller
// graph is not measured against a larger, slower array); --probe-bytes 1G keeps
// the old 1 GiB probe for comparison. Each case's JSON has its probe_bytes.
// --large-scale S adds case multihop_large: the same on R-MAT scale S (23 by
// default: 8x scale 20's edges), compact, against a probe of its own size.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/machine_limits.h"
#include "common/cpu.h"
#include "common/random.h"
#include "datasets/rmat.h"
#include "sampler/multihop.h"

using Clock = std::chrono::steady_clock;
namespace sp = fanout::sampler;

namespace {

struct Result {
  double edges_per_s = 0, batches_per_s = 0, nodes_per_s = 0;
};

// Batch b of thread t: fresh seeds uniform over the graph, request seed
// b * 131 + t. Exits on a sampling error.
void SampleBatch(const sp::CsrGraph& graph, sp::MultiHopSampler* sampler, fanout::SplitMix64* rng,
                 std::vector<int64_t>* seeds, int64_t b, int t, sp::SampledSubgraph* sub) {
  for (auto& s : *seeds)
    s = static_cast<int64_t>(fanout::DrawBelow(rng->Next(), graph.num_nodes()));
  const fanout::Status st = sampler->Sample(*seeds, static_cast<uint64_t>(b) * 131 + t, sub);
  if (!st.ok()) {
    std::fprintf(stderr, "sampling failed: %s\n", st.ToString().c_str());
    std::exit(1);
  }
}

// `threads` pinned threads, each sampling its own batches of uniform random
// seeds for about `seconds`.
Result RunCase(const sp::CsrGraph& graph, const std::vector<int64_t>& fanouts, int threads,
               int64_t batch_size, double seconds) {
  std::atomic<int64_t> edges{0}, nodes{0}, batches{0};
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      (void)fanout::PinThisThread(t);
      sp::MultiHopOptions opts;
      opts.fanouts = fanouts;
      sp::MultiHopSampler sampler(graph, opts, nullptr);
      sp::SampledSubgraph sub;
      std::vector<int64_t> seeds(batch_size);
      fanout::SplitMix64 rng(1000 + t);
      int64_t e = 0, n = 0, b = 0;
      auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
      // One warm-up batch sizes the reused buffers.
      do {
        SampleBatch(graph, &sampler, &rng, &seeds, b, t, &sub);
        e += static_cast<int64_t>(sub.row.size());
        n += static_cast<int64_t>(sub.n_id.size());
        ++b;
      } while (Clock::now() < deadline);
      edges += e;
      nodes += n;
      batches += b;
    });
  }
  for (auto& th : ts) th.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return Result{edges / secs, batches / secs, nodes / secs};
}

// Cases `name` on `graph`: for 1..max_threads threads and each fanout set,
// `rounds` alternations of the random-read probe (over `probe_bytes`) and the
// sampler; medians, appended to *cases.
void MeasureGraph(const sp::CsrGraph& graph, const char* name, int scale, int index_bits,
                  const std::vector<std::vector<int64_t>>& fanout_sets, int max_threads, int rounds,
                  int64_t batch_size, double seconds, int64_t probe_bytes, nlohmann::json* cases) {
  auto fanout_text = [](const std::vector<int64_t>& fo) {
    std::string fs = "[";
    for (size_t i = 0; i < fo.size(); ++i) fs += (i ? "," : "") + std::to_string(fo[i]);
    return fs + "]";
  };
  // The core clock (median of three estimates on a pinned thread), to print
  // wall-clock cycles per sampled edge per thread beside the rates.
  double clock_hz = 0;
  {
    std::vector<double> est;
    std::thread t([&] {
      (void)fanout::PinThisThread(0);
      for (int i = 0; i < 3; ++i) est.push_back(fanout::bench::CoreClockHz(0.2));
    });
    t.join();
    clock_hz = fanout::bench::Median(est);
    if (clock_hz > 0)
      std::printf("core clock (dependent-multiply chain): %.2f GHz\n", clock_hz / 1e9);
  }
  const double probe_gib = probe_bytes / double(1 << 30);
  for (int threads = 1; threads <= max_threads; ++threads) {
    // The limit and the workload alternate (ABAB...): each ratio pairs a case
    // with the probe measured just before it, and the median of the pairs is
    // reported with its spread (the probe alone moves by 2x between runs).
    std::printf("\n%s, %d thread(s):\n", name, threads);
    std::vector<std::vector<Result>> results(fanout_sets.size());
    std::vector<std::vector<double>> ratios(fanout_sets.size());
    std::vector<double> probes;
    for (int r = 0; r < rounds; ++r) {
      for (size_t c = 0; c < fanout_sets.size(); ++c) {
        double reads = fanout::bench::RandomReadRate(threads, probe_bytes, std::min(seconds, 2.0));
        Result res = RunCase(graph, fanout_sets[c], threads, batch_size, seconds);
        probes.push_back(reads);
        results[c].push_back(res);
        ratios[c].push_back(res.edges_per_s / reads);
        std::printf(
            "  round %d: random 8-byte reads on %.2f GiB %7.1f M/s, fanout %-10s %8.2f M edges/s, "
            "ratio %.3f\n",
            r + 1, probe_gib, reads / 1e6, fanout_text(fanout_sets[c]).c_str(),
            res.edges_per_s / 1e6, res.edges_per_s / reads);
      }
    }
    const double reads = fanout::bench::Median(probes);
    for (size_t c = 0; c < fanout_sets.size(); ++c) {
      std::vector<double> e, b, nd;
      for (const Result& x : results[c]) {
        e.push_back(x.edges_per_s);
        b.push_back(x.batches_per_s);
        nd.push_back(x.nodes_per_s);
      }
      const double ratio = fanout::bench::Median(ratios[c]);
      const double lo = *std::min_element(ratios[c].begin(), ratios[c].end());
      const double hi = *std::max_element(ratios[c].begin(), ratios[c].end());
      const std::string fs = fanout_text(fanout_sets[c]);
      const double cycles_per_edge =
          clock_hz * threads / fanout::bench::Median(e);  // 0 without a clock estimate
      const std::string cycles_text =
          clock_hz > 0 ? "  " + std::to_string(static_cast<int64_t>(cycles_per_edge + 0.5)) +
                             " cycles/edge/thread"
                       : "";
      std::printf(
          "  fanout %-10s %8.2f M edges/s  %8.1f batches/s  %8.2f M nodes/s  ratio to random reads "
          "%.3f (median of %d; %.3f..%.3f)%s\n",
          fs.c_str(), fanout::bench::Median(e) / 1e6, fanout::bench::Median(b),
          fanout::bench::Median(nd) / 1e6, ratio, rounds, lo, hi, cycles_text.c_str());
      cases->push_back(
          {{"case", name},
           {"fanout", fanout_sets[c]},
           {"threads", threads},
           {"batch_size", batch_size},
           {"scale", scale},
           {"index_bits", index_bits},
           {"rounds", rounds},
           {"edges_per_s", fanout::bench::Median(e)},
           {"batches_per_s", fanout::bench::Median(b)},
           {"nodes_per_s", fanout::bench::Median(nd)},
           {"random_reads_per_s", reads},
           {"probe_bytes", probe_bytes},
           {"ratio", ratio},
           {"ratio_min", lo},
           {"ratio_max", hi},
           {"core_clock_hz", clock_hz > 0 ? nlohmann::json(clock_hz) : nlohmann::json()},
           {"cycles_per_edge", clock_hz > 0 ? nlohmann::json(cycles_per_edge) : nlohmann::json()}});
    }
  }
}

// R-MAT `options` as CSR with int32 neighbor ids: one pass counts each
// row's edges, a second fills them (each row's edges in generation order,
// as GenerateRmat's). indptr (N + 1 int64) and indices (E int32).
fanout::Status BuildCompactRmat(const fanout::datasets::RmatOptions& options,
                                std::vector<int64_t>* indptr, std::vector<int32_t>* indices) {
  const int64_t n = int64_t{1} << options.scale;
  if (n > int64_t{INT32_MAX})
    return fanout::Status::InvalidArgument("scale " + std::to_string(options.scale) +
                                           ": node ids do not fit 32 bits");
  fanout::ReserveHuge(indptr, static_cast<size_t>(n + 1));
  indptr->assign(static_cast<size_t>(n + 1), 0);
  int64_t* ip = indptr->data();
  FANOUT_RETURN_IF_ERROR(
      fanout::datasets::ForEachRmatEdge(options, [ip](int64_t s, int64_t) { ++ip[s + 1]; }));
  for (int64_t v = 0; v < n; ++v) ip[v + 1] += ip[v];
  fanout::ReserveHuge(indices, static_cast<size_t>(ip[n]));
  indices->resize(static_cast<size_t>(ip[n]));
  int32_t* ind = indices->data();
  // ip[v] walks row v's slots (the row's start, shifted back after).
  FANOUT_RETURN_IF_ERROR(fanout::datasets::ForEachRmatEdge(
      options, [ip, ind](int64_t s, int64_t d) { ind[ip[s]++] = static_cast<int32_t>(d); }));
  for (int64_t v = n; v > 0; --v) ip[v] = ip[v - 1];
  ip[0] = 0;
  return fanout::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-sampler: multi-hop sampling throughput on the R-MAT benchmark graph,\n"
      "beside the machine's random-read rate measured in the same run."};
  int scale = 20;
  double seconds = 3.0;
  int64_t batch_size = 1024;
  int max_threads = 2, rounds = 3;
  std::string json_path;
  app.add_option("--scale", scale, "R-MAT scale (check values are printed for 20)")
      ->default_val(20)
      ->check(CLI::Range(1, 30));
  app.add_option("--seconds", seconds, "Seconds per measured case")
      ->default_val(3.0)
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--batch-size", batch_size, "Seeds per batch")
      ->default_val(1024)
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--threads", max_threads, "Measure 1..N threads (1 and 2 by default)")
      ->default_val(2)
      ->check(CLI::Range(1, 64));
  app.add_option("--rounds", rounds,
                 "Limit/workload alternations per thread count (median of the per-pair ratios)")
      ->default_val(3)
      ->check(CLI::Range(1, 20));
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  int index_bits = 64;
  app.add_option("--index-bits", index_bits,
                 "Neighbor ids held in 64 bits (default) or 32 (the servers' compact topology, "
                 "built by streaming the generator: a billion edges fit)")
      ->default_val(64)
      ->check(CLI::IsMember({32, 64}));
  std::string probe_text = "own";
  app.add_option("--probe-bytes", probe_text,
                 "The random-read probe's array: own (default: the graph's CSR bytes) or 1G")
      ->default_val("own");
  int large_scale = 0;
  app.add_option("--large-scale", large_scale,
                 "Also case multihop_large: R-MAT at this scale (e.g. 23, 8x scale 20's edges), "
                 "32-bit ids, against a probe of its own size (0 = skip)")
      ->default_val(0)
      ->check(CLI::Range(0, 30));
  int64_t profile_batches = 0;
  app.add_option("--profile-batches", profile_batches,
                 "Profiling mode: sample exactly N batches per fanout set on one thread, print the "
                 "sampled edges, and "
                 "skip the timing and the probe (for valgrind --tool=callgrind "
                 "--toggle-collect='*MultiHopSampler::Sample*')")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  CLI11_PARSE(app, argc, argv);
  if (probe_text != "own" && probe_text != "1G") {
    std::fprintf(stderr, "fanout-bench-sampler: --probe-bytes is 1G or own, not %s\n",
                 probe_text.c_str());
    return 2;
  }

  // A graph to measure: the CSR arrays (owned) and the view over them.
  struct Graph {
    sp::CsrArrays csr;            // 64-bit ids
    std::vector<int64_t> indptr;  // ... or 32-bit ones
    std::vector<int32_t> indices32;
    sp::CsrGraph view;
    int64_t bytes = 0;  // indptr + indices
  };
  auto build = [&](int sc, int bits, Graph* g) -> bool {
    fanout::datasets::RmatOptions rmat;
    rmat.scale = sc;
    auto t0 = Clock::now();
    fanout::Status st;
    if (bits == 64) {
      st = fanout::datasets::GenerateRmat(rmat, &g->csr);
      if (st.ok()) g->view = g->csr.View();
      g->bytes = static_cast<int64_t>(g->csr.indptr.size() + g->csr.indices.size()) * 8;
    } else {
      st = BuildCompactRmat(rmat, &g->indptr, &g->indices32);
      if (st.ok()) st = sp::CsrGraph::Create32(g->indptr, g->indices32, {}, {}, &g->view);
      g->bytes = static_cast<int64_t>(g->indptr.size() * 8 + g->indices32.size() * 4);
    }
    if (!st.ok()) {
      std::fprintf(stderr, "fanout-bench-sampler: %s\n", st.ToString().c_str());
      return false;
    }
    const double gen_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const int64_t n = g->view.num_nodes();
    int64_t zero_deg = 0, max_deg = 0;
    for (int64_t v = 0; v < n; ++v) {
      const int64_t d = g->view.degree(v);
      zero_deg += d == 0;
      max_deg = std::max(max_deg, d);
    }
    uint64_t checksum = 0;
    for (int64_t e = 0; e < g->view.num_edges(); ++e)
      checksum = checksum * 1000003ULL + static_cast<uint64_t>(g->view.neighbor(e));
    std::printf(
        "R-MAT scale %d: %lld nodes, %lld edges, %d-bit ids, CSR %.2f GiB (built in %.1f s)\n", sc,
        static_cast<long long>(n), static_cast<long long>(g->view.num_edges()), bits,
        g->bytes / double(1 << 30), gen_s);
    std::printf(
        "check values: out-degree-0 nodes %lld, max out-degree %lld, indptr[N/2] %lld, checksum "
        "%016llx\n",
        static_cast<long long>(zero_deg), static_cast<long long>(max_deg),
        static_cast<long long>(g->view.indptr()[n / 2]), static_cast<unsigned long long>(checksum));
    if (sc == 20) {
      const bool ok = zero_deg == 501584 && max_deg == 69516 &&
                      g->view.indptr()[n / 2] == 12754809 && checksum == 0x9dfb4e99095000caULL;
      std::printf("check values %s the published ones\n", ok ? "MATCH" : "DO NOT MATCH");
      if (!ok) return false;
    }
    return true;
  };

  const std::vector<std::vector<int64_t>> fanout_sets = {{15, 10, 5}, {25, 10}};
  auto fanout_text = [](const std::vector<int64_t>& fo) {
    std::string fs = "[";
    for (size_t i = 0; i < fo.size(); ++i) fs += (i ? "," : "") + std::to_string(fo[i]);
    return fs + "]";
  };
  nlohmann::json cases = nlohmann::json::array();
  {
    Graph g;
    if (!build(scale, index_bits, &g)) return 1;
    if (profile_batches > 0) {
      // The same batches as a timed run's first ones, a fixed number of them:
      // instruction and cache counts per sampled edge are then repeatable.
      for (const auto& fo : fanout_sets) {
        sp::MultiHopOptions opts;
        opts.fanouts = fo;
        sp::MultiHopSampler sampler(g.view, opts, nullptr);
        sp::SampledSubgraph sub;
        std::vector<int64_t> seeds(batch_size);
        fanout::SplitMix64 rng(1000);
        int64_t edges = 0, nodes = 0;
        for (int64_t b = 0; b < profile_batches; ++b) {
          SampleBatch(g.view, &sampler, &rng, &seeds, b, 0, &sub);
          edges += static_cast<int64_t>(sub.row.size());
          nodes += static_cast<int64_t>(sub.n_id.size());
        }
        std::printf("profile: fanout %-10s %lld batches, %lld sampled edges, %lld nodes\n",
                    fanout_text(fo).c_str(), static_cast<long long>(profile_batches),
                    static_cast<long long>(edges), static_cast<long long>(nodes));
      }
      return 0;
    }
    const int64_t probe = probe_text == "own" ? g.bytes : int64_t{1} << 30;
    MeasureGraph(g.view, "multihop", scale, index_bits, fanout_sets, max_threads, rounds,
                 batch_size, seconds, probe, &cases);
  }
  if (large_scale > 0) {
    Graph g;
    if (!build(large_scale, 32, &g)) return 1;
    MeasureGraph(g.view, "multihop_large", large_scale, 32, {{15, 10, 5}}, max_threads, rounds,
                 batch_size, seconds, g.bytes, &cases);
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << cases.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "fanout-bench-sampler: cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", json_path.c_str());
  }
  return 0;
}
