// Fanout's version: the release (CMake's project VERSION) and, where it was
// built from a git checkout, the commit (".dirty" where tracked files had
// changes). Reported by --version on every binary, the server's /stats,
// /metrics (fanout_build_info) and PartitionInfo, and fanout.__version__.
#ifndef FANOUT_COMMON_VERSION_H_
#define FANOUT_COMMON_VERSION_H_

#include <string>

namespace fanout {

const char* Release();      // "0.4.0"
const char* BuildCommit();  // "8a3ec8d1f2ab" or "8a3ec8d1f2ab.dirty"; "" outside git

// "0.4.0+g8a3ec8d1f2ab" (PEP 440 local version), or "0.4.0" without a commit.
std::string VersionString();

// What `--version` prints: "<program> <VersionString()>".
std::string VersionLine(const char* program);

// True where two VersionString()s name different builds (release or commit).
inline bool VersionsDiffer(const std::string& a, const std::string& b) { return a != b; }

}  // namespace fanout

#endif  // FANOUT_COMMON_VERSION_H_
