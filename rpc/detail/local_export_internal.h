// Internals shared by the same-host export's wire codecs, server side and
// client side (rpc/local_export*.cc). Not a public header.
#ifndef FANOUT_RPC_DETAIL_LOCAL_EXPORT_INTERNAL_H_
#define FANOUT_RPC_DETAIL_LOCAL_EXPORT_INTERNAL_H_

#include <fcntl.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace fanout::rpc::detail {

constexpr uint32_t kLocalVersion = 2;  // 2: compact topology, the disk tier's file and hot set
constexpr uint64_t kPage = 4096;
constexpr int kSeals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
// Largest message either side reads: a layout record is well under this.
constexpr size_t kMaxMessageBytes = 64 * 1024;

// "what: strerror(errno)".
std::string Errno(const char* what);
// This process's descriptor limit, in words (for errors that hit it).
std::string LimitText();

}  // namespace fanout::rpc::detail

#endif  // FANOUT_RPC_DETAIL_LOCAL_EXPORT_INTERNAL_H_
