#include "sampler/neighbor_sampler.h"

#include <algorithm>
#include <string>

#include "common/id_range.h"
#include "common/random.h"
#include "sampler/detail/chunks.h"
#include "sampler/detail/sample_row.h"
#include "sampler/labor.h"

namespace fanout::sampler {

Status CheckFanout(int64_t fanout, int64_t hop) {
  if (fanout < -1)
    return Status::InvalidArgument("fanout " + std::to_string(fanout) + " of hop " +
                                   std::to_string(hop) +
                                   " is invalid: use -1 for all neighbors or a value >= 0");
  return Status::OK();
}

namespace {
constexpr int64_t kPrefetchNodes = 8;
constexpr int64_t kMinChunk = 512;
constexpr int64_t kInt64PerLine = 64 / sizeof(int64_t);
}  // namespace

Status HopSampler::Sample(const CsrGraph& graph, ArrayView<const int64_t> nodes, int64_t fanout,
                          int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                          ThreadPool* pool, OneHopResult* out) {
  if (options.labor)
    return SampleLaborHop(graph, nodes, fanout, hop, request_seed, options, pool, out);
  FANOUT_RETURN_IF_ERROR(CheckFanout(fanout, hop));
  if (options.weighted && !graph.has_weights())
    return Status::InvalidArgument("weighted sampling requested but the graph has no edge weights");
  const int64_t m = static_cast<int64_t>(nodes.size());
  const int64_t lo = options.node_offset;
  const int64_t hi = options.node_offset + graph.num_nodes();
  const int64_t* indptr = graph.indptr();

  start_.resize(m);
  degree_.resize(m);
  out->offsets.resize(m + 1);
  int64_t* count = out->offsets.data() + 1;  // counts first, prefix sums later

  const detail::Chunks chunks(m, kMinChunk, pool);
  std::vector<int64_t> bad(static_cast<size_t>(chunks.count()),
                           -1);  // first bad position per chunk

  // Phase 1: row bounds and exact sample counts (prefetching indptr ahead).
  auto count_chunk = [&](int64_t c) {
    const int64_t b = chunks.begin(c), e = chunks.end(c);
    for (int64_t i = b; i < e; ++i) {
      if (i + kPrefetchNodes < e) {
        int64_t ahead = nodes[i + kPrefetchNodes] - lo;
        if (ahead >= 0 && ahead < hi - lo) __builtin_prefetch(indptr + ahead);
      }
      int64_t v = nodes[i];
      if (v < lo || v >= hi) {
        bad[c] = i;
        return;
      }
      int64_t s = indptr[v - lo];
      int64_t d = indptr[v - lo + 1] - s;
      start_[i] = s;
      degree_[i] = d;
      count[i] = detail::RowSampleCount(graph, s, d, fanout, options);
    }
  };
  chunks.Run(count_chunk);
  for (int64_t c = 0; c < chunks.count(); ++c) {
    if (bad[c] >= 0) return IdOutOfRange(nodes[bad[c]], static_cast<size_t>(bad[c]), lo, hi);
  }

  int64_t* offsets = out->offsets.data();
  offsets[0] = 0;
  for (int64_t i = 0; i < m; ++i) offsets[i + 1] += offsets[i];
  const int64_t total = offsets[m];
  out->neighbors.resize(total);
  out->edge_ids.resize(options.with_edge_ids ? total : 0);
  out->edge_types.clear();
  out->edge_weights.clear();

  // Phase 2, software-pipelined: draw node i + kDrawAhead's positions and
  // prefetch the CSR lines they land on, then resolve node i's positions to
  // neighbor ids and edge ids. Picks inside long rows are random accesses;
  // issuing them a few nodes early overlaps their misses.
  const int64_t* eids = graph.edge_ids();
  int64_t* nbr = out->neighbors.data();
  int64_t* eid_out = options.with_edge_ids ? out->edge_ids.data() : nullptr;
  const uint64_t hop_key = HopKey(request_seed, static_cast<uint64_t>(hop));
  // `indices` is the graph's neighbor array in the width it is held in
  // (int64, or int32 for compact topology): one instantiation each.
  auto sample_chunk_of = [&](const auto* indices, int64_t c) {
    constexpr int64_t kDrawAhead = 6;
    constexpr int64_t kPerLine = 64 / sizeof(*indices);
    detail::RowScratch scratch;
    const int64_t b = chunks.begin(c), e = chunks.end(c);
    auto draw = [&](int64_t i) {
      int64_t o = offsets[i];
      int64_t k = offsets[i + 1] - o;
      if (k == 0) return;
      int64_t s = start_[i];
      int64_t* pos = nbr + o;
      detail::SampleRowPositions(graph, s, degree_[i], fanout, k,
                                 NodeKeyIn(hop_key, static_cast<uint64_t>(nodes[i])), options, pos,
                                 &scratch);
      // The prefetches stay written out here (and in hetero.cc's draw): moved
      // into a shared helper, GCC judged it free of side effects and dropped
      // its calls (no prefetch left in the binary, half the throughput).
      const int64_t d = degree_[i];
      if (d <= k) {
        // As many picks as the row has edges (most rows of a power-law
        // graph): prefetch the row's lines, not each pick.
        for (int64_t p = 0; p < d; p += kPerLine) __builtin_prefetch(indices + s + p);
        __builtin_prefetch(indices + s + d - 1);
        if (eids && eid_out) {
          for (int64_t p = 0; p < d; p += kInt64PerLine) __builtin_prefetch(eids + s + p);
          __builtin_prefetch(eids + s + d - 1);
        }
        return;
      }
      for (int64_t j = 0; j < k; ++j) __builtin_prefetch(indices + s + pos[j]);
      if (eids && eid_out) {
        for (int64_t j = 0; j < k; ++j) __builtin_prefetch(eids + s + pos[j]);
      }
    };
    for (int64_t i = b; i < std::min(e, b + kDrawAhead); ++i) draw(i);
    for (int64_t i = b; i < e; ++i) {
      if (i + kDrawAhead < e) draw(i + kDrawAhead);
      int64_t o = offsets[i];
      int64_t k = offsets[i + 1] - o;
      int64_t s = start_[i];
      int64_t* pos = nbr + o;
      if (eid_out == nullptr) {
        for (int64_t j = 0; j < k; ++j) pos[j] = indices[s + pos[j]];
      } else if (eids == nullptr) {  // edge id = CSR position
        for (int64_t j = 0; j < k; ++j) {
          const int64_t p = s + pos[j];
          eid_out[o + j] = p;
          pos[j] = indices[p];
        }
      } else {
        for (int64_t j = 0; j < k; ++j) {
          const int64_t p = s + pos[j];
          eid_out[o + j] = eids[p];
          pos[j] = indices[p];
        }
      }
    }
  };
  auto sample_chunk = [&](int64_t c) {
    if (const int32_t* i32 = graph.indices32())
      sample_chunk_of(i32, c);
    else
      sample_chunk_of(graph.indices(), c);
  };
  chunks.Run(sample_chunk);
  return Status::OK();
}

Status SampleOneHop(const CsrGraph& graph, ArrayView<const int64_t> nodes, int64_t fanout,
                    int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                    ThreadPool* pool, OneHopResult* out) {
  HopSampler sampler;
  return sampler.Sample(graph, nodes, fanout, hop, request_seed, options, pool, out);
}

}  // namespace fanout::sampler
