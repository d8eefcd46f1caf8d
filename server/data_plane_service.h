// The UCX data plane's request handler: the same computation as the Thrift
// handler (PartitionService), writing replies into the data plane's pooled
// buffers. One per data-plane progress thread. Internal to server/.
#ifndef FANOUT_SERVER_DATA_PLANE_SERVICE_H_
#define FANOUT_SERVER_DATA_PLANE_SERVICE_H_

#include "rpc/data_plane_server.h"
#include "server/service.h"

namespace fanout::server {

class DataPlaneService : public rpc::DataPlaneHandler {
 public:
  explicit DataPlaneService(const ServerState* state) : svc_(state) {}
  Status Handle(const rpc::DataRequest& request, rpc::ReplyWriter* reply) override;

 private:
  PartitionService svc_;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_DATA_PLANE_SERVICE_H_
