#include "sampler/detail/sample_row.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>

#include "common/random.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start from an "undefined" register value that
// it then reports as maybe uninitialized (a false positive in its headers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// High 64 bits of the unsigned 64x64-bit products a * b, per lane, from
// 32-bit halves (AVX-512 has no 64-bit high multiply).
__attribute__((target("avx512f,avx512dq"))) inline __m512i MulHi64(__m512i a, __m512i b) {
  const __m512i lo32 = _mm512_set1_epi64(0xffffffffLL);
  const __m512i a_hi = _mm512_srli_epi64(a, 32), b_hi = _mm512_srli_epi64(b, 32);
  const __m512i ll = _mm512_mul_epu32(a, b);        // a_lo * b_lo
  const __m512i lh = _mm512_mul_epu32(a, b_hi);     // a_lo * b_hi
  const __m512i hl = _mm512_mul_epu32(a_hi, b);     // a_hi * b_lo
  const __m512i hh = _mm512_mul_epu32(a_hi, b_hi);  // a_hi * b_hi
  const __m512i mid =
      _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, lo32)),
                       _mm512_and_si512(hl, lo32));  // below 3 * 2^32: no carry lost
  return _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(mid, 32)),
                          _mm512_add_epi64(_mm512_srli_epi64(lh, 32), _mm512_srli_epi64(hl, 32)));
}

__attribute__((target("avx512f,avx512dq"))) void DrawsAvx512(uint64_t key, int64_t j0,
                                                             int64_t count, int64_t* t) {
  const __m512i c1 = _mm512_set1_epi64(static_cast<int64_t>(0xbf58476d1ce4e5b9ULL));
  const __m512i c2 = _mm512_set1_epi64(static_cast<int64_t>(0x94d049bb133111ebULL));
  const __m512i golden = _mm512_set1_epi64(static_cast<int64_t>(kGolden64));
  const __m512i eight = _mm512_set1_epi64(8);
  const __m512i step = _mm512_set1_epi64(static_cast<int64_t>(8 * kGolden64));
  // Lane l of the first group: position j = j0 + l, n = j + 1, the draw's
  // input key + n * golden (Draw()).
  __m512i n = _mm512_add_epi64(_mm512_set1_epi64(j0 + 1), _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
  __m512i z0 =
      _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(key)), _mm512_mullo_epi64(n, golden));
  for (int64_t i = 0; i < count; i += 8) {
    __m512i z = _mm512_mullo_epi64(_mm512_xor_si512(z0, _mm512_srli_epi64(z0, 30)), c1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), c2);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));  // Mix64
    _mm512_storeu_si512(t + i, MulHi64(z, n));          // DrawBelow(draw, n)
    n = _mm512_add_epi64(n, eight);
    z0 = _mm512_add_epi64(z0, step);
  }
}
#pragma GCC diagnostic pop
#endif

std::atomic<bool> g_avx512_draws_off{false};

}  // namespace

void SetFloydDrawsAvx512Off(bool off) { g_avx512_draws_off.store(off); }

bool HasFloydDrawsAvx512() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return has && !g_avx512_draws_off.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

bool FloydDrawsAvx512(uint64_t key, int64_t j0, int64_t count, int64_t* t) {
#if defined(__x86_64__)
  if (HasFloydDrawsAvx512()) {
    DrawsAvx512(key, j0, count, t);
    return true;
  }
#endif
  (void)key, (void)j0, (void)count, (void)t;
  return false;
}

void FloydSample(int64_t degree, int64_t k, uint64_t key, int64_t* pos, RowScratch* scratch) {
  if (k <= 32) {
    FloydSmall(degree, k, key, nullptr, 0, pos, [](int64_t) {});
    return;
  }
  int64_t n = 0;
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

int64_t WeightedRowSampleCount(const CsrGraph& graph, int64_t start, int64_t degree, int64_t fanout,
                               const SamplingOptions& options) {
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
