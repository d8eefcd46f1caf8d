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
// --hetero-types T (4 by default; 0 skips) adds case hetero_temporal: the same
// graph typed and timed (node type v % T, edge type (src % T) * T + dst % T,
// times uniform in [0, 2^30) as --edge-times makes them, each row ordered by
// type then time as the writer stores it), one thread: the heterogeneous
// temporal sampler (per-type fanouts [4,3,2]: up to 16/12/8 per node, as many
// as [15,10,5]; seeds with times uniform over the span) beside the
// homogeneous uniform sampler with [15,10,5] on the same CSR, alternated;
// ratio = median of the pairs' sampled-edges/s ratios.
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
#include "sampler/temporal.h"

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

// Case hetero_temporal (see the top): `graph` typed with `types` node types
// and timed, against the homogeneous uniform sampler on the same rows.
void MeasureHeteroTemporal(const sp::CsrArrays& graph, int scale, int types, int rounds,
                           int64_t batch_size, double seconds, nlohmann::json* cases) {
  // The rows ordered by (type, time), as fanout-partition writes a typed store with times.
  sp::CsrArrays g;
  g.indptr = graph.indptr;
  g.indices.resize(graph.indices.size());
  std::vector<int32_t> etype(graph.indices.size());
  std::vector<int64_t> etime(graph.indices.size());
  std::vector<std::pair<std::pair<int32_t, int64_t>, int64_t>> row;
  for (int64_t v = 0; v + 1 < static_cast<int64_t>(graph.indptr.size()); ++v) {
    row.clear();
    for (int64_t e = graph.indptr[v]; e < graph.indptr[v + 1]; ++e) {
      const int64_t d = graph.indices[e];
      const int32_t t = static_cast<int32_t>((v % types) * types + d % types);
      const int64_t time = static_cast<int64_t>(fanout::Mix64(0x7e3aULL ^ e) >> 34);
      row.push_back({{t, time}, d});
    }
    std::sort(row.begin(), row.end());
    for (size_t k = 0; k < row.size(); ++k) {
      const int64_t e = graph.indptr[v] + static_cast<int64_t>(k);
      etype[e] = row[k].first.first, etime[e] = row[k].first.second, g.indices[e] = row[k].second;
    }
  }
  const int64_t n = g.num_nodes();
  sp::MultiHopOptions homo;
  homo.fanouts = {15, 10, 5};
  sp::MultiHopOptions hetero;
  hetero.edge_type_fanouts.assign(static_cast<size_t>(types * types), {4, 3, 2});
  hetero.fanouts = {16, 12, 8};
  sp::MultiHopSampler plain(g.View(), homo, nullptr);
  sp::TemporalSampler timed(g.View(), etime.data(), etype.data(), hetero);
  // The homogeneous temporal sampler on the same rows (its own whole-row time
  // index): what disjoint trees and time filtering cost without types.
  sp::TemporalSampler untyped(g.View(), etime.data(), homo);
  sp::SampledSubgraph sub;
  std::vector<int64_t> seeds(batch_size), times(batch_size);
  // Sampled edges/s and edges per batch of one sampler for about `seconds`.
  auto run = [&](int which, uint64_t round) {
    fanout::SplitMix64 rng(1000 + round);
    int64_t edges = 0, b = 0;
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(seconds);
    do {
      for (int64_t i = 0; i < batch_size; ++i) {
        seeds[i] = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), n));
        times[i] = static_cast<int64_t>(fanout::DrawBelow(rng.Next(), uint64_t{1} << 30));
      }
      const uint64_t request = round * 1000003 + static_cast<uint64_t>(b);
      const fanout::Status st = which == 1   ? timed.Sample(seeds, times, request, &sub)
                                : which == 2 ? untyped.Sample(seeds, times, request, &sub)
                                             : plain.Sample(seeds, request, &sub);
      if (!st.ok()) {
        std::fprintf(stderr, "sampling failed: %s\n", st.ToString().c_str());
        std::exit(1);
      }
      edges += static_cast<int64_t>(sub.row.size());
      ++b;
    } while (Clock::now() < deadline);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    return std::pair<double, double>(edges / secs, static_cast<double>(edges) / b);
  };
  std::printf(
      "\nhetero_temporal, 1 thread: %d node types, %d edge types, per-type fanouts [4,3,2] with "
      "seed times, beside homogeneous uniform [15,10,5]:\n",
      types, types * types);
  std::vector<double> het, hom, ratios, het_per_batch, hom_per_batch, tem, tem_ratios;
  std::thread t([&] {
    (void)fanout::PinThisThread(0);
    for (int r = 0; r < rounds; ++r) {
      const auto a = run(0, static_cast<uint64_t>(r));
      const auto b = run(1, static_cast<uint64_t>(r));
      const auto c = run(2, static_cast<uint64_t>(r));
      tem.push_back(c.first), tem_ratios.push_back(b.first / c.first);
      hom.push_back(a.first), het.push_back(b.first), ratios.push_back(b.first / a.first);
      hom_per_batch.push_back(a.second), het_per_batch.push_back(b.second);
      std::printf(
          "  round %d: homogeneous %7.2f M edges/s (%.0f per batch), hetero temporal "
          "%7.2f M edges/s (%.0f per batch), ratio %.3f; homogeneous temporal %7.2f M edges/s\n",
          r + 1, a.first / 1e6, a.second, b.first / 1e6, b.second, b.first / a.first,
          c.first / 1e6);
    }
  });
  t.join();
  const double ratio = fanout::bench::Median(ratios);
  std::printf(
      "  hetero temporal %.2f M edges/s per thread = %.3f x the homogeneous uniform "
      "sampler's %.2f M (median of %d)\n",
      fanout::bench::Median(het) / 1e6, ratio, fanout::bench::Median(hom) / 1e6, rounds);
  cases->push_back({{"case", "hetero_temporal"},
                    {"scale", scale},
                    {"threads", 1},
                    {"batch_size", batch_size},
                    {"rounds", rounds},
                    {"node_types", types},
                    {"edge_types", types * types},
                    {"type_fanout", {4, 3, 2}},
                    {"fanout", {15, 10, 5}},
                    {"edges_per_s", fanout::bench::Median(het)},
                    {"homogeneous_edges_per_s", fanout::bench::Median(hom)},
                    {"edges_per_batch", fanout::bench::Median(het_per_batch)},
                    {"homogeneous_edges_per_batch", fanout::bench::Median(hom_per_batch)},
                    {"ratio", ratio},
                    {"homogeneous_temporal_edges_per_s", fanout::bench::Median(tem)},
                    {"temporal_ratio", fanout::bench::Median(tem_ratios)},
                    {"ratio_min", *std::min_element(ratios.begin(), ratios.end())},
                    {"ratio_max", *std::max_element(ratios.begin(), ratios.end())},
                    {"pyg_ratio", nullptr},
                    {"pyg_note",
                     "PyG's edge-time NeighborLoader needs pyg-lib (ImportError: 'Edge-level "
                     "temporal sampling requires a more recent pyg-lib installation'), which "
                     "PyPI does not carry (wheels only at data.pyg.org); not measured here"}});
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
  int hetero_types = 4;
  app.add_option("--hetero-types", hetero_types,
                 "Node types of case hetero_temporal (the graph typed and timed; 0 = skip; needs "
                 "--index-bits 64)")
      ->default_val(4)
      ->check(CLI::Range(0, 16));
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
    if (hetero_types > 0 && index_bits == 64)
      MeasureHeteroTemporal(g.csr, scale, hetero_types, rounds, batch_size, seconds, &cases);
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
