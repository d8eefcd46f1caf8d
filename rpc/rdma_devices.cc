// ListRdmaDevices: the host's RDMA devices as libibverbs sees them, for the
// admin endpoint and fanout-ctl. Built with libibverbs where it is found.
#include "rpc/rdma_devices.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#ifdef FANOUT_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace fanout::rpc {

#ifdef FANOUT_HAVE_IBVERBS
namespace {

const char* PortStateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN:
      return "down";
    case IBV_PORT_INIT:
      return "init";
    case IBV_PORT_ARMED:
      return "armed";
    case IBV_PORT_ACTIVE:
      return "active";
    case IBV_PORT_ACTIVE_DEFER:
      return "active_defer";
    default:
      return "nop";
  }
}

// Lanes x per-lane Gb/s, from the IB width and speed codes.
double RateGbps(uint8_t width, uint8_t speed) {
  double lanes = width == 1    ? 1
                 : width == 2  ? 4
                 : width == 4  ? 8
                 : width == 8  ? 12
                 : width == 16 ? 2
                               : 0;
  double per = 0;
  switch (speed) {
    case 1:
      per = 2.5;
      break;
    case 2:
      per = 5;
      break;
    case 4:
      per = 10;
      break;
    case 8:
      per = 10.3125;
      break;
    case 16:
      per = 14.0625;
      break;
    case 32:
      per = 25.78125;
      break;
    case 64:
      per = 53.125;
      break;
    case 128:
      per = 106.25;
      break;
    default:
      per = 0;
  }
  return lanes * per;
}

}  // namespace

std::vector<RdmaDevice> ListRdmaDevices(std::string* error) {
  std::vector<RdmaDevice> out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    if (error)
      *error = errno == ENOSYS ? std::string("this kernel has no RDMA support (libibverbs: ENOSYS)")
                               : std::string("ibv_get_device_list failed: ") + std::strerror(errno);
    return out;
  }
  for (int i = 0; i < n; ++i) {
    RdmaDevice d;
    d.name = ibv_get_device_name(list[i]);
    char guid[32];
    std::snprintf(guid, sizeof guid, "%016llx",
                  static_cast<unsigned long long>(__builtin_bswap64(ibv_get_device_guid(list[i]))));
    d.node_guid = guid;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx != nullptr) {
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) {
        for (int p = 1; p <= attr.phys_port_cnt; ++p) {
          ibv_port_attr pa{};
          if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
          RdmaDevice::Port port;
          port.port = p;
          port.state = PortStateName(pa.state);
          port.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
          port.rate_gbps = RateGbps(pa.active_width, pa.active_speed);
          d.ports.push_back(port);
        }
      }
      // dma-buf registration: with a bad fd a kernel and device that support
      // it fail with EBADF, the others with EOPNOTSUPP.
      if (ibv_pd* pd = ibv_alloc_pd(ctx)) {
        errno = 0;
        ibv_mr* mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
        if (mr != nullptr) {
          ibv_dereg_mr(mr);
          d.dmabuf = true;
        } else {
          d.dmabuf = errno != EOPNOTSUPP && errno != ENOSYS && errno != EPROTONOSUPPORT;
        }
        ibv_dealloc_pd(pd);
      }
      ibv_close_device(ctx);
    }
    out.push_back(std::move(d));
  }
  ibv_free_device_list(list);
  return out;
}
#else
std::vector<RdmaDevice> ListRdmaDevices(std::string* error) {
  if (error) *error = "built without libibverbs";
  return {};
}
#endif

}  // namespace fanout::rpc
