#include "common/version.h"

namespace fanout {

std::string VersionString() {
  std::string v = Release();
  const std::string c = BuildCommit();
  if (!c.empty()) v += "+g" + c;
  return v;
}

std::string VersionLine(const char* program) {
  return std::string(program) + " " + VersionString();
}

}  // namespace fanout
