// DataPlaneServer over UCP: a listener on thread 0's worker hands each new
// connection to one of N progress threads (round robin); each thread owns a
// UCX worker, its endpoints, a handler and a pool of reply buffers, and serves
// its endpoints' requests in order, at most max_replies_per_endpoint in flight
// each. Nothing is shared between threads on the request path, unless
// requests are computed by executors (DataPlaneServerOptions::executors): the
// progress thread then hands a request to the executors' queue (per tenant,
// picked round robin) and sends the reply an executor hands back (its done
// list, then ucp_worker_signal).
//
// The file's parts: this one (the listener, Start, Stop, Stats),
// ucx_server_thread.cc (the progress threads), ucx_executors.cc (the executor
// pool); their shared state is rpc/ucx/detail/ucx_server_internal.h.
#include <arpa/inet.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rpc/ucx/detail/ucx_server_internal.h"

namespace fanout::rpc {

namespace ucx_detail {

// The process's listening TCP sockets bound to `port` (the UCX listener's:
// UCX does not hand out its descriptor), found by their local address.
std::vector<int> ListeningSocketsOn(int port) {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return fds;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        listening == 0)
      continue;
    sockaddr_storage a{};
    socklen_t alen = sizeof(a);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&a), &alen) != 0) continue;
    int p = -1;
    if (a.ss_family == AF_INET) p = ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
    if (a.ss_family == AF_INET6) p = ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
    if (p == port) fds.push_back(static_cast<int>(fd));
  }
  closedir(d);
  return fds;
}

}  // namespace ucx_detail

using namespace ucx_detail;  // NOLINT: this file is the server's own

void DataPlaneServer::Impl::OnConnection(ucp_conn_request_h request, void* arg) {
  auto* s = static_cast<Impl*>(arg);
  if (s->stop || s->endpoints_open.load() >= s->options.max_endpoints) {
    ++s->endpoints_rejected;
    ucp_listener_reject(s->listener, request);
    return;
  }
  ++s->endpoints_open;
  ++s->endpoints_total;
  Thread* t = s->threads[s->next_thread++ % s->threads.size()].get();
  {
    std::lock_guard<std::mutex> lock(t->mu);
    t->inbox.push_back(request);
  }
  ucp_worker_signal(t->worker.get());
}

bool DataPlaneBuilt() { return true; }

DataPlaneServer::DataPlaneServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status DataPlaneServer::Start(const DataPlaneServerOptions& options, HandlerFactory make_handler,
                              std::unique_ptr<DataPlaneServer>* out) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->make_handler = std::move(make_handler);
  FANOUT_RETURN_IF_ERROR(ucx::Context::Create(&impl->ctx));
  impl->memory_types = impl->ctx.MemoryTypes();
  const int n = std::max(1, options.threads);
  for (int i = 0; i < n; ++i) {
    auto t = std::make_unique<Thread>();
    t->server = impl.get();
    FANOUT_RETURN_IF_ERROR(ucx::Worker::Create(impl->ctx.get(), &t->worker));
    t->handler = impl->make_handler();
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = wire::kAmRequest;
    hp.cb = Thread::OnRequest;
    hp.arg = t.get();
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    ucs_status_t st = ucp_worker_set_am_recv_handler(t->worker.get(), &hp);
    if (st != UCS_OK) return ucx::Error("registering the data-plane request handler", st);
    impl->threads.push_back(std::move(t));
  }
  sockaddr_storage addr{};
  socklen_t addr_len;
  if (options.bind.find(':') != std::string::npos) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(options.port));
    if (inet_pton(AF_INET6, options.bind.c_str(), &a6->sin6_addr) != 1)
      return Status::InvalidArgument("data-plane bind address '" + options.bind +
                                     "' is not an IP address");
    addr_len = sizeof(sockaddr_in6);
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(options.port));
    if (inet_pton(AF_INET, options.bind.c_str(), &a4->sin_addr) != 1)
      return Status::InvalidArgument("data-plane bind address '" + options.bind +
                                     "' is not an IPv4 address");
    addr_len = sizeof(sockaddr_in);
  }
  ucp_listener_params_t lp{};
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  lp.sockaddr.addrlen = addr_len;
  lp.conn_handler.cb = Impl::OnConnection;
  lp.conn_handler.arg = impl.get();
  ucs_status_t st = ucp_listener_create(impl->threads[0]->worker.get(), &lp, &impl->listener);
  if (st != UCS_OK)
    return Status::IOError("cannot open the UCX data-plane listener on " + options.bind + ":" +
                           std::to_string(options.port) + ": " + ucs_status_string(st) +
                           " (UCX needs its tcp transport for connection setup: check UCX_TLS)");
  ucp_listener_attr_t la{};
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(impl->listener, &la);
  if (st != UCS_OK) {
    ucp_listener_destroy(impl->listener);
    return ucx::Error("querying the data-plane listener", st);
  }
  impl->port = la.sockaddr.ss_family == AF_INET6
                   ? ntohs(reinterpret_cast<sockaddr_in6*>(&la.sockaddr)->sin6_port)
                   : ntohs(reinterpret_cast<sockaddr_in*>(&la.sockaddr)->sin_port);
  impl->listen_fds = ListeningSocketsOn(impl->port);
  for (auto& t : impl->threads) {
    Thread* raw = t.get();
    t->thread = std::thread([raw] { raw->Run(); });
  }
  Impl* raw = impl.get();
  for (int i = 0; i < options.executors; ++i)
    impl->executors.emplace_back([raw] { raw->Execute(); });
  out->reset(new DataPlaneServer(std::move(impl)));
  return Status::OK();
}

DataPlaneServer::~DataPlaneServer() { Stop(); }

int DataPlaneServer::port() const { return impl_->port; }

void DataPlaneServer::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->stop = true;
  for (auto& t : impl_->threads) ucp_worker_signal(t->worker.get());
  for (auto& t : impl_->threads)
    if (t->thread.joinable()) t->thread.join();
  // The executors finish what they compute (a handler waiting for its turn
  // ends once the server's scheduler stops) and take nothing more; the
  // tasks still queued go before the endpoints their Pendings reach.
  {
    std::lock_guard<std::mutex> lock(impl_->exec_mu);
    impl_->exec_stop = true;
  }
  impl_->exec_cv.notify_all();
  for (auto& e : impl_->executors) e.join();
  impl_->exec_queue.clear();
  // UCX 1.13's TCP connection manager frees its listener while connections
  // it accepted still point at it: one whose request arrives between the
  // listener's end and the worker's reaches freed memory (the async thread
  // crashes the process; fixed in UCX 1.14, openucx/ucx #8243). So: no new
  // connection is accepted (the listening socket shut down: connects are
  // refused), and those accepted before are given time to arrive and be
  // refused (progressing the listener's worker) before the listener goes.
  for (int fd : impl_->listen_fds) (void)shutdown(fd, SHUT_RDWR);
  if (!impl_->threads.empty()) {
    ucp_worker_h w0 = impl_->threads[0]->worker.get();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 256 && ucp_worker_progress(w0) != 0; ++i) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Every progress thread has ended: the listener (on thread 0's worker) and
  // the connection requests it handed out are this thread's alone now, so
  // they are rejected and destroyed here, not from each progress thread.
  for (auto& t : impl_->threads) {
    std::lock_guard<std::mutex> lock(t->mu);
    for (ucp_conn_request_h r : t->inbox) {
      if (impl_->listener) ucp_listener_reject(impl_->listener, r);
      --impl_->endpoints_open;
    }
    t->inbox.clear();
  }
  if (impl_->listener) ucp_listener_destroy(impl_->listener);
  impl_->listener = nullptr;
  for (auto& t : impl_->threads) t->Teardown();
  // The threads (and their workers) go with impl_, before the context; Stats()
  // may still read them from the admin thread.
}

DataPlaneServerStats DataPlaneServer::Stats() const {
  DataPlaneServerStats s;
  const Impl& i = *impl_;
  s.ucx_version = ucx::Version();
  s.memory_types = i.memory_types;
  s.requests = i.requests;
  s.reply_bytes = i.reply_bytes;
  s.errors = i.errors;
  s.malformed = i.malformed;
  s.refused = i.refused;
  s.budget_waits = i.budget_waits;
  s.budget_refused = i.budget_refused;
  s.memory_releases = i.memory_releases;
  s.unauthenticated = i.unauthenticated;
  s.endpoints_open = i.endpoints_open;
  s.endpoints_total = i.endpoints_total;
  s.endpoints_rejected = i.endpoints_rejected;
  for (const auto& t : i.threads) {
    std::lock_guard<std::mutex> lock(t->mu);
    s.held_bytes += t->held_bytes;
    s.pooled_bytes += t->held_bytes;
    for (const auto& e : t->eps) {
      DataPlaneEndpointInfo info;
      info.peer = e->peer;
      info.transports = e->transports;
      info.requests = e->requests;
      info.reply_bytes = e->reply_bytes;
      info.held_bytes = e->held_bytes;
      s.held_bytes += info.held_bytes;
      s.endpoints.push_back(std::move(info));
    }
  }
  return s;
}

}  // namespace fanout::rpc
