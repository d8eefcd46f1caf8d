#include "sampler/detail/sample_row.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "common/random.h"

namespace fanout::sampler::detail {
namespace {

// Counts the edges of positive weight in a row and sums their weights.
void PositiveWeights(const float* w, int64_t degree, int64_t* count, double* total) {
  int64_t c = 0;
  double t = 0;
  for (int64_t i = 0; i < degree; ++i) {
    if (w[i] > 0.0f) {  // also false for NaN
      ++c;
      t += w[i];
    }
  }
  *count = c;
  *total = t;
}

}  // namespace

void FloydSample(int64_t degree, int64_t k, uint64_t key, int64_t* pos, RowScratch* scratch) {
  int64_t n = 0;
  if (k <= 32) {
    // `seen` has bit (p mod 64) set for every position p taken so far: a draw
    // whose bit is clear is new without scanning pos (most draws of a long row).
    uint64_t seen = 0;
    for (int64_t j = degree - k; j < degree; ++j) {
      int64_t t = static_cast<int64_t>(DrawBelow(Draw(key, j), j + 1));
      if (seen & (uint64_t{1} << (t & 63))) {
        for (int64_t q = 0; q < n; ++q) {
          if (pos[q] == t) {
            t = j;  // j cannot be chosen yet: it is above every earlier draw range
            break;
          }
        }
      }
      seen |= uint64_t{1} << (t & 63);
      pos[n++] = t;
    }
    return;
  }
  std::vector<uint64_t>& bits = scratch->bits;
  size_t words = static_cast<size_t>((degree + 63) / 64);
  if (bits.size() < words) bits.resize(words, 0);
  for (int64_t j = degree - k; j < degree; ++j) {
    int64_t t = static_cast<int64_t>(DrawBelow(Draw(key, j), j + 1));
    if (bits[t >> 6] & (1ULL << (t & 63))) t = j;
    bits[t >> 6] |= 1ULL << (t & 63);
    pos[n++] = t;
  }
  for (int64_t q = 0; q < n; ++q) bits[pos[q] >> 6] &= ~(1ULL << (pos[q] & 63));
}

int64_t RowSampleCount(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                       const SamplingOptions& options) {
  if (!options.weighted) {
    if (fanout < 0) return degree;
    if (options.replace) return degree > 0 ? fanout : 0;
    return std::min(fanout, degree);
  }
  int64_t positive;
  double total;
  PositiveWeights(graph.weights() + start, degree, &positive, &total);
  if (fanout < 0) return positive;
  if (options.replace) return total > 0 ? fanout : 0;
  return std::min(fanout, positive);
}

void SampleRowPositions(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                        int64_t count, uint64_t key, const SamplingOptions& options, int64_t* pos,
                        RowScratch* scratch) {
  assert(count == RowSampleCount(graph, start, degree, fanout, options));  // REQUIRES
  if (count == 0) return;
  if (!options.weighted) {
    if (fanout < 0 || (!options.replace && count == degree)) {
      for (int64_t i = 0; i < count; ++i) pos[i] = i;
    } else if (options.replace) {
      for (int64_t j = 0; j < count; ++j)
        pos[j] = static_cast<int64_t>(DrawBelow(Draw(key, j), static_cast<uint64_t>(degree)));
    } else {
      FloydSample(degree, count, key, pos, scratch);
    }
    return;
  }

  const float* w = graph.weights() + start;
  if (fanout < 0) {  // every edge of positive weight, in CSR order
    int64_t n = 0;
    for (int64_t i = 0; i < degree; ++i)
      if (w[i] > 0.0f) pos[n++] = i;
    return;
  }
  if (options.replace) {
    // Inverse CDF: draw x in [0, total) and take the first edge whose
    // cumulative weight exceeds x. A zero-weight edge never exceeds the
    // cumulative weight of the edge before it, so it is never taken.
    std::vector<double>& cdf = scratch->cdf;
    cdf.resize(static_cast<size_t>(degree));
    double acc = 0;
    for (int64_t i = 0; i < degree; ++i) {
      if (w[i] > 0.0f) acc += w[i];
      cdf[i] = acc;
    }
    for (int64_t j = 0; j < count; ++j) {
      double x = static_cast<double>(Draw(key, j) >> 11) * 0x1.0p-53 * acc;
      auto it = std::upper_bound(cdf.begin(), cdf.begin() + degree, x);
      int64_t i = std::min<int64_t>(it - cdf.begin(), degree - 1);
      while (!(w[i] > 0.0f)) --i;  // guards rounding at the top end
      pos[j] = i;
    }
    return;
  }
  // Without replacement: Efraimidis-Spirakis. Each positive edge gets the key
  // -log(u)/w (exponential with rate w); the `count` smallest keys win, which
  // draws edges one after another with probability proportional to weight.
  std::vector<std::pair<double, int64_t>>& keys = scratch->keys;
  keys.clear();
  for (int64_t i = 0; i < degree; ++i) {
    if (w[i] > 0.0f) keys.emplace_back(-std::log(DrawOpenUnit(Draw(key, i))) / w[i], i);
  }
  if (static_cast<int64_t>(keys.size()) > count) {
    std::nth_element(keys.begin(), keys.begin() + count, keys.end());
    keys.resize(static_cast<size_t>(count));
  }
  std::sort(keys.begin(), keys.end());
  for (int64_t j = 0; j < count; ++j) pos[j] = keys[j].second;
}

}  // namespace fanout::sampler::detail
