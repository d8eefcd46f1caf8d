// The data plane: bulk replies (feature rows, labels, sampled neighbor arrays)
// over UCX (UCP active messages) beside the Thrift control plane.
//
// A request is an active message whose header names the method and its
// parameters and whose data is the packed id list. A reply is an active
// message sent with the rendezvous protocol above a small size, so the client
// receives it with ucp_am_recv_data_nbx straight into memory it supplies
// (ReplySink): RDMA (InfiniBand/RoCE through UCX's verbs transport) between
// hosts, shared memory or tcp elsewhere. The server never writes into memory
// a request names: it sends its reply, and the client receives it (on one
// host clients read the server's sealed export instead: rpc/local_export.h).
// No UCX header appears here: builds without UCX compile the same API and
// every factory returns NotSupported.
//
// One concept per header, all included here:
//   rpc/data_request.h        the request (method, ids, hop parameters), the ticket size
//   rpc/reply_sink.h          where a reply lands in the client (fixed, scatter or grow)
//   rpc/data_plane_server.h   the server: listener, handler interface, options, stats
//   rpc/data_plane_channel.h  the client: UCX context, per-thread channel, what UCX offers
//   rpc/rdma_devices.h        the host's RDMA devices, for operators
#ifndef FANOUT_RPC_DATA_PLANE_H_
#define FANOUT_RPC_DATA_PLANE_H_

#include "rpc/data_plane_channel.h"
#include "rpc/data_plane_server.h"
#include "rpc/data_request.h"
#include "rpc/rdma_devices.h"
#include "rpc/reply_sink.h"

#endif  // FANOUT_RPC_DATA_PLANE_H_
