// libFuzzer target: the data plane's request decoder (the active message's
// header and its data length, with and without a required ticket), as a
// rogue peer could send it.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rpc/ucx/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout::rpc;
  if (size < 9) return 0;
  uint64_t data_length;
  std::memcpy(&data_length, data, 8);
  const bool need_ticket = data[8] & 1;
  const std::string ticket = need_ticket ? std::string(kDataPlaneTicketBytes, 't') : "";
  wire::RequestHeader hdr;
  bool malformed = false;
  fanout::Status st = wire::DecodeRequest(data + 9, size - 9, data_length % (size_t{1} << 40),
                                          int64_t{256} << 20, ticket, &hdr, &malformed);
  // Nothing accepted asks the server to write anywhere but its own reply.
  if (st.ok() && (hdr.flags & wire::kRetiredPlace)) __builtin_trap();
  return 0;
}
