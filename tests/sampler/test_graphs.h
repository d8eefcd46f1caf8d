// Small random graphs for sampler tests.
#ifndef FANOUT_TESTS_SAMPLER_TEST_GRAPHS_H_
#define FANOUT_TESTS_SAMPLER_TEST_GRAPHS_H_

#include <cstdint>
#include <vector>

#include "common/random.h"
#include "sampler/csr_graph.h"

namespace fanout::sampler::testing {

// A random graph whose degrees range over [0, max_degree] (some rows empty,
// some large); neighbors may repeat (multi-edges) like real edge lists. With
// `weighted`, about a quarter of the weights are 0; with `edge_ids`, edge ids
// are a shuffled range so they differ from CSR positions.
inline CsrArrays RandomGraph(int64_t n, int64_t max_degree, uint64_t seed, bool weighted = false,
                             bool edge_ids = false) {
  SplitMix64 rng(seed);
  CsrArrays g;
  g.indptr.assign(1, 0);
  for (int64_t v = 0; v < n; ++v) {
    int64_t d = static_cast<int64_t>(DrawBelow(rng.Next(), max_degree + 1));
    if (v % 7 == 0) d = 0;
    for (int64_t j = 0; j < d; ++j) {
      g.indices.push_back(static_cast<int64_t>(DrawBelow(rng.Next(), n)));
      if (weighted) {
        uint64_t r = DrawBelow(rng.Next(), 4);
        g.weights.push_back(r == 0 ? 0.0f
                                   : static_cast<float>(DrawBelow(rng.Next(), 100) + 1) / 10.0f);
      }
    }
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
  }
  if (edge_ids) {
    int64_t e = g.num_edges();
    g.edge_ids.resize(e);
    for (int64_t i = 0; i < e; ++i) g.edge_ids[i] = 1000000 + i;
    for (int64_t i = e - 1; i > 0; --i)
      std::swap(g.edge_ids[i], g.edge_ids[static_cast<int64_t>(DrawBelow(rng.Next(), i + 1))]);
  }
  return g;
}

}  // namespace fanout::sampler::testing

#endif  // FANOUT_TESTS_SAMPLER_TEST_GRAPHS_H_
