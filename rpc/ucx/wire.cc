#include "rpc/ucx/wire.h"

#include <cstring>
#include <string_view>

namespace fanout::rpc::wire {

Status DecodeRequest(const void* header, size_t header_length, size_t data_length,
                     int64_t max_request_bytes, RequestHeader* hdr, bool* malformed) {
  *malformed = true;
  const char* h = static_cast<const char*>(header);
  // The header's size follows its version (read first): 40 bytes for
  // version 1, sizeof(RequestHeader) for version 2; then the ticket.
  uint16_t version = 0;
  if (header_length >= 6) std::memcpy(&version, h + 4, 2);
  const size_t fixed = version == 1 ? kVersion1HeaderBytes : sizeof(RequestHeader);
  size_t expect = fixed;
  *hdr = RequestHeader();
  if (header_length >= fixed) {
    std::memcpy(hdr, h, fixed);
    if (hdr->flags & kTicket) expect += kTicketBytes;
  }
  if (header_length >= 16 && header_length < fixed) std::memcpy(&hdr->request_id, h + 8, 8);
  if (header_length >= fixed && (hdr->flags & kRetiredPlace)) {
    return Status::NotSupported(
        "this server never writes into memory a request names (placement was removed): on one "
        "host, map its "
        "export (PartitionInfo.local_socket) instead; elsewhere, receive the reply");
  }
  if (header_length != expect)
    return Status::InvalidArgument("malformed data-plane request: header of " +
                                   std::to_string(header_length) + " bytes, expected " +
                                   std::to_string(expect));
  if (hdr->magic != kMagic || (hdr->version != kVersion && hdr->version != 1))
    return Status::InvalidArgument("malformed data-plane request: bad magic or version " +
                                   std::to_string(hdr->version));
  if (hdr->method > static_cast<uint8_t>(DataMethod::kSample))
    return Status::InvalidArgument("unknown data-plane method " + std::to_string(hdr->method));
  if (data_length % 8 != 0)
    return Status::InvalidArgument("node ids: payload of " + std::to_string(data_length) +
                                   " bytes is not a whole number of 8-byte values");
  if (data_length > static_cast<uint64_t>(max_request_bytes))
    return Status::InvalidArgument("request of " + std::to_string(data_length) +
                                   " bytes is over the limit of " +
                                   std::to_string(max_request_bytes));
  *malformed = false;
  return Status::OK();
}

}  // namespace fanout::rpc::wire
