// Counter-based randomness. Every random decision in Fanout is a pure function
// of explicit inputs (request seed, hop, node id, draw index), never of a
// global or per-thread generator, so results do not depend on thread count,
// batching, seed order or which server answered.
#ifndef FANOUT_COMMON_RANDOM_H_
#define FANOUT_COMMON_RANDOM_H_

#include <cstdint>

namespace fanout {

inline constexpr uint64_t kGolden64 = 0x9e3779b97f4a7c15ULL;

// The splitmix64 output function (a bijective 64-bit mixer).
inline constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Sequential splitmix64 stream (used by the R-MAT generator and benchmarks).
class SplitMix64 {
 public:
  explicit constexpr SplitMix64(uint64_t state) : state_(state) {}
  constexpr uint64_t Next() { return Mix64(state_ += kGolden64); }
  // Uniform double in [0, 1) with 53 random bits.
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// The key of one node's sample within one hop of one request.
// NodeKey = NodeKeyIn(HopKey(request_seed, hop), node): loops over a hop's
// nodes compute the hop's part once.
inline constexpr uint64_t HopKey(uint64_t request_seed, uint64_t hop) {
  return Mix64(Mix64(request_seed + kGolden64) ^ (hop * 0xd1b54a32d192ed03ULL));
}
inline constexpr uint64_t NodeKeyIn(uint64_t hop_key, uint64_t node) {
  return Mix64(hop_key ^ (node + 0x8cb92ba72f3d8dd7ULL));
}
inline constexpr uint64_t NodeKey(uint64_t request_seed, uint64_t hop, uint64_t node) {
  return NodeKeyIn(HopKey(request_seed, hop), node);
}

// The j-th 64-bit draw under `key`.
inline constexpr uint64_t Draw(uint64_t key, uint64_t j) {
  return Mix64(key + (j + 1) * kGolden64);
}

// Maps a 64-bit draw to [0, n) (Lemire's multiply-shift; bias below n / 2^64).
inline uint64_t DrawBelow(uint64_t draw, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(draw) * n) >> 64);
}

// Maps a 64-bit draw to a double in (0, 1]: never 0, so log() is finite.
inline double DrawOpenUnit(uint64_t draw) {
  return (static_cast<double>(draw >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace fanout

#endif  // FANOUT_COMMON_RANDOM_H_
