// The UCX data-plane server's executor pool (DataPlaneServerOptions::executors,
// servers with tenants): a progress thread hands a request to the executors'
// queue (one queue per tenant, served round robin across tenants), an executor
// computes it with a handler of its own, and the progress thread sends the
// result it hands back (its done list, then ucp_worker_signal).
#include "rpc/ucx/detail/ucx_server_internal.h"

namespace fanout::rpc {
namespace ucx_detail {

void Thread::Offload(Endpoint* ep, std::unique_ptr<Pending> p) {
  if (!p->bad.ok()) {
    Answer(ep, std::move(p));  // an error reply: nothing to compute
    return;
  }
  Task task;
  task.ep = ep;
  task.buf = TakeBuffer();
  const int tenant = p->tenant;
  task.p = std::move(p);
  ++ep->offloaded;
  {
    std::lock_guard<std::mutex> lock(server->exec_mu);
    server->exec_queue[tenant].push_back(std::move(task));
  }
  server->exec_cv.notify_one();
}

// The executors' results for this thread's endpoints: sent (or dropped where
// the endpoint failed meanwhile).
bool Thread::Deliver() {
  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (done.empty()) return false;
    tasks.swap(done);
  }
  for (Task& task : tasks) {
    Endpoint* ep = task.ep;
    --ep->offloaded;
    ep->held_bytes -= static_cast<int64_t>(task.p->ids.size() * 8);
    if (!task.status.ok()) {
      GiveBuffer(std::move(task.buf));
      task.buf.reset();
    }
    if (ep->failed) {
      GiveBuffer(std::move(task.buf));
      continue;
    }
    SendReply(ep, task.p->hdr.request_id, task.status, std::move(task.buf),
              (task.p->hdr.flags & wire::kForceRndv) != 0);
  }
  return true;
}

}  // namespace ucx_detail

using ucx_detail::Task;
using ucx_detail::Thread;

// An executor: the next task, round robin across the tenants with tasks
// queued, computed with this executor's handler; the result goes back to
// the endpoint's progress thread.
void DataPlaneServer::Impl::Execute() {
  std::unique_ptr<DataPlaneHandler> handler = make_handler();
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(exec_mu);
      exec_cv.wait(lock, [&] { return exec_stop || !exec_queue.empty(); });
      if (exec_stop) return;  // what is queued goes with the server (Stop)
      auto it = exec_queue.upper_bound(exec_last);
      if (it == exec_queue.end()) it = exec_queue.begin();
      exec_last = it->first;
      task = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) exec_queue.erase(it);
    }
    task.status = Compute(handler.get(), *task.p, task.buf.get());
    Thread* t = task.ep->t;
    {
      std::lock_guard<std::mutex> lock(t->mu);
      t->done.push_back(std::move(task));
    }
    ucp_worker_signal(t->worker.get());
  }
}

}  // namespace fanout::rpc
