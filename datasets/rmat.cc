#include "datasets/rmat.h"

#include <string>
#include <type_traits>

#include "common/cpu.h"
#include "common/random.h"

namespace fanout::datasets {
namespace {

Status CheckOptions(const RmatOptions& o) {
  if (o.scale < 1 || o.scale > 40)
    return Status::InvalidArgument("R-MAT scale " + std::to_string(o.scale) +
                                   " is outside [1, 40]");
  if (o.edge_factor < 0)
    return Status::InvalidArgument("R-MAT edge factor " + std::to_string(o.edge_factor) +
                                   " is negative");
  double d = 1.0 - o.a - o.b - o.c;
  if (o.a < 0 || o.b < 0 || o.c < 0 || d < -1e-12)
    return Status::InvalidArgument("R-MAT probabilities a=" + std::to_string(o.a) +
                                   " b=" + std::to_string(o.b) + " c=" + std::to_string(o.c) +
                                   " must be >= 0 and sum to at most 1");
  return Status::OK();
}

// Generates edges [0, E) in order; fn(e, src, dst), which may return false
// to stop.
template <typename Fn>
void Generate(const RmatOptions& o, Fn&& fn) {
  const int64_t n = int64_t{1} << o.scale;
  const int64_t e_total = o.edge_factor * n;
  const double ab = o.a + o.b, abc = o.a + o.b + o.c;
  SplitMix64 rng(o.seed);
  for (int64_t e = 0; e < e_total; ++e) {
    int64_t src = 0, dst = 0;
    for (int level = 0; level < o.scale; ++level) {
      double u = rng.NextDouble();
      // Branch-free quadrant choice (the comparisons are unpredictable):
      // src bit = u >= a+b; dst bit flips at a, a+b and a+b+c.
      int64_t sbit = u >= ab;
      int64_t dbit = static_cast<int64_t>(u >= o.a) ^ static_cast<int64_t>(u >= ab) ^
                     static_cast<int64_t>(u >= abc);
      src = (src << 1) | sbit;
      dst = (dst << 1) | dbit;
    }
    if constexpr (std::is_same_v<decltype(fn(e, src, dst)), bool>) {
      if (!fn(e, src, dst)) return;
    } else {
      fn(e, src, dst);
    }
  }
}

}  // namespace

Status ForEachRmatEdge(const RmatOptions& options,
                       const std::function<void(int64_t, int64_t)>& fn) {
  FANOUT_RETURN_IF_ERROR(CheckOptions(options));
  Generate(options, [&](int64_t, int64_t s, int64_t d) { fn(s, d); });
  return Status::OK();
}

Status ForEachRmatEdgeWhile(const RmatOptions& options,
                            const std::function<bool(int64_t, int64_t)>& fn) {
  FANOUT_RETURN_IF_ERROR(CheckOptions(options));
  Generate(options, [&](int64_t, int64_t s, int64_t d) { return fn(s, d); });
  return Status::OK();
}

Status GenerateRmat(const RmatOptions& options, sampler::CsrArrays* out,
                    const ProgressFn& progress) {
  FANOUT_RETURN_IF_ERROR(CheckOptions(options));
  const int64_t n = int64_t{1} << options.scale;
  const int64_t e_total = options.edge_factor * n;
  constexpr int64_t kReportEvery = int64_t{1} << 22;
  // Two passes over the same stream (count, then fill) instead of holding the
  // edge list: the stream costs less than 16 bytes per edge of memory traffic.
  out->indptr.clear();
  ReserveHuge(&out->indptr, n + 1);
  out->indptr.assign(n + 1, 0);
  out->edge_ids.clear();
  out->weights.clear();
  int64_t* indptr = out->indptr.data();
  Generate(options, [&](int64_t e, int64_t s, int64_t) {
    indptr[s + 1]++;
    if (progress && (e + 1) % kReportEvery == 0) progress((e + 1) / 2, e_total);
  });
  for (int64_t v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
  out->indices.clear();
  ReserveHuge(&out->indices, e_total);
  out->indices.resize(e_total);
  std::vector<int64_t> fill(out->indptr.begin(), out->indptr.end() - 1);
  int64_t* indices = out->indices.data();
  Generate(options, [&](int64_t e, int64_t s, int64_t d) {
    indices[fill[s]++] = d;
    if (progress && (e + 1) % kReportEvery == 0) progress(e_total / 2 + (e + 1) / 2, e_total);
  });
  if (progress) progress(e_total, e_total);
  return Status::OK();
}

uint64_t CsrChecksum(const sampler::CsrArrays& csr) {
  uint64_t c = 0;
  for (int64_t v : csr.indices) c = c * 1000003ULL + static_cast<uint64_t>(v);
  return c;
}

}  // namespace fanout::datasets
