#include "client/ppr.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "common/id_range.h"
#include "sampler/multihop.h"

namespace fanout::client {

Status CheckPprOptions(const PprOptions& o, const sampler::HeteroSchema* schema) {
  if (!(o.alpha > 0 && o.alpha < 1))
    return Status::InvalidArgument("PPR alpha " + std::to_string(o.alpha) +
                                   " is outside (0, 1) (the teleport probability)");
  if (!(o.eps >= 1e-9 && o.eps < 1))
    return Status::InvalidArgument("PPR eps " + std::to_string(o.eps) +
                                   " is outside [1e-9, 1) (the residual threshold per degree)");
  if (o.top_k < 1)
    return Status::InvalidArgument("PPR top_k " + std::to_string(o.top_k) + " must be >= 1");
  if (o.max_rounds < 1)
    return Status::InvalidArgument("PPR max_rounds " + std::to_string(o.max_rounds) +
                                   " must be >= 1");
  if (!o.type_budgets.empty()) {
    if (schema == nullptr || schema->empty())
      return Status::InvalidArgument(
          "PPR per-type budgets need a heterogeneous dataset (this one has no node types)");
    if (o.type_budgets.size() != static_cast<size_t>(schema->num_node_types()))
      return Status::InvalidArgument(
          "PPR per-type budgets name " + std::to_string(o.type_budgets.size()) +
          " node types; the dataset has " + std::to_string(schema->num_node_types()));
    for (size_t t = 0; t < o.type_budgets.size(); ++t)
      if (o.type_budgets[t] < 0)
        return Status::InvalidArgument("PPR budget " + std::to_string(o.type_budgets[t]) +
                                       " of node type '" + schema->node_types[t] + "' is negative");
  }
  return Status::OK();
}

namespace {

// Rows read once per batch, by node: [begin, end) into `nbrs`.
class RowCache {
 public:
  explicit RowCache(Session* s) : session_(s) {}
  // Reads the rows of `nodes` (ascending, distinct) not read yet, a few
  // thousand per request (hub rows stay under the servers' reply limit).
  Status Fetch(const std::vector<int64_t>& nodes, int64_t* rows_read) {
    want_.clear();
    for (int64_t v : nodes)
      if (!at_.count(v)) want_.push_back(v);
    constexpr size_t kChunk = 2048;
    sampler::MultiHopOptions all;
    all.fanouts = {-1};
    all.sampling.with_edge_ids = false;
    for (size_t b = 0; b < want_.size(); b += kChunk) {
      const size_t e = std::min(want_.size(), b + kChunk);
      ArrayView<const int64_t> part(want_.data() + b, e - b);
      FANOUT_RETURN_IF_ERROR(session_->Sample(part, 0, all, &sub_));
      // Seeds are distinct: seed i is n_id[i]; its edges are those with col i,
      // listed per target in stored order.
      std::vector<std::vector<int64_t>> rows(e - b);
      for (size_t k = 0; k < sub_.col.size(); ++k)
        rows[static_cast<size_t>(sub_.col[k])].push_back(
            sub_.n_id[static_cast<size_t>(sub_.row[k])]);
      for (size_t i = 0; i < rows.size(); ++i) {
        at_[part[i]] = {static_cast<int64_t>(nbrs_.size()),
                        static_cast<int64_t>(nbrs_.size() + rows[i].size())};
        nbrs_.insert(nbrs_.end(), rows[i].begin(), rows[i].end());
      }
      *rows_read += static_cast<int64_t>(e - b);
    }
    return Status::OK();
  }
  bool Has(int64_t v) const { return at_.count(v) != 0; }
  std::pair<const int64_t*, int64_t> Row(int64_t v) const {
    const auto& r = at_.at(v);
    return {nbrs_.data() + r.first, r.second - r.first};
  }

 private:
  Session* session_;
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> at_;
  std::vector<int64_t> nbrs_, want_;
  sampler::SampledSubgraph sub_;
};

}  // namespace

Status PersonalizedPageRank(Session& session, ArrayView<const int64_t> seeds, const PprOptions& o,
                            PprResult* out, const sampler::HeteroSchema* schema) {
  FANOUT_RETURN_IF_ERROR(CheckPprOptions(o, schema));
  const bool budgets = !o.type_budgets.empty();
  std::vector<int64_t> taken;
  const size_t n = seeds.size();
  std::vector<std::unordered_map<int64_t, double>> p(n), r(n);
  for (size_t i = 0; i < n; ++i) r[i][seeds[i]] = 1.0;
  *out = PprResult();
  RowCache rows(&session);
  // Candidates: nodes whose residual may be over their threshold, added when
  // it crosses it (the degree-1 threshold eps while a row is unread), so a
  // round looks at those only, not every residual.
  std::vector<std::vector<int64_t>> frontier(n), cand(n);
  for (size_t i = 0; i < n; ++i) cand[i].push_back(seeds[i]);
  std::vector<int64_t> need;
  std::vector<std::pair<int64_t, double>> go;
  auto threshold = [&](int64_t v) {
    return o.eps * static_cast<double>(rows.Has(v) ? std::max<int64_t>(rows.Row(v).second, 1) : 1);
  };
  for (int64_t round = 0;; ++round) {
    need.clear();
    for (size_t i = 0; i < n; ++i) {
      frontier[i].swap(cand[i]);
      cand[i].clear();
      std::sort(frontier[i].begin(), frontier[i].end());
      frontier[i].erase(std::unique(frontier[i].begin(), frontier[i].end()), frontier[i].end());
      need.insert(need.end(), frontier[i].begin(), frontier[i].end());
    }
    std::sort(need.begin(), need.end());
    need.erase(std::unique(need.begin(), need.end()), need.end());
    FANOUT_RETURN_IF_ERROR(rows.Fetch(need, &out->rows_read));
    bool pushed = false;
    for (size_t i = 0; i < n; ++i) {
      // Who pushes this round, with their residuals taken first (synchronous).
      go.clear();
      for (int64_t u : frontier[i]) {
        auto it = r[i].find(u);
        if (it != r[i].end() && it->second > threshold(u)) go.emplace_back(u, it->second);
      }
      if (go.empty()) continue;
      if (round >= o.max_rounds) {
        out->converged = false;
        continue;
      }
      pushed = true;
      for (const auto& [u, x] : go) {
        r[i].erase(u);
        p[i][u] += o.alpha * x;
      }
      for (const auto& [u, x] : go) {
        const auto [row, deg] = rows.Row(u);
        if (deg == 0) continue;  // an empty row: the rest of its mass is dropped
        const double share = (1 - o.alpha) * x / static_cast<double>(deg);
        for (int64_t k = 0; k < deg; ++k) {
          double& rv = r[i][row[k]];
          const double before = rv;
          rv += share;
          const double t = threshold(row[k]);
          if (before <= t && rv > t) cand[i].push_back(row[k]);
        }
      }
      out->pushes += static_cast<int64_t>(go.size());
    }
    if (!pushed) break;
    out->rounds = round + 1;
    // A bound on memory: a tiny eps over a large graph touches most of it
    // for every seed (about 48 bytes per entry in the maps).
    size_t entries = 0;
    for (size_t i = 0; i < n; ++i) entries += p[i].size() + r[i].size();
    if (entries > kMaxPprEntries)
      return Status::InvalidArgument("PPR for " + std::to_string(n) + " seeds holds " +
                                     std::to_string(entries) + " scores and residuals after " +
                                     std::to_string(round + 1) + " rounds, over the limit of " +
                                     std::to_string(kMaxPprEntries) + ": use a larger eps (now " +
                                     std::to_string(o.eps) + ") or fewer seeds per call");
  }
  // Each seed's top nodes.
  out->offsets.assign(1, 0);
  std::vector<std::pair<float, int64_t>> ranked;  // by the score as given out (float)
  for (size_t i = 0; i < n; ++i) {
    ranked.clear();
    // Score: p(v) + alpha r(v). Still a lower bound of ppr_s(v) (the residual
    // left at v gives v at least alpha of itself once pushed), and tighter
    // where a node holds residual it never pushed (a hub under its
    // threshold eps * deg).
    for (const auto& [v, x] : r[i])
      if (v != seeds[i]) p[i][v] += o.alpha * x;
    for (const auto& [v, x] : p[i])
      if (v != seeds[i]) ranked.emplace_back(-static_cast<float>(x), v);
    if (budgets) {
      // Best first, each node type up to its budget, then top_k of those.
      std::sort(ranked.begin(), ranked.end());
      taken.assign(o.type_budgets.size(), 0);
      size_t kept = 0;
      for (const auto& e : ranked) {
        if (static_cast<int64_t>(kept) == o.top_k) break;
        const int32_t t = schema->NodeTypeOf(e.second);
        if (taken[static_cast<size_t>(t)] == o.type_budgets[static_cast<size_t>(t)]) continue;
        ++taken[static_cast<size_t>(t)];
        ranked[kept++] = e;
      }
      ranked.resize(kept);
    }
    const size_t k = std::min(ranked.size(), static_cast<size_t>(o.top_k));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k),
                      ranked.end());
    for (size_t j = 0; j < k; ++j) {
      out->nodes.push_back(ranked[j].second);
      out->scores.push_back(-ranked[j].first);
    }
    out->offsets.push_back(static_cast<int64_t>(out->nodes.size()));
  }
  return Status::OK();
}

std::vector<double> ExactPersonalizedPageRank(const std::vector<std::vector<int64_t>>& rows,
                                              int64_t seed, double alpha, int iterations) {
  const size_t n = rows.size();
  std::vector<double> x(n, 0), next(n);
  x[static_cast<size_t>(seed)] = 1;
  for (int it = 0; it < iterations; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    next[static_cast<size_t>(seed)] = alpha;
    for (size_t u = 0; u < n; ++u)
      for (int64_t v : rows[u])
        next[static_cast<size_t>(v)] += (1 - alpha) * x[u] / static_cast<double>(rows[u].size());
    x.swap(next);
  }
  return x;
}

Status SamplePpr(Session& session, ArrayView<const int64_t> seeds, const PprOptions& options,
                 bool with_edge_ids, sampler::SampledSubgraph* out, PprResult* stats,
                 const sampler::HeteroSchema* schema) {
  PprResult r;
  FANOUT_RETURN_IF_ERROR(PersonalizedPageRank(session, seeds, options, &r, schema));
  sampler::SubgraphBuilder builder;
  builder.Begin(seeds, out);
  sampler::OneHopResult hop;
  hop.offsets.assign(r.offsets.begin(), r.offsets.end());
  hop.neighbors.assign(r.nodes.begin(), r.nodes.end());
  hop.edge_ids.assign(with_edge_ids ? r.nodes.size() : 0, -1);
  hop.edge_weights.assign(r.scores.begin(), r.scores.end());
  builder.AddHop(hop, with_edge_ids, out);
  if (stats) *stats = std::move(r);
  return Status::OK();
}

}  // namespace fanout::client
