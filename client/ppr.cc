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

Status PersonalizedPageRank(Session& session, ArrayView<const int64_t> seeds, const PprOptions& o,
                            PprResult* out, const sampler::HeteroSchema* schema) {
  FANOUT_RETURN_IF_ERROR(CheckPprOptions(o, schema));
  const bool budgets = !o.type_budgets.empty();
  std::vector<int64_t> taken;
  const size_t n = seeds.size();
  if (n > static_cast<size_t>(sampler::kMaxPprQueries))
    return Status::InvalidArgument("PPR takes at most " + std::to_string(sampler::kMaxPprQueries) +
                                   " seeds per call, got " + std::to_string(n));
  const uint64_t alpha = sampler::PprAlphaFixed(o.alpha), eps = sampler::PprEpsFixed(o.eps);
  // Fixed-point scores and residuals per seed (sampler/ppr_push.h).
  std::vector<std::unordered_map<int64_t, uint64_t>> p(n), r(n);
  for (size_t i = 0; i < n; ++i) r[i][seeds[i]] = sampler::kPprOne;
  *out = PprResult();
  // Row lengths the owners reported (a node not asked yet counts as 1, the
  // lowest threshold any degree gives).
  std::unordered_map<int64_t, int64_t> degree;
  auto pushes = [&](int64_t v, uint64_t x) {
    const auto it = degree.find(v);
    return sampler::PprPushes(x, it == degree.end() ? 1 : it->second, eps);
  };
  // Candidates: nodes whose residual may be over their threshold, added when
  // it crosses it, so a round looks at those only, not every residual.
  std::vector<std::vector<int64_t>> cand(n);
  for (size_t i = 0; i < n; ++i) cand[i].push_back(seeds[i]);
  std::vector<int32_t> queries;
  std::vector<int64_t> nodes;
  std::vector<uint64_t> residuals;
  sampler::PprPushResult res;
  for (int64_t round = 0;; ++round) {
    // This round's entries: every seed's candidates over their threshold,
    // with their residuals as the round starts (synchronous).
    queries.clear(), nodes.clear(), residuals.clear();
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t>& c = cand[i];
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
      for (int64_t u : c) {
        const auto it = r[i].find(u);
        if (it == r[i].end() || !pushes(u, it->second)) continue;
        queries.push_back(static_cast<int32_t>(i));
        nodes.push_back(u);
        residuals.push_back(it->second);
      }
      c.clear();
    }
    if (nodes.empty()) break;
    if (round >= o.max_rounds) {
      out->converged = false;
      break;
    }
    const sampler::PprPushRequest req{queries, nodes, residuals, alpha, eps};
    FANOUT_RETURN_IF_ERROR(session.PprPush(req, &res));
    if (res.done != nodes.size() || res.pushed.size() < nodes.size() ||
        res.degrees.size() < nodes.size())
      return Status::Internal("PPR push answered " + std::to_string(res.done) + " of " +
                              std::to_string(nodes.size()) + " entries");
    out->entries_sent += static_cast<int64_t>(nodes.size());
    bool pushed = false;
    for (size_t e = 0; e < nodes.size(); ++e) {
      degree[nodes[e]] = res.degrees[e];
      if (!res.pushed[e]) continue;  // under its (now known) threshold: stays
      const size_t i = static_cast<size_t>(queries[e]);
      r[i].erase(nodes[e]);
      p[i][nodes[e]] += sampler::PprKept(residuals[e], alpha);
      ++out->pushes;
      pushed = true;
    }
    // The pushed mass, in any order (integer sums): each node that crosses
    // its threshold becomes a candidate of the next round.
    for (size_t j = 0; j < res.nodes.size(); ++j) {
      const size_t i = static_cast<size_t>(res.queries[j]);
      if (i >= n)
        return Status::Corruption("a PPR push reply names query " + std::to_string(i) +
                                  "; this call sent " + std::to_string(n));
      const int64_t v = res.nodes[j];
      uint64_t& x = r[i][v];
      const bool before = pushes(v, x);
      x += res.mass[j];
      if (!before && pushes(v, x)) cand[i].push_back(v);
    }
    // An entry that did not push (its degree was unknown) may still be over
    // its threshold with the mass that came since: look at it again.
    for (size_t e = 0; e < nodes.size(); ++e)
      if (!res.pushed[e]) {
        const size_t i = static_cast<size_t>(queries[e]);
        const auto it = r[i].find(nodes[e]);
        if (it != r[i].end() && pushes(nodes[e], it->second)) cand[i].push_back(nodes[e]);
      }
    if (pushed) out->rounds = round + 1;
    // A bound on memory: a tiny eps over a large graph touches most of it
    // for every seed (about 40 bytes per entry in the maps).
    size_t entries = degree.size();
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
  std::vector<std::pair<float, int64_t>> ranked;  // (-score as given out, node), best first
  for (size_t i = 0; i < n; ++i) {
    ranked.clear();
    // Score: p(v) + alpha r(v). Still a lower bound of ppr_s(v) (the residual
    // left at v gives v at least alpha of itself once pushed), and tighter
    // where a node holds residual it never pushed (a hub under its
    // threshold eps * deg).
    for (const auto& [v, x] : r[i])
      if (v != seeds[i]) p[i][v] += sampler::PprKept(x, alpha);
    for (const auto& [v, x] : p[i])
      if (v != seeds[i]) ranked.emplace_back(-static_cast<float>(sampler::PprMassToDouble(x)), v);
    // By the score given out, descending, then id ascending.
    std::sort(ranked.begin(), ranked.end());
    if (budgets) {
      // Best first, each node type up to its budget, then top_k of those.
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
