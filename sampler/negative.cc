#include "sampler/negative.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/random.h"

namespace fanout::sampler {

namespace {
// The pseudo-hop under which negatives draw (NodeKey's hop argument): far from
// any real hop number, so negatives and neighbor samples never share draws.
constexpr uint64_t kNegativeHop = 0x6e6567617469766bULL;
}  // namespace

Status ParseNegativeMode(const std::string& text, NegativeMode* out) {
  if (text == "none")
    *out = NegativeMode::kNone;
  else if (text == "binary")
    *out = NegativeMode::kBinary;
  else if (text == "triplet")
    *out = NegativeMode::kTriplet;
  else
    return Status::InvalidArgument("negative sampling mode '" + text +
                                   "' is not none, binary or triplet");
  return Status::OK();
}

const char* NegativeModeName(NegativeMode mode) {
  switch (mode) {
    case NegativeMode::kBinary:
      return "binary";
    case NegativeMode::kTriplet:
      return "triplet";
    default:
      return "none";
  }
}

Status CheckNegativeOptions(const NegativeOptions& o) {
  if (o.mode == NegativeMode::kNone) return Status::OK();
  if (!(o.amount > 0) || !std::isfinite(o.amount))
    return Status::InvalidArgument("negative sampling amount must be > 0, got " +
                                   std::to_string(o.amount));
  if (o.mode == NegativeMode::kTriplet && (o.amount != std::floor(o.amount) || o.amount > 1e6))
    return Status::InvalidArgument(
        "triplet negative sampling needs an integer amount in [1, 1e6], got " +
        std::to_string(o.amount));
  if (o.mode == NegativeMode::kBinary && o.amount > 1e6)
    return Status::InvalidArgument("negative sampling amount " + std::to_string(o.amount) +
                                   " is over 1e6");
  if (o.max_draws < 1)
    return Status::InvalidArgument("max_draws must be >= 1, got " + std::to_string(o.max_draws));
  return Status::OK();
}

Status ParseTemporalNegatives(const std::string& text, TemporalNegatives* out) {
  if (text == "none")
    *out = TemporalNegatives::kNone;
  else if (text == "active")
    *out = TemporalNegatives::kActive;
  else if (text == "historical")
    *out = TemporalNegatives::kHistorical;
  else
    return Status::InvalidArgument("temporal negatives '" + text +
                                   "' is not none, active or historical");
  return Status::OK();
}

const char* TemporalNegativesName(TemporalNegatives t) {
  return t == TemporalNegatives::kActive       ? "active"
         : t == TemporalNegatives::kHistorical ? "historical"
                                               : "none";
}

EdgeHistory::EdgeHistory(ArrayView<const int64_t> src, ArrayView<const int64_t> dst,
                         ArrayView<const int64_t> times) {
  assert(src.size() == dst.size() && dst.size() == times.size());  // REQUIRES
  pairs_.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) pairs_.push_back({src[i], times[i], dst[i]});
  // Each pair's first time: sort by (src, dst, time) and keep the first of each run.
  std::sort(pairs_.begin(), pairs_.end(), [](const Pair& a, const Pair& b) {
    return a.src != b.src ? a.src < b.src : a.dst != b.dst ? a.dst < b.dst : a.time < b.time;
  });
  pairs_.erase(
      std::unique(pairs_.begin(), pairs_.end(),
                  [](const Pair& a, const Pair& b) { return a.src == b.src && a.dst == b.dst; }),
      pairs_.end());
  // Each destination's first time: the least over its pairs.
  std::vector<std::pair<int64_t, int64_t>> by_dst;  // (dst, time)
  by_dst.reserve(pairs_.size());
  for (const Pair& p : pairs_) by_dst.emplace_back(p.dst, p.time);
  std::sort(by_dst.begin(), by_dst.end());
  for (size_t i = 0; i < by_dst.size(); ++i)
    if (i == 0 || by_dst[i].first != by_dst[i - 1].first)
      active_.emplace_back(by_dst[i].second, by_dst[i].first);
  std::sort(active_.begin(), active_.end());
  std::sort(pairs_.begin(), pairs_.end(), [](const Pair& a, const Pair& b) {
    return a.src != b.src ? a.src < b.src : a.time != b.time ? a.time < b.time : a.dst < b.dst;
  });
}

int64_t EdgeHistory::ActiveBefore(int64_t t) const {
  return std::lower_bound(active_.begin(), active_.end(),
                          std::pair<int64_t, int64_t>(t, INT64_MIN)) -
         active_.begin();
}

std::pair<int64_t, int64_t> EdgeHistory::LinkedBefore(int64_t s, int64_t t) const {
  auto less = [](const Pair& a, const Pair& b) {
    return a.src != b.src ? a.src < b.src : a.time < b.time;
  };
  const auto b = std::lower_bound(pairs_.begin(), pairs_.end(), Pair{s, INT64_MIN, 0}, less);
  const auto e = std::lower_bound(b, pairs_.end(), Pair{s, t, 0}, less);
  return {b - pairs_.begin(), e - pairs_.begin()};
}

int64_t NumNegatives(const NegativeOptions& o, int64_t num_positive) {
  switch (o.mode) {
    case NegativeMode::kBinary:
      return static_cast<int64_t>(std::ceil(o.amount * static_cast<double>(num_positive)));
    case NegativeMode::kTriplet:
      return static_cast<int64_t>(o.amount) * num_positive;
    default:
      return 0;
  }
}

Status SampleNegatives(const NegativeOptions& o, ArrayView<const int64_t> pos_src,
                       int64_t num_nodes, uint64_t request_seed, const EdgeOracle& oracle,
                       std::vector<int64_t>* neg_src, std::vector<int64_t>* neg_dst) {
  const NodeRanges all = NodeRanges::All(num_nodes);
  return SampleNegatives(o, pos_src, all, all, request_seed, oracle, neg_src, neg_dst);
}

Status SampleNegatives(const NegativeOptions& o, ArrayView<const int64_t> pos_src,
                       const NodeRanges& src_nodes, const NodeRanges& dst_nodes,
                       uint64_t request_seed, const EdgeOracle& oracle,
                       std::vector<int64_t>* neg_src, std::vector<int64_t>* neg_dst,
                       const TemporalPositives* temporal) {
  assert(CheckNegativeOptions(o).ok());  // REQUIRES
  const bool timed = o.temporal != TemporalNegatives::kNone && o.mode != NegativeMode::kNone;
  if (timed && (temporal == nullptr || temporal->history == nullptr ||
                temporal->dst.size() != pos_src.size() || temporal->time.size() != pos_src.size()))
    return Status::InvalidArgument(std::string("temporal negatives (") +
                                   TemporalNegativesName(o.temporal) +
                                   ") need the seed edges' times (edge_label_time)");
  neg_src->clear();
  neg_dst->clear();
  const int64_t m = NumNegatives(o, static_cast<int64_t>(pos_src.size()));
  if (m == 0) return Status::OK();
  const bool binary = o.mode == NegativeMode::kBinary;
  if ((binary && src_nodes.count() <= 0) || dst_nodes.count() <= 0)
    return Status::InvalidArgument("negative sampling on a graph without nodes to draw from");
  const int64_t per = binary ? 1 : static_cast<int64_t>(o.amount);
  const uint64_t ns = static_cast<uint64_t>(src_nodes.count()),
                 nd = static_cast<uint64_t>(dst_nodes.count());
  const int64_t num_nodes = std::max(src_nodes.count(), dst_nodes.count());
  std::vector<int64_t> src(m), dst(m);
  // Negative j's attempt a: key NodeKey(seed, kNegativeHop, j); binary draws
  // 2a (source) and 2a + 1 (destination), triplet draw a (destination).
  const int64_t num_pos = static_cast<int64_t>(pos_src.size());
  // Temporal: negative j's positive i keeps its source and time; the
  // destination is drawn as the header says.
  auto draw_timed = [&](int64_t j, int a, uint64_t key) {
    const int64_t i = binary ? j % num_pos : j / per;
    const EdgeHistory& h = *temporal->history;
    const int64_t s = pos_src[static_cast<size_t>(i)], t = temporal->time[static_cast<size_t>(i)];
    src[j] = s;
    if (o.temporal == TemporalNegatives::kHistorical) {
      const auto [b, e] = h.LinkedBefore(s, t);
      const int64_t own = temporal->dst[static_cast<size_t>(i)];
      if (e - b > 1 || (e - b == 1 && h.Linked(b) != own)) {
        // Up to 16 draws to miss the positive's own destination (at most one
        // of >= 2 candidates: all miss with probability <= 2^-16), then an
        // active draw.
        for (uint64_t r = 0; r < 16; ++r) {
          const int64_t d =
              h.Linked(b + static_cast<int64_t>(DrawBelow(
                               Draw(key ^ 0x68697374ULL, static_cast<uint64_t>(a) * 16 + r),
                               static_cast<uint64_t>(e - b))));
          if (d != own) {
            dst[j] = d;
            return;
          }
        }
      }
    }
    const int64_t c = h.ActiveBefore(t), own = temporal->dst[static_cast<size_t>(i)];
    for (uint64_t r = 0; r < 16; ++r) {  // the positive's own destination is drawn again
      const uint64_t x = Draw(key, static_cast<uint64_t>(a) * 32 + 2 * r + 1);
      dst[j] = c > 0 ? h.Active(static_cast<int64_t>(DrawBelow(x, static_cast<uint64_t>(c))))
                     : dst_nodes.Id(static_cast<int64_t>(DrawBelow(x, nd)));
      if (dst[j] != own) break;
    }
  };
  auto draw = [&](int64_t j, int a) {
    const uint64_t key = NodeKey(request_seed, kNegativeHop, static_cast<uint64_t>(j));
    if (timed) {
      draw_timed(j, a, key);
    } else if (binary) {
      src[j] = src_nodes.Id(
          static_cast<int64_t>(DrawBelow(Draw(key, 2 * static_cast<uint64_t>(a)), ns)));
      dst[j] = dst_nodes.Id(
          static_cast<int64_t>(DrawBelow(Draw(key, 2 * static_cast<uint64_t>(a) + 1), nd)));
    } else {
      src[j] = pos_src[static_cast<size_t>(j / per)];
      dst[j] =
          dst_nodes.Id(static_cast<int64_t>(DrawBelow(Draw(key, static_cast<uint64_t>(a)), nd)));
    }
  };
  for (int64_t j = 0; j < m; ++j) draw(j, 0);
  if (o.strict && !timed) {
    std::vector<int64_t> pending(m), ask_src, ask_dst, still;
    for (int64_t j = 0; j < m; ++j) pending[j] = j;
    std::vector<uint8_t> exists;
    for (int a = 1;; ++a) {
      ask_src.resize(pending.size());
      ask_dst.resize(pending.size());
      for (size_t i = 0; i < pending.size(); ++i)
        ask_src[i] = src[pending[i]], ask_dst[i] = dst[pending[i]];
      exists.assign(pending.size(), 0);
      FANOUT_RETURN_IF_ERROR(oracle(ask_src, ask_dst, exists.data()));
      still.clear();
      for (size_t i = 0; i < pending.size(); ++i)
        if (exists[i]) still.push_back(pending[i]);
      if (still.empty()) break;
      if (a == o.max_draws) {
        const int64_t j = still.front();
        return Status::InvalidArgument(
            "strict negative sampling drew only existing edges for negative " + std::to_string(j) +
            (binary ? std::string() : " (source node " + std::to_string(src[j]) + ")") + " in " +
            std::to_string(o.max_draws) + " draws over " + std::to_string(num_nodes) +
            " nodes: the graph (or that source) is too dense for strict negatives; use "
            "strict=false");
      }
      pending.swap(still);
      for (int64_t j : pending) draw(j, a);
    }
  }
  if (binary) *neg_src = std::move(src);
  *neg_dst = std::move(dst);
  return Status::OK();
}

bool RowHasNeighbor(const CsrGraph& g, int64_t row, int64_t neighbor, const int32_t* edge_types,
                    int edge_type) {
  int64_t b = g.indptr()[row], e = g.indptr()[row + 1];
  if (edge_type >= 0 && edge_types != nullptr) {
    const int32_t* first = std::lower_bound(edge_types + b, edge_types + e, edge_type);
    const int32_t* last = std::upper_bound(first, edge_types + e, edge_type);
    b = first - edge_types;
    e = last - edge_types;
  }
  if (const int32_t* p32 = g.indices32()) {
    if (neighbor < 0 || neighbor > INT32_MAX) return false;
    const int32_t want = static_cast<int32_t>(neighbor);
    for (int64_t i = b; i < e; ++i)
      if (p32[i] == want) return true;
    return false;
  }
  const int64_t* p = g.indices();
  for (int64_t i = b; i < e; ++i)
    if (p[i] == neighbor) return true;
  return false;
}

}  // namespace fanout::sampler
