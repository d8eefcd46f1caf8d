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
// Phase 1's indptr prefetch distance in nodes: 24 measured 25% faster than 8
// at scale 23 (a DRAM miss outlasts 8 nodes' work).
constexpr int64_t kPrefetchNodes = 24;
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
  // Output slots [from, to) hold absolute CSR positions: each becomes its
  // neighbor id, and its edge id is written (the position itself where the
  // graph stores none). Both paths below resolve their picks through it.
  auto resolve = [&](const auto* indices, int64_t from, int64_t to) __attribute__((always_inline)) {
    if (eid_out == nullptr) {
      for (int64_t x = from; x < to; ++x) nbr[x] = indices[nbr[x]];
    } else if (eids == nullptr) {  // edge id = CSR position
      for (int64_t x = from; x < to; ++x) {
        const int64_t p = nbr[x];
        eid_out[x] = p;
        nbr[x] = indices[p];
      }
    } else {
      for (int64_t x = from; x < to; ++x) {
        const int64_t p = nbr[x];
        eid_out[x] = eids[p];
        nbr[x] = indices[p];
      }
    }
  };
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
      // The positions are made absolute here (resolve() reads them so).
      for (int64_t j = 0; j < k; ++j) pos[j] += s;
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
      for (int64_t j = 0; j < k; ++j) __builtin_prefetch(indices + pos[j]);
      if (eids && eid_out) {
        for (int64_t j = 0; j < k; ++j) __builtin_prefetch(eids + pos[j]);
      }
    };
    for (int64_t i = b; i < std::min(e, b + kDrawAhead); ++i) draw(i);
    for (int64_t i = b; i < e; ++i) {
      if (i + kDrawAhead < e) draw(i + kDrawAhead);
      resolve(indices, offsets[i], offsets[i + 1]);
    }
  };
  // The default hop (uniform, without replacement, or every neighbor), on
  // its own path: each node's picks are drawn as absolute CSR positions and
  // prefetched as they are drawn, kDrawAhead nodes ahead; the picks are
  // resolved kGroup nodes at a time in one flat loop over their edges (their
  // output slots are contiguous), so a node costs no loop exit of its own.
  // Same draws as SampleRowPositions (FloydSample's order and positions).
  auto uniform_chunk_of = [&](const auto* indices, int64_t c) {
    constexpr int64_t kDrawAhead = 6, kGroup = 8;
    constexpr int64_t kPerLine = 64 / sizeof(*indices);
    // Rows this long span at most two lines of `indices` (int32: 16 per line)
    // or three (int64): the first, the last, and for int64 the one between.
    constexpr int64_t kShortRow = 16;
    detail::RowScratch scratch;
    const int64_t b = chunks.begin(c), e = chunks.end(c);
    const bool prefetch_eids = eids != nullptr && eid_out != nullptr;
    const int64_t chunk_edges_end = offsets[e];
    // With AVX-512, the raw Floyd draws of node i + 1 are computed (eight
    // at a time) while node i is drawn, into the other half of `ring`:
    // computed a node early, their stores have long left when they are read
    // (read right after a vector store, they would wait for it).
    const bool vector_draws = detail::HasFloydDrawsAvx512();
    alignas(64) int64_t ring[2][32];
    auto vector_drawable = [&](int64_t i) {  // node i's draws go through `ring`
      const int64_t k = offsets[i + 1] - offsets[i];
      return vector_draws && k > 0 && k <= 32 && degree_[i] > k;
    };
    auto precompute = [&](int64_t i) {
      if (i < e && vector_drawable(i)) {
        const int64_t k = offsets[i + 1] - offsets[i];
        detail::FloydDrawsAvx512(NodeKeyIn(hop_key, static_cast<uint64_t>(nodes[i])),
                                 degree_[i] - k, k, ring[i & 1]);
      }
    };
    auto draw = [&](int64_t i) __attribute__((always_inline)) {
      precompute(i + 1);
      const int64_t o = offsets[i];
      const int64_t k = offsets[i + 1] - o;
      const int64_t s = start_[i];
      const int64_t d = degree_[i];
      int64_t* pos = nbr + o;
      if (d <= k && d <= kShortRow && o + kShortRow <= chunk_edges_end) {
        // A short row taken whole (or an empty one), without a branch on its
        // length: kShortRow positions are written (those past the row are
        // the next nodes' slots of this chunk, written again when they are
        // drawn) and the row's first and last lines prefetched.
        for (int64_t p = 0; p < kShortRow; ++p) pos[p] = s + p;
        // An empty row (half the nodes of an R-MAT graph) prefetches the
        // array's first line (in cache) rather than a line of another row
        // it never reads: chosen without a branch.
        const int64_t first = d > 0 ? s : 0;
        const int64_t last = d > 0 ? s + d - 1 : 0;  // the row's last position
        __builtin_prefetch(indices + first, 0, 2);
        if (kPerLine < kShortRow)
          __builtin_prefetch(indices + std::min(first + kPerLine, last), 0, 2);
        __builtin_prefetch(indices + last, 0, 2);
        if (prefetch_eids) {
          __builtin_prefetch(eids + first);
          __builtin_prefetch(eids + std::min(first + kInt64PerLine, last));
          __builtin_prefetch(eids + last);
        }
        return;
      }
      if (k == 0) return;
      if (d <= k) {  // the whole row (k == d)
        for (int64_t p = 0; p < d; ++p) pos[p] = s + p;
        for (int64_t p = 0; p < d; p += kPerLine) __builtin_prefetch(indices + s + p, 0, 2);
        __builtin_prefetch(indices + s + d - 1, 0, 2);
        if (prefetch_eids) {
          for (int64_t p = 0; p < d; p += kInt64PerLine) __builtin_prefetch(eids + s + p);
          __builtin_prefetch(eids + s + d - 1);
        }
        return;
      }
      auto key = [&] { return NodeKeyIn(hop_key, static_cast<uint64_t>(nodes[i])); };
      if (k > 32) {
        detail::FloydSample(d, k, key(), pos, &scratch);
        for (int64_t j = 0; j < k; ++j) {
          pos[j] += s;
          __builtin_prefetch(indices + pos[j], 0, 2);
        }
      } else {
        // FloydSample's small-k loop, each pick prefetched as it is drawn;
        // the raw draws precomputed in `ring` (their key computed there).
        const int64_t* raw = vector_draws ? ring[i & 1] : nullptr;
        detail::FloydSmall(d, k, raw != nullptr ? 0 : key(), raw, s, pos,
                           [&](int64_t p) { __builtin_prefetch(indices + p, 0, 2); });
      }
      if (prefetch_eids) {
        for (int64_t j = 0; j < k; ++j) __builtin_prefetch(eids + pos[j]);
      }
    };
    precompute(b);
    for (int64_t i = b; i < std::min(e, b + kDrawAhead); ++i) draw(i);
    int64_t done = b;  // nodes [b, done) are resolved
    for (int64_t i = b; i < e; ++i) {
      if (i + kDrawAhead < e) draw(i + kDrawAhead);
      if (i + 1 - done == kGroup || i + 1 == e) {
        resolve(indices, offsets[done], offsets[i + 1]);
        done = i + 1;
      }
    }
  };
  const bool uniform = !options.weighted && (!options.replace || fanout < 0);
  auto sample_chunk = [&](int64_t c) {
    const int32_t* i32 = graph.indices32();
    if (uniform && i32 != nullptr)
      uniform_chunk_of(i32, c);
    else if (uniform)
      uniform_chunk_of(graph.indices(), c);
    else if (i32 != nullptr)
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

RowDraws::RowDraws() : scratch_(new detail::RowScratch) {}
RowDraws::~RowDraws() { delete scratch_; }

Status RowDraws::Init(int64_t fanout, int64_t hop, uint64_t request_seed,
                      const SamplingOptions& options) {
  FANOUT_RETURN_IF_ERROR(CheckFanout(fanout, hop));
  if (options.weighted || options.labor)
    return Status::NotSupported(
        "a row outside the CSR samples uniformly only (not weighted, not LABOR)");
  fanout_ = fanout;
  replace_ = options.replace;
  hop_key_ = HopKey(request_seed, static_cast<uint64_t>(hop));
  options_ = options;
  return Status::OK();
}

void RowDraws::Positions(int64_t node, int64_t degree, int64_t* pos) {
  const int64_t k = Count(degree);
  if (k == 0) return;
  // The uniform kernels read no graph (only weighted rows do): any CSR serves.
  static const CsrGraph kNoRows;
  detail::SampleRowPositions(kNoRows, 0, degree, fanout_, k,
                             NodeKeyIn(hop_key_, static_cast<uint64_t>(node)), options_, pos,
                             scratch_);
}

}  // namespace fanout::sampler
