// libFuzzer target: the data plane's request decoder (the active message's
// header and its data length, with and without a required ticket), as a
// rogue peer could send it; and the client's sample-reply decoder
// (rpc/codec.h) on the same bytes, as a rogue server could answer.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rpc/codec.h"
#include "rpc/ucx/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout::rpc;
  if (size < 9) return 0;
  uint64_t data_length;
  std::memcpy(&data_length, data, 8);
  const bool eids = data[8] & 1;  // the reply decoder's edge-ids flag
  wire::RequestHeader hdr;
  bool malformed = false;
  fanout::Status st = wire::DecodeRequest(data + 9, size - 9, data_length % (size_t{1} << 40),
                                          int64_t{256} << 20, &hdr, &malformed);
  // What it accepts is a whole header of its version (40 bytes for version 1,
  // which reads the newest; 48 for version 2), then the ticket where flagged.
  if (st.ok()) {
    const size_t fixed = hdr.version == 1 ? wire::kVersion1HeaderBytes : sizeof hdr;
    if (hdr.version != 1 && hdr.version != wire::kVersion) __builtin_trap();
    if (size - 9 != fixed + ((hdr.flags & wire::kTicket) ? wire::kTicketBytes : 0))
      __builtin_trap();
    if (hdr.version == 1 && hdr.at_version != -1) __builtin_trap();
  }
  // Nothing accepted asks the server to write anywhere but its own reply.
  if (st.ok() && (hdr.flags & wire::kRetiredPlace)) __builtin_trap();
  // The reply decoder: any node count, edge ids or not; what it accepts lies
  // inside the buffer and adds up.
  // (Copied into 8-byte-aligned memory, as the client's receive buffers are.)
  std::vector<uint64_t> aligned((size - 9 + 7) / 8);
  if (size > 9) std::memcpy(aligned.data(), data + 9, size - 9);
  SampleReplyView v;
  const size_t nodes = data_length % 4096;
  const bool weights = (data_length >> 12) & 1;  // a LABOR reply (edge weights last)
  if (DecodeSampleReply(reinterpret_cast<const char*>(aligned.data()), size - 9, nodes, eids, &v,
                        weights)
          .ok()) {
    int64_t sum = 0;
    for (size_t i = 0; i < nodes; ++i) sum += v.counts[i];
    if (sum != v.total || SampleReplyBytes(nodes, v.total, eids, weights) != size - 9)
      __builtin_trap();
    if (weights && v.total > 0 &&
        reinterpret_cast<const char*>(v.edge_weights + v.total) !=
            reinterpret_cast<const char*>(aligned.data()) + (size - 9))
      __builtin_trap();
  }
  return 0;
}
