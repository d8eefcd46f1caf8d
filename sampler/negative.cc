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
                       std::vector<int64_t>* neg_src, std::vector<int64_t>* neg_dst) {
  assert(CheckNegativeOptions(o).ok());  // REQUIRES
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
  auto draw = [&](int64_t j, int a) {
    const uint64_t key = NodeKey(request_seed, kNegativeHop, static_cast<uint64_t>(j));
    if (binary) {
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
  if (o.strict) {
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
