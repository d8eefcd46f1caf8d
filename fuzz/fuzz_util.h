// Helpers the fuzz harnesses share.
#ifndef FANOUT_FUZZ_FUZZ_UTIL_H_
#define FANOUT_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstring>
#include <string>

namespace fanout::fuzz {

// The T at byte `at` of `s` (native byte order), or T{} where `s` ends first:
// a harness reads the fields an input claims without trusting its length.
template <typename T>
T Get(const std::string& s, size_t at) {
  T v{};
  if (at + sizeof(T) <= s.size()) std::memcpy(&v, s.data() + at, sizeof(T));
  return v;
}

}  // namespace fanout::fuzz

#endif  // FANOUT_FUZZ_FUZZ_UTIL_H_
