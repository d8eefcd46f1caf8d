#include "sampler/labor.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/id_range.h"
#include "sampler/detail/chunks.h"

namespace fanout::sampler {

double LaborWeightScale(const float* w, int64_t degree, int64_t k) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(degree));
  double total = 0;
  for (int64_t i = 0; i < degree; ++i) {
    if (w[i] > 0.0f) {  // also false for NaN
      v.push_back(w[i]);
      total += w[i];
    }
  }
  std::sort(v.begin(), v.end(), std::greater<double>());
  // The j largest weights are capped at probability 1; the rest share k - j
  // in proportion to their weights. The first j for which the largest
  // uncapped weight stays at or below 1 is the answer.
  double capped = 0;
  for (int64_t j = 0; j < k && j < static_cast<int64_t>(v.size()); ++j) {
    const double c = static_cast<double>(k - j) / (total - capped);
    if (c * v[j] <= 1.0) return c;
    capped += v[j];
  }
  return std::numeric_limits<double>::infinity();  // every positive edge (REQUIRES not met)
}

namespace {

constexpr int64_t kMinChunk = 256;

// One row's inclusion rule: pi_t = min(1, scale * a_t); `norm` = sum of a.
struct RowRule {
  double scale = 0;  // +inf: every edge of positive weight
  double norm = 0;
};

}  // namespace

Status SampleLaborHop(const CsrGraph& graph, ArrayView<const int64_t> nodes, int64_t fanout,
                      int64_t hop, uint64_t request_seed, const SamplingOptions& options,
                      ThreadPool* pool, OneHopResult* out) {
  FANOUT_RETURN_IF_ERROR(CheckFanout(fanout, hop));
  if (options.replace)
    return Status::InvalidArgument(
        "LABOR sampling draws without replacement: replace=true is not supported with it");
  if (options.weighted && !graph.has_weights())
    return Status::InvalidArgument("weighted sampling requested but the graph has no edge weights");
  const int64_t m = static_cast<int64_t>(nodes.size());
  const int64_t lo = options.node_offset;
  const int64_t hi = lo + graph.num_nodes();
  const int64_t* indptr = graph.indptr();
  const float* weights = options.weighted ? graph.weights() : nullptr;
  const uint64_t key = LaborKey(request_seed, static_cast<uint64_t>(hop));
  const double inf = std::numeric_limits<double>::infinity();

  out->offsets.resize(m + 1);
  out->edge_types.clear();
  std::vector<RowRule> rules(static_cast<size_t>(m));
  int64_t* count = out->offsets.data() + 1;

  const detail::Chunks chunks(m, kMinChunk, pool);
  std::vector<int64_t> bad(static_cast<size_t>(chunks.count()), -1);

  // Whether edge p (CSR position) of a row under `rule` is taken.
  auto taken = [&](const RowRule& rule, int64_t p) {
    const double a = weights ? static_cast<double>(weights[p]) : 1.0;
    if (!(a > 0.0)) return false;
    if (rule.scale == inf) return true;
    return LaborVariate(key, graph.neighbor(p)) <= std::min(1.0, rule.scale * a);
  };

  // Phase 1: each row's rule, and the CSR positions it takes (one pass over
  // the row: each neighbor's variate is computed once), per chunk.
  std::vector<std::vector<int64_t>> picks(static_cast<size_t>(chunks.count()));
  chunks.Run([&](int64_t c) {
    const int64_t b = chunks.begin(c), e = chunks.end(c);
    std::vector<int64_t>& mine = picks[c];
    mine.clear();
    for (int64_t i = b; i < e; ++i) {
      const int64_t v = nodes[i];
      if (v < lo || v >= hi) {
        bad[c] = i;
        return;
      }
      const int64_t s = indptr[v - lo], d = indptr[v - lo + 1] - s;
      RowRule& rule = rules[i];
      if (weights == nullptr) {
        rule.norm = static_cast<double>(d);
        rule.scale = (fanout < 0 || d <= fanout) ? inf : static_cast<double>(fanout) / d;
      } else {
        int64_t positive = 0;
        double total = 0;
        for (int64_t p = s; p < s + d; ++p)
          if (weights[p] > 0.0f) ++positive, total += weights[p];
        rule.norm = total;
        rule.scale =
            (fanout < 0 || positive <= fanout) ? inf : LaborWeightScale(weights + s, d, fanout);
      }
      const size_t before = mine.size();
      if (rule.scale == inf && weights == nullptr) {
        for (int64_t p = s; p < s + d; ++p) mine.push_back(p);
      } else {
        for (int64_t p = s; p < s + d; ++p)
          if (taken(rule, p)) mine.push_back(p);
      }
      count[i] = static_cast<int64_t>(mine.size() - before);
    }
  });
  for (int64_t c = 0; c < chunks.count(); ++c)
    if (bad[c] >= 0) return IdOutOfRange(nodes[bad[c]], static_cast<size_t>(bad[c]), lo, hi);

  int64_t* offsets = out->offsets.data();
  offsets[0] = 0;
  for (int64_t i = 0; i < m; ++i) offsets[i + 1] += offsets[i];
  const int64_t total = offsets[m];
  out->neighbors.resize(total);
  out->edge_ids.resize(options.with_edge_ids ? total : 0);
  out->edge_weights.resize(total);
  const int64_t* eids = graph.edge_ids();

  // Phase 2: the taken edges (CSR order within a row) with their importance
  // weights, each chunk's at its rows' offsets.
  chunks.Run([&](int64_t c) {
    const int64_t b = chunks.begin(c), e = chunks.end(c);
    const std::vector<int64_t>& mine = picks[c];
    size_t at = 0;
    for (int64_t i = b; i < e; ++i) {
      const RowRule& rule = rules[i];
      for (int64_t o = offsets[i]; o < offsets[i + 1]; ++o, ++at) {
        const int64_t p = mine[at];
        const double a = weights ? static_cast<double>(weights[p]) : 1.0;
        const double pi = rule.scale == inf ? 1.0 : std::min(1.0, rule.scale * a);
        out->neighbors[o] = graph.neighbor(p);
        if (options.with_edge_ids) out->edge_ids[o] = eids ? eids[p] : p;
        out->edge_weights[o] = static_cast<float>(a / (pi * rule.norm));
      }
    }
  });
  return Status::OK();
}

}  // namespace fanout::sampler
