// The RDMA devices of this host (libibverbs), for operators: fanout-ctl and
// the servers' /stats show them.
#ifndef FANOUT_RPC_RDMA_DEVICES_H_
#define FANOUT_RPC_RDMA_DEVICES_H_

#include <string>
#include <vector>

namespace fanout::rpc {

// The RDMA devices of this host, read with libibverbs, for operators.
struct RdmaDevice {
  std::string name;
  std::string node_guid;
  struct Port {
    int port = 0;
    std::string state;       // "active", "down", ...
    std::string link_layer;  // "InfiniBand", "Ethernet"
    double rate_gbps = 0;    // from active width x speed
  };
  std::vector<Port> ports;
  bool dmabuf = false;  // dma-buf memory registration possible (GPUDirect RDMA without peermem)
};
// Devices found (empty where there are none); `error` set where libibverbs
// could not be used (e.g. a build without it).
std::vector<RdmaDevice> ListRdmaDevices(std::string* error);

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_RDMA_DEVICES_H_
