#include "sampler/ppr_push.h"

#include <cmath>
#include <string>

#include "common/id_range.h"

namespace fanout::sampler {

uint64_t PprAlphaFixed(double alpha) {
  constexpr double kMax = 4294967295.0;  // 2^32 - 1
  const double a = std::nearbyint(std::ldexp(alpha, 32));
  return a < 1 ? 1 : a > kMax ? static_cast<uint64_t>(kMax) : static_cast<uint64_t>(a);
}

uint64_t PprEpsFixed(double eps) {
  const double e = std::nearbyint(std::ldexp(eps, kPprMassBits));
  return e < 1 ? 1 : e >= static_cast<double>(kPprOne) ? kPprOne : static_cast<uint64_t>(e);
}

int64_t PprPushResult::PushedEdges() const {
  int64_t edges = 0;
  for (size_t i = 0; i < done; ++i)
    if (pushed[i]) edges += degrees[i];
  return edges;
}

Status CheckPprPushShape(const PprPushRequest& in) {
  const size_t n = in.nodes.size();
  if (in.queries.size() != n || in.residuals.size() != n)
    return Status::InvalidArgument("PPR push: " + std::to_string(n) + " nodes, " +
                                   std::to_string(in.queries.size()) + " query ids and " +
                                   std::to_string(in.residuals.size()) +
                                   " residuals (one of each per entry)");
  return Status::OK();
}

void PprPushResult::Clear() {
  pushed.clear();
  degrees.clear();
  queries.clear();
  nodes.clear();
  mass.clear();
  done = 0;
}

namespace {
constexpr int kQueryShift = 40;  // map key: query above the node id
}

Status PprPushRound(const CsrGraph& g, int64_t node_offset, const PprPushRequest& in,
                    size_t max_out, PprPushResult* out, detail::IdMap* map,
                    const PprRowOverride* override_row) {
  out->Clear();
  FANOUT_RETURN_IF_ERROR(CheckPprPushShape(in));
  const size_t n = in.nodes.size();
  if (in.alpha_fixed == 0 || in.alpha_fixed >= (uint64_t{1} << 32))
    return Status::InvalidArgument("PPR push: alpha " + std::to_string(in.alpha_fixed) +
                                   " / 2^32 is outside (0, 1)");
  if (in.eps_fixed == 0) return Status::InvalidArgument("PPR push: eps is 0 (it must be positive)");
  if (node_offset + g.num_nodes() > (int64_t{1} << kQueryShift))
    return Status::NotSupported("PPR push supports graphs of up to 2^40 nodes");
  IdRangeCheck how;
  how.what = "PPR node";
  FANOUT_RETURN_IF_ERROR(CheckIdsInRange(in.nodes, node_offset, node_offset + g.num_nodes(), how));
  for (size_t i = 0; i < n; ++i)
    if (in.queries[i] < 0 || in.queries[i] >= kMaxPprQueries)
      return Status::InvalidArgument("PPR push: query " + std::to_string(in.queries[i]) +
                                     " of entry " + std::to_string(i) + " is outside [0, " +
                                     std::to_string(kMaxPprQueries) + ")");
  out->pushed.reserve(n);
  out->degrees.reserve(n);
  map->Reset(0);  // grown below as pairs come (Reserve)
  std::vector<int64_t> merged;
  for (size_t i = 0; i < n; ++i) {
    const int64_t v = in.nodes[i];
    // The row: the override's, or CSR positions begin .. begin + deg.
    const bool merged_row = override_row != nullptr && (*override_row)(v, &merged);
    const int64_t begin = merged_row ? 0 : g.indptr()[v - node_offset];
    const int64_t deg =
        merged_row ? static_cast<int64_t>(merged.size()) : g.degree(v - node_offset);
    const uint64_t res = in.residuals[i];
    const bool push = PprPushes(res, deg, in.eps_fixed);
    if (push && deg > 0) {
      if (static_cast<size_t>(deg) > max_out)
        return Status::InvalidArgument(
            "PPR push: node " + std::to_string(v) + "'s row of " + std::to_string(deg) +
            " neighbors is over the reply's limit of " + std::to_string(max_out) + " entries");
      if (out->nodes.size() + static_cast<size_t>(deg) > max_out) break;  // the rest: next request
      const uint64_t share = (res - PprKept(res, in.alpha_fixed)) / static_cast<uint64_t>(deg);
      if (share > 0) {
        const int64_t q = int64_t{in.queries[i]} << kQueryShift;
        map->Reserve(static_cast<int64_t>(out->nodes.size()) + deg);
        for (int64_t k = 0; k < deg; ++k) {
          const int64_t u = merged_row ? merged[static_cast<size_t>(k)] : g.neighbor(begin + k);
          const int64_t at = static_cast<int64_t>(out->nodes.size());
          const int64_t j = map->FindOrInsert(q | u, at);
          if (j == at) {
            out->queries.push_back(in.queries[i]);
            out->nodes.push_back(u);
            out->mass.push_back(share);
          } else {
            out->mass[static_cast<size_t>(j)] += share;
          }
        }
      }
    }
    out->pushed.push_back(push ? 1 : 0);
    out->degrees.push_back(deg);
    out->done = i + 1;
  }
  return Status::OK();
}

}  // namespace fanout::sampler
