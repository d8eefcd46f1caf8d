// Small RAII and helper layer over UCP shared by the data-plane server and
// client. Internal to rpc/.
#ifndef FANOUT_RPC_UCX_UCX_COMMON_H_
#define FANOUT_RPC_UCX_UCX_COMMON_H_

#include <ucp/api/ucp.h>

#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace fanout::rpc::ucx {

// "what: UCX status text".
Status Error(const std::string& what, ucs_status_t status);

// A UCP context with active messages and wakeup (event fd) support, read from
// the UCX_* environment as UCX tools do.
// OK when UCX classifies [addr, addr + bytes) as memory of type `want`
// (ucp_mem_map + ucp_mem_query), else InvalidArgument saying what it found.
Status CheckMemoryType(ucp_context_h ctx, void* addr, size_t bytes, ucs_memory_type_t want);

class Context {
 public:
  static Status Create(Context* out);
  Context() = default;
  ~Context();
  Context(Context&& o) noexcept : ctx_(o.ctx_) { o.ctx_ = nullptr; }
  Context& operator=(Context&&) = delete;
  ucp_context_h get() const { return ctx_; }
  // Names of the memory types this UCX moves ("host", "cuda", ...).
  std::vector<std::string> MemoryTypes() const;
  bool HandlesCuda() const;

 private:
  ucp_context_h ctx_ = nullptr;
};

// A single-threaded UCP worker and its event fd.
class Worker {
 public:
  static Status Create(ucp_context_h ctx, Worker* out);
  Worker() = default;
  ~Worker();
  Worker(Worker&& o) noexcept : w_(o.w_), efd_(o.efd_) { o.w_ = nullptr; }
  Worker& operator=(Worker&&) = delete;
  ucp_worker_h get() const { return w_; }
  // Destroys this worker (and everything on it) and starts a fresh one.
  Status Recreate(ucp_context_h ctx);
  // Destroys this worker now: UCX purges its requests still in flight through
  // their callbacks, so what those reach must still be alive. Idempotent.
  void Destroy();
  // Sleeps on the event fd until UCX has events or timeout_ms passes (returns
  // at once when events are pending). REQUIRES: called outside callbacks.
  void WaitForEvents(int timeout_ms);

 private:
  ucp_worker_h w_ = nullptr;
  int efd_ = -1;
};

// Held around the calls that add or remove UCX async handlers (worker
// create/destroy, endpoint create/close) in this process. Debian's UCX 1.13.1
// aborts in __ucs_async_poll_missed (`handler->async == async`; fixed by
// openucx/ucx #9942) when a worker polls a missed event whose handler id (an
// fd) was removed and taken meanwhile by another thread's worker: set-up and
// teardown one at a time, each worker draining its missed events right after
// it removes handlers, leave no such window between Fanout's own workers.
std::mutex& LifecycleMutex();
// UCX workers this process has created (all threads), for tests.
int64_t WorkersCreated();
// Progresses `w` once, so that it handles its queued missed async events (of
// handlers just removed: skipped) before another worker can reuse their ids.
// REQUIRES: LifecycleMutex() held, outside callbacks.
void DrainMissedEvents(ucp_worker_h w);

// The transports of an endpoint's lanes ("cma/memory, tcp/lo", ...), from
// ucp_ep_print_info.
std::string EndpointTransports(ucp_ep_h ep);

// "host:port" of a socket address.
std::string SockaddrText(const struct sockaddr_storage& addr);

std::string Version();

}  // namespace fanout::rpc::ucx

#endif  // FANOUT_RPC_UCX_UCX_COMMON_H_
