// Comparing secrets (auth tokens, data-plane tickets).
#ifndef FANOUT_COMMON_SECRET_H_
#define FANOUT_COMMON_SECRET_H_

#include <string_view>

namespace fanout {

// Whether `given` equals the non-empty `secret`, in time that depends only on
// the lengths, not on where the texts differ. False when `secret` is empty.
inline bool SameSecret(std::string_view given, std::string_view secret) {
  if (secret.empty()) return false;
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ secret[i % secret.size()]);
  return diff == 0;
}

}  // namespace fanout

#endif  // FANOUT_COMMON_SECRET_H_
