#include "client/walks.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/id_range.h"
#include "common/random.h"
#include "sampler/walk.h"

namespace fanout::client {
namespace {

double Unit(uint64_t draw) { return static_cast<double>(draw >> 11) * 0x1.0p-53; }

}  // namespace

Status CheckWalkOptions(const WalkOptions& o) {
  if (o.walk_length < 1)
    return Status::InvalidArgument("walk_length " + std::to_string(o.walk_length) +
                                   " is invalid: a walk takes at least 1 step");
  if (o.num_walks < 1)
    return Status::InvalidArgument("num_walks " + std::to_string(o.num_walks) +
                                   " is invalid: use 1 or more walks per seed");
  if (o.walk_length > kMaxWalkLength || o.num_walks > kMaxWalksPerSeed)
    return Status::InvalidArgument(
        "walk_length " + std::to_string(o.walk_length) + " / num_walks " +
        std::to_string(o.num_walks) + " is over the limit of " + std::to_string(kMaxWalkLength) +
        " steps / " + std::to_string(kMaxWalksPerSeed) + " walks per seed");
  if (!(o.restart_prob >= 0 && o.restart_prob < 1))
    return Status::InvalidArgument("restart_prob " + std::to_string(o.restart_prob) +
                                   " is outside [0, 1)");
  if (!(o.p > 0) || !std::isfinite(o.p))
    return Status::InvalidArgument("node2vec p " + std::to_string(o.p) + " must be > 0");
  if (!(o.q > 0) || !std::isfinite(o.q))
    return Status::InvalidArgument("node2vec q " + std::to_string(o.q) + " must be > 0");
  if (o.max_trials < 1)
    return Status::InvalidArgument("max_trials " + std::to_string(o.max_trials) + " must be >= 1");
  if (o.top_k < 0)
    return Status::InvalidArgument("top_k " + std::to_string(o.top_k) + " must be >= 0");
  if (o.visit_stride < 1 || o.visit_stride > o.walk_length)
    return Status::InvalidArgument("visit_stride " + std::to_string(o.visit_stride) +
                                   " is outside [1, walk_length=" + std::to_string(o.walk_length) +
                                   "]");
  if (o.metapath.size() > static_cast<size_t>(kMaxWalkLength))
    return Status::InvalidArgument("a metapath of " + std::to_string(o.metapath.size()) +
                                   " edge types is over the limit of " +
                                   std::to_string(kMaxWalkLength));
  for (int32_t e : o.metapath)
    if (e < 0)
      return Status::InvalidArgument("metapath edge type " + std::to_string(e) + " is negative");
  const int64_t visits = o.num_walks * (o.walk_length / o.visit_stride);
  if (o.top_k > visits)
    return Status::InvalidArgument(
        "top_k " + std::to_string(o.top_k) + " is more than the " + std::to_string(visits) +
        " visits a seed's walks make (num_walks x walk_length / visit_stride): no seed could "
        "fill it");
  return Status::OK();
}

void TopVisited(const std::vector<int64_t>& walks, int64_t num_seeds, int64_t num_walks,
                int64_t walk_length, int64_t top_k, WalkResult* out, int64_t visit_stride) {
  out->offsets.assign(1, 0);
  out->nodes.clear();
  out->counts.clear();
  const int64_t cols = walk_length + 1;
  std::unordered_map<int64_t, int64_t> seen;
  std::vector<std::pair<int64_t, int64_t>> ranked;  // (-count, node)
  for (int64_t i = 0; i < num_seeds; ++i) {
    seen.clear();
    const int64_t* w = walks.data() + i * num_walks * cols;
    const int64_t seed = w[0];
    for (int64_t j = 0; j < num_walks; ++j)
      for (int64_t t = visit_stride; t < cols; t += visit_stride) {
        const int64_t v = w[j * cols + t];
        if (v >= 0 && v != seed) ++seen[v];
      }
    ranked.clear();
    for (const auto& [v, c] : seen) ranked.emplace_back(-c, v);
    const size_t k = std::min<size_t>(ranked.size(), static_cast<size_t>(top_k));
    std::partial_sort(ranked.begin(), ranked.begin() + k, ranked.end());
    for (size_t r = 0; r < k; ++r) {
      out->nodes.push_back(ranked[r].second);
      out->counts.push_back(-ranked[r].first);
    }
    out->offsets.push_back(static_cast<int64_t>(out->nodes.size()));
  }
}

Status CheckMetapath(const sampler::HeteroSchema* h, const WalkOptions& o) {
  if (o.metapath.empty()) return Status::OK();
  if (h == nullptr || h->empty())
    return Status::InvalidArgument(
        "a metapath walk needs a heterogeneous dataset (this one has no edge types)");
  const int R = h->num_edge_types();
  for (int32_t e : o.metapath)
    if (e < 0 || e >= R)
      return Status::InvalidArgument("metapath edge type " + std::to_string(e) +
                                     " is not one of the dataset's " + std::to_string(R));
  // A step along e goes from its row type to the other end (stored direction).
  auto end_of = [h](int32_t e) {
    const sampler::EdgeType& t = h->edge_types[static_cast<size_t>(e)];
    return h->incoming ? t.src : t.dst;
  };
  const size_t L = o.metapath.size();
  for (size_t k = 1; k < L + (o.walk_length > static_cast<int64_t>(L) ? 1 : 0); ++k) {
    const int32_t before = o.metapath[k - 1], e = o.metapath[k % L];
    if (h->RowType(e) != end_of(before))
      return Status::InvalidArgument(
          "metapath step " + std::to_string(k % L) + " (" + h->EdgeTypeName(e) +
          ") starts at node type '" + h->node_types[static_cast<size_t>(h->RowType(e))] +
          "', but step " + std::to_string(k - 1) + " (" + h->EdgeTypeName(before) + ") ends at '" +
          h->node_types[static_cast<size_t>(end_of(before))] + "'" +
          (k == L ? " (the walk is longer than the metapath, which repeats)" : "") +
          "; types are in the stored direction (" + (h->incoming ? "in" : "out") +
          "): a step along (s, r, d) goes from " + (h->incoming ? "d to s" : "s to d"));
  }
  return Status::OK();
}

Status RandomWalks(Session& session, ArrayView<const int64_t> seeds, uint64_t request_seed,
                   const WalkOptions& o, WalkResult* out) {
  FANOUT_RETURN_IF_ERROR(CheckWalkOptions(o));
  const int64_t n = static_cast<int64_t>(seeds.size());
  const int64_t cols = o.walk_length + 1;
  if (n > kMaxWalkEntries / o.num_walks / cols)
    return Status::InvalidArgument(
        std::to_string(n) + " seeds x " + std::to_string(o.num_walks) + " walks x " +
        std::to_string(cols) + " nodes is over the " + std::to_string(kMaxWalkEntries) +
        " entries one call returns: walk fewer seeds at a time (RandomWalkLoader's batch_size)");
  const int64_t walks = n * o.num_walks;
  out->walks.assign(static_cast<size_t>(walks * cols), -1);
  out->steps = 0;
  std::vector<int64_t> cur(walks), prev(walks, -1), start(walks);
  for (int64_t w = 0; w < walks; ++w) {
    cur[w] = start[w] = seeds[w / o.num_walks];
    out->walks[w * cols] = cur[w];
  }
  const bool node2vec = o.p != 1.0 || o.q != 1.0;
  const double amax = std::max({1.0 / o.p, 1.0, 1.0 / o.q});
  std::vector<int64_t> ids, next, x_of, pending, again, rows, cands;
  std::vector<uint64_t> keys, step_key(static_cast<size_t>(walks));  // step_key: walk w's this step
  std::vector<uint8_t> adjacent;
  for (int64_t t = 1; t <= o.walk_length; ++t) {
    // Which walks move this step (the rest are at a dead end or restart).
    pending.clear();
    for (int64_t w = 0; w < walks; ++w) {
      if (cur[w] < 0) continue;
      const uint64_t key = step_key[w] =
          sampler::WalkStepKey(request_seed, static_cast<uint64_t>(w), static_cast<uint64_t>(t));
      if (o.restart_prob > 0 && t >= 2 && (t - 1) % o.visit_stride == 0 &&
          Unit(Draw(key, 1)) < o.restart_prob) {
        prev[w] = -1;
        cur[w] = start[w];
        out->walks[w * cols + t] = cur[w];
        ++out->steps;
        continue;
      }
      pending.push_back(w);
    }
    x_of.assign(static_cast<size_t>(walks), -1);
    for (int attempt = 0; attempt < o.max_trials && !pending.empty(); ++attempt) {
      ids.resize(pending.size());
      keys.resize(pending.size());
      for (size_t i = 0; i < pending.size(); ++i) {
        const int64_t w = pending[i];
        const uint64_t key = step_key[w];
        ids[i] = cur[w];
        keys[i] = attempt == 0 ? key : Mix64(key ^ (static_cast<uint64_t>(attempt) * kGolden64));
      }
      next.resize(pending.size());
      FANOUT_RETURN_IF_ERROR(session.WalkStep(
          ids, keys, o.weighted, next.data(),
          o.metapath.empty() ? -1 : o.metapath[static_cast<size_t>(t - 1) % o.metapath.size()]));
      // First-order steps (and dead ends) are final; node2vec candidates
      // with a previous node are checked against it.
      rows.clear();
      cands.clear();
      for (size_t i = 0; i < pending.size(); ++i) {
        const int64_t w = pending[i];
        x_of[w] = next[i];
        if (!node2vec || prev[w] < 0 || next[i] < 0 || attempt + 1 == o.max_trials) continue;
        if (next[i] == prev[w]) continue;  // alpha = 1/p, decided below without asking
        rows.push_back(prev[w]);
        cands.push_back(next[i]);
      }
      adjacent.assign(rows.size(), 0);
      if (!rows.empty()) FANOUT_RETURN_IF_ERROR(session.InRows(rows, cands, adjacent.data()));
      again.clear();
      size_t c = 0;
      for (size_t i = 0; i < pending.size(); ++i) {
        const int64_t w = pending[i];
        if (node2vec && prev[w] >= 0 && next[i] >= 0 && attempt + 1 < o.max_trials) {
          double alpha;
          if (next[i] == prev[w]) {
            alpha = 1.0 / o.p;
          } else {
            alpha = adjacent[c++] ? 1.0 : 1.0 / o.q;
          }
          if (Unit(Draw(keys[i], 2)) * amax >= alpha) {
            again.push_back(w);  // rejected: another candidate
          }
        }
      }
      pending.swap(again);
    }
    for (int64_t w = 0; w < walks; ++w) {
      if (cur[w] < 0 || out->walks[w * cols + t] >= 0) continue;  // dead, or restarted
      const int64_t x = x_of[w];
      prev[w] = x < 0 ? -1 : cur[w];
      cur[w] = x;
      out->walks[w * cols + t] = x;
      if (x >= 0) ++out->steps;
    }
  }
  if (o.top_k > 0)
    TopVisited(out->walks, n, o.num_walks, o.walk_length, o.top_k, out, o.visit_stride);
  return Status::OK();
}

Status SamplePinSage(Session& session, ArrayView<const int64_t> seeds, uint64_t request_seed,
                     const std::vector<int64_t>& fanouts, const WalkOptions& walk,
                     bool with_edge_ids, sampler::SampledSubgraph* out) {
  for (size_t h = 0; h < fanouts.size(); ++h) {
    WalkOptions o = walk;
    o.top_k = fanouts[h];
    if (o.top_k < 1)
      return Status::InvalidArgument(
          "PinSAGE hops keep each node's top num_neighbors[h] visited nodes: " +
          std::to_string(fanouts[h]) + " in hop " + std::to_string(h) + " is not >= 1");
    FANOUT_RETURN_IF_ERROR(CheckWalkOptions(o));
  }
  sampler::SubgraphBuilder builder;
  builder.Begin(seeds, out);
  sampler::OneHopResult hop;
  WalkResult r;
  for (size_t h = 0; h < fanouts.size(); ++h) {
    WalkOptions o = walk;
    o.top_k = fanouts[h];
    ArrayView<const int64_t> frontier = builder.Frontier(*out);
    const std::vector<int64_t> f(frontier.begin(), frontier.end());  // out->n_id grows below
    FANOUT_RETURN_IF_ERROR(RandomWalks(session, f, HopKey(request_seed, h), o, &r));
    const size_t m = f.size(), total = r.nodes.size();
    hop.offsets.assign(r.offsets.begin(), r.offsets.end());
    hop.neighbors.assign(r.nodes.begin(), r.nodes.end());
    hop.edge_ids.assign(with_edge_ids ? total : 0, -1);
    hop.edge_types.clear();
    hop.edge_weights.resize(total);
    for (size_t i = 0; i < m; ++i) {
      int64_t sum = 0;
      for (int64_t e = r.offsets[i]; e < r.offsets[i + 1]; ++e) sum += r.counts[e];
      for (int64_t e = r.offsets[i]; e < r.offsets[i + 1]; ++e)
        hop.edge_weights[e] = static_cast<float>(static_cast<double>(r.counts[e]) / sum);
    }
    builder.AddHop(hop, with_edge_ids, out);
  }
  return Status::OK();
}

Status WalkSampler::Create(std::shared_ptr<Source> source, WalkOptions options,
                           std::unique_ptr<WalkSampler>* out) {
  if (!source) return Status::InvalidArgument("WalkSampler: no source");
  FANOUT_RETURN_IF_ERROR(CheckWalkOptions(options));
  FANOUT_RETURN_IF_ERROR(CheckMetapath(source->hetero(), options));
  std::unique_ptr<WalkSampler> s(new WalkSampler());
  FANOUT_RETURN_IF_ERROR(source->NewSession(&s->session_));
  s->source_ = std::move(source);
  s->options_ = options;
  *out = std::move(s);
  return Status::OK();
}

}  // namespace fanout::client
