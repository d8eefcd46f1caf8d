// A data-plane request (rpc/data_plane.h): the method, its ids and, for
// kSample, the hop's parameters; and the ticket that authenticates it.
#ifndef FANOUT_RPC_DATA_REQUEST_H_
#define FANOUT_RPC_DATA_REQUEST_H_

#include <cstddef>
#include <cstdint>

#include "common/array_view.h"
#include "rpc/rpc_client.h"

namespace fanout::rpc {

enum class DataMethod : uint8_t { kPing = 0, kFeatures = 1, kLabels = 2, kSample = 3 };

// A kSample reply is one payload: rpc/codec.h's EncodeSampleReply layout
// (with edge weights for a LABOR hop, call.labor). A walk step (call.walk_keys
// non-empty) sends the node ids followed by the keys.

// One request as the server's handler sees it. `ids` points into the
// request's receive buffer and is valid during Handle() only.
struct DataRequest {
  DataMethod method = DataMethod::kPing;
  // The tenant its ticket names (DataPlaneServerOptions::ticket_tenant);
  // -1 where the server has no tenants.
  int tenant = -1;
  ArrayView<const int64_t> ids;
  // kSample's parameters; call.version (a live partition's version to read
  // at, < 0 the newest) is every method's.
  SampleCall call;
};

// Bytes of a data-plane ticket (DataPlaneServerOptions::ticket).
constexpr size_t kDataPlaneTicketBytes = 32;

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_DATA_REQUEST_H_
