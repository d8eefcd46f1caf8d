#include "common/id_range.h"

#include <string>

namespace fanout {

Status IdOutOfRange(int64_t id, size_t position, int64_t lo, int64_t hi, const IdRangeCheck& how) {
  std::string msg = std::string(how.what) + " " + std::to_string(id);
  if (how.position) msg += " (position " + std::to_string(position) + ")";
  msg += " is outside " + std::string(how.range) + "[" + std::to_string(lo) + ", " +
         std::to_string(hi) + ")";
  return Status::InvalidArgument(std::move(msg));
}

}  // namespace fanout
