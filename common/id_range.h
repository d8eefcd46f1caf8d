// The one range check for node ids, used wherever ids enter a component
// (sampler, server, client, caches, loader), so that every caller gets the
// same clear message naming the id, its position and the valid range:
//   "node 250 (position 1) is outside [100, 200)".
#ifndef FANOUT_COMMON_ID_RANGE_H_
#define FANOUT_COMMON_ID_RANGE_H_

#include <cstddef>
#include <cstdint>

#include "common/array_view.h"
#include "common/status.h"

namespace fanout {

struct IdRangeCheck {
  const char* what = "node";  // what an id is: "node", "seed"
  bool position = true;       // name the id's position in the list
  const char* range = "";     // words before the range, e.g. "this partition's range "
};

// Lookups (caches, sources) name the id and the range only.
inline constexpr IdRangeCheck kNoPosition{"node", false, ""};

// InvalidArgument naming ids[position] = id and [lo, hi).
Status IdOutOfRange(int64_t id, size_t position, int64_t lo, int64_t hi,
                    const IdRangeCheck& how = {});

// OK when every id is in [lo, hi); else the error for the first one that is not.
inline Status CheckIdsInRange(ArrayView<const int64_t> ids, int64_t lo, int64_t hi,
                              const IdRangeCheck& how = {}) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < lo || ids[i] >= hi) return IdOutOfRange(ids[i], i, lo, hi, how);
  return Status::OK();
}

}  // namespace fanout

#endif  // FANOUT_COMMON_ID_RANGE_H_
