#include "common/byte_size.h"

#include <cctype>
#include <cmath>
#include <exception>

namespace fanout {

Status ParseByteSize(const std::string& text, int64_t* bytes) {
  const std::string bad =
      "memory size '" + text + "' is not a size (expected e.g. 4G, 512M, 1.5GiB or bytes)";
  size_t used = 0;
  double v;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return Status::InvalidArgument(bad);
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "IB" || (unit.size() == 3 && unit.substr(1) == "IB"))
    unit = unit.substr(0, unit.size() - 2);
  if (unit.size() == 2 && unit[1] == 'B') unit.pop_back();
  double scale;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return Status::InvalidArgument(bad);
  if (!(v > 0) || !std::isfinite(v) || v * scale >= 9.0e18)
    return Status::InvalidArgument("memory size '" + text + "' must be positive and below 8 EiB");
  *bytes = static_cast<int64_t>(v * scale);
  return Status::OK();
}

}  // namespace fanout
