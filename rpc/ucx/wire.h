// The data plane's wire format: active-message ids and the fixed headers of
// requests and replies (little-endian, as the rest of the wire format).
// Internal to rpc/ (and its tests, which play rogue peers with it).
#ifndef FANOUT_RPC_UCX_WIRE_H_
#define FANOUT_RPC_UCX_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "rpc/data_request.h"

namespace fanout::rpc::wire {

constexpr uint16_t kAmRequest = 0x4651;  // client -> server
constexpr uint16_t kAmReply = 0x4652;    // server -> client
constexpr uint32_t kMagic = 0x314e4146;  // "FAN1"
// Request headers: version 2 adds `at_version` (a live partition's version
// to read at); a version-1 header (its first 40 bytes) is still taken and
// reads the newest. Replies are still version 1.
constexpr uint16_t kVersion = 2;
constexpr uint16_t kReplyVersion = 1;
constexpr size_t kVersion1HeaderBytes = 40;

// Request flags.
constexpr uint8_t kReplace = 1, kWeighted = 2, kEdgeIds = 4;
// Once "write the reply into the client's memory" (placement, removed in the
// third round): a request carrying it is answered NotSupported.
constexpr uint8_t kRetiredPlace = 8;
constexpr uint8_t kTicket =
    0x10;  // the header ends with the server's data-plane ticket (kTicketBytes)
// kSample variants: a LABOR-0 hop (the reply carries edge weights:
// rpc/codec.h), or a random-walk step, whose data is the node ids followed by
// as many walk keys (u64), so twice as many values as nodes.
constexpr uint8_t kLabor = 0x20, kWalk = 0x40;
constexpr uint8_t kForceRndv = 0x80;  // reply by rendezvous whatever its size (CUDA sinks)
// Requests whose ids are at least this many bytes are sent by rendezvous, so
// that the server fetches them when its memory budget has room; smaller ones
// come eagerly and are always taken (at most the per-endpoint queue of them).
// A larger eager request (not from Fanout's client) is taken only while the
// budget has room, else answered ResourceExhausted.
constexpr size_t kEagerRequestMaxBytes = 64 << 10;

// The active message's header; its data is the packed int64 node ids.
struct RequestHeader {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint8_t method = 0;  // DataMethod
  uint8_t flags = 0;
  uint64_t request_id = 0;
  int64_t fanout = -1;  // kSample
  uint64_t seed = 0;    // kSample
  int32_t hop = 0;      // kSample
  // How long the client waits for the reply (its call deadline, ms; 0 = not
  // said): a server that cannot take the request in time answers
  // ResourceExhausted well before then, instead of a reply nobody reads.
  uint32_t deadline_ms = 0;
  // Version 2: a live partition's version every hop, feature row and label
  // of this request is read at (as the Thrift calls' `version`: < 0 the
  // newest committed, 0 the base); a static partition takes only < 0.
  int64_t at_version = -1;
};
static_assert(sizeof(RequestHeader) == 48, "request header layout");

// A server that requires authentication (auth token, TLS) gives its
// authenticated RPC clients a ticket (PartitionInfo.data_plane_ticket); every
// data-plane request then carries it at the end of its header (kTicket).
constexpr size_t kTicketBytes = kDataPlaneTicketBytes;

// The reply's header. code 0: the data is the payload (payload_bytes of it);
// otherwise the data is the error message text.
struct ReplyHeader {
  uint32_t magic = kMagic;
  uint16_t version = kReplyVersion;
  uint16_t flags = 0;  // none defined
  uint64_t request_id = 0;
  int32_t code = 0;  // fanout::Status::Code
  uint32_t reserved2 = 0;
  uint64_t payload_bytes = 0;
};
static_assert(sizeof(ReplyHeader) == 32, "reply header layout");

// Decodes a request's active-message header (RequestHeader, then with
// kTicket the ticket) and checks it against the request's data length and
// the server's limit; the ticket (the header's last kTicketBytes) is the
// server's to judge (DataPlaneServerOptions::ticket_tenant). OK, or why the
// request is refused: *malformed says whether it was malformed (a placement
// request counts so, answered NotSupported). *hdr holds at least the request
// id (for the refusal) whenever the header has 16 bytes.
Status DecodeRequest(const void* header, size_t header_length, size_t data_length,
                     int64_t max_request_bytes, RequestHeader* hdr, bool* malformed);

}  // namespace fanout::rpc::wire

#endif  // FANOUT_RPC_UCX_WIRE_H_
