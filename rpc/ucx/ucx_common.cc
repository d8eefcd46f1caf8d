#include "rpc/ucx/ucx_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <ucs/debug/log_def.h>
#include <ucs/memory/memory_type.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "rpc/ucx/log_limit.h"

namespace fanout::rpc::ucx {

Status Error(const std::string& what, ucs_status_t status) {
  return Status::Unavailable(what + ": " + ucs_status_string(status));
}

namespace {

// UCX's ERROR and WARN lines, each call site's first printed and the rest of
// a 10 s window counted (a peer could otherwise grow the log without bound);
// other levels pass. FANOUT_UCX_LOG_ALL=1 turns the limit off.
LogLimiter& UcxLogLimiter() {
  static LogLimiter* l = new LogLimiter();  // never destroyed: UCX may log at exit
  return *l;
}

ucs_log_func_rc_t LimitUcxLog(const char* file, unsigned line, const char*, ucs_log_level_t level,
                              const ucs_log_component_config_t*, const char* format, va_list) {
  if (level > UCS_LOG_LEVEL_WARN) return UCS_LOG_FUNC_RC_CONTINUE;
  const char* base = std::strrchr(file, '/');
  // A stopping data-plane server shuts its listening socket down before UCX
  // destroys the listener (DataPlaneServer::Stop): UCX's accept then fails
  // with EINVAL, which is expected, not an error to show.
  const int err = errno;
  if (err == EINVAL && format != nullptr && std::strstr(format, "accept() failed") != nullptr)
    return UCS_LOG_FUNC_RC_STOP;
  std::string summary;
  const bool print =
      UcxLogLimiter().Admit(std::string(base ? base + 1 : file) + ":" + std::to_string(line),
                            LogLimiter::Clock::now(), &summary);
  if (!summary.empty()) std::fprintf(stderr, "fanout: %s\n", summary.c_str());
  return print ? UCS_LOG_FUNC_RC_CONTINUE : UCS_LOG_FUNC_RC_STOP;
}

void InstallUcxLogLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* all = std::getenv("FANOUT_UCX_LOG_ALL");
    if (all == nullptr || std::string(all) != "1") ucs_log_push_handler(LimitUcxLog);
  });
}

}  // namespace

Status Context::Create(Context* out) {
  InstallUcxLogLimit();
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return Error("reading the UCX configuration (UCX_* variables)", st);
  // UCX 1.13 leaves its shared-memory transports out of endpoints that ask
  // for peer error handling (ours do, to detect dead servers) unless
  // MM_ERROR_HANDLING is on: turn it on unless the user chose otherwise.
  // (Only where UCX_TLS leaves shared memory in: UCX warns otherwise.)
  const char* tls = std::getenv("UCX_TLS");
  std::string t = tls ? tls : "all";
  const bool mm = t.find("all") != std::string::npos || t.find("sm") != std::string::npos ||
                  t.find("mm") != std::string::npos || t.find("posix") != std::string::npos ||
                  t.find("sysv") != std::string::npos || t[0] == '^';
  if (mm && std::getenv("UCX_MM_ERROR_HANDLING") == nullptr)
    ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
  // Rendezvous by get (the receiver reads), unless the user chose: with
  // UCX 1.13's default ("auto") the listener flow picks tcp/lo as the
  // rendezvous lane even between two processes on one host, and a reply then
  // crosses loopback tcp; with get_zcopy, transports that cannot get (tcp)
  // are left out and UCX pipelines the reply over shared memory on one host,
  // while RDMA NICs read it directly (docs/DATA_PLANE.md, measured there).
  if (std::getenv("UCX_RNDV_SCHEME") == nullptr)
    ucp_config_modify(config, "RNDV_SCHEME", "get_zcopy");
  // A deeper shared-memory FIFO (1024 x 8 KiB per worker instead of 64):
  // with the default, a multi-MiB reply stalls whenever the receiving thread
  // is descheduled (loader 0.74x Thrift on 2 cores; 1.39-1.43x with this).
  if (mm && std::getenv("UCX_MM_FIFO_SIZE") == nullptr)
    ucp_config_modify(config, "MM_FIFO_SIZE", "1024");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "fanout";
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) return Error("starting UCX (ucp_init)", st);
  out->ctx_ = ctx;
  return Status::OK();
}

Context::~Context() {
  if (ctx_) ucp_cleanup(ctx_);
}

std::vector<std::string> Context::MemoryTypes() const {
  std::vector<std::string> names;
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(ctx_, &attr) != UCS_OK) return names;
  for (int t = 0; t < UCS_MEMORY_TYPE_LAST; ++t)
    if (attr.memory_types & (uint64_t{1} << t)) names.push_back(ucs_memory_type_names[t]);
  return names;
}

bool Context::HandlesCuda() const {
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(ctx_, &attr) != UCS_OK) return false;
  return (attr.memory_types & (uint64_t{1} << UCS_MEMORY_TYPE_CUDA)) != 0;
}

std::mutex& LifecycleMutex() {
  static std::mutex mu;
  return mu;
}

namespace {
std::atomic<int64_t> g_workers_created{0};
}  // namespace

int64_t WorkersCreated() { return g_workers_created.load(); }

void DrainMissedEvents(ucp_worker_h w) {
  if (w != nullptr) ucp_worker_progress(w);
}

Status Worker::Create(ucp_context_h ctx, Worker* out) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w = nullptr;
  ucs_status_t st;
  {
    std::lock_guard<std::mutex> lock(LifecycleMutex());
    st = ucp_worker_create(ctx, &params, &w);
  }
  if (st == UCS_OK) ++g_workers_created;
  if (st != UCS_OK) return Error("creating a UCX worker", st);
  int efd = -1;
  if (ucp_worker_get_efd(w, &efd) != UCS_OK) efd = -1;  // a context without wakeup: poll
  out->w_ = w;
  out->efd_ = efd;
  return Status::OK();
}

Status Worker::Recreate(ucp_context_h ctx) {
  Destroy();
  Worker fresh;
  FANOUT_RETURN_IF_ERROR(Create(ctx, &fresh));
  w_ = fresh.w_;
  efd_ = fresh.efd_;
  fresh.w_ = nullptr;
  return Status::OK();
}

void Worker::Destroy() {
  if (w_) {
    std::lock_guard<std::mutex> lock(LifecycleMutex());
    DrainMissedEvents(w_);
    ucp_worker_destroy(w_);
  }
  w_ = nullptr;
  efd_ = -1;
}

Worker::~Worker() { Destroy(); }

void Worker::WaitForEvents(int timeout_ms) {
  if (efd_ < 0) {
    sched_yield();
    return;
  }
  ucs_status_t st = ucp_worker_arm(w_);
  if (st == UCS_ERR_BUSY) return;  // events pending: progress again
  if (st != UCS_OK) return;
  pollfd p{efd_, POLLIN, 0};
  poll(&p, 1, timeout_ms);
}

Status CheckMemoryType(ucp_context_h ctx, void* addr, size_t bytes, ucs_memory_type_t want) {
  if (bytes == 0) return Status::OK();
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = addr;
  mp.length = bytes;
  ucp_mem_h memh = nullptr;
  ucs_status_t st = ucp_mem_map(ctx, &mp, &memh);
  if (st != UCS_OK) return Error("registering the destination buffer with UCX", st);
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE;
  st = ucp_mem_query(memh, &attr);
  ucp_mem_unmap(ctx, memh);
  if (st != UCS_OK) return Error("querying the destination buffer's memory type", st);
  if (attr.mem_type != want)
    return Status::InvalidArgument(std::string("UCX sees the destination buffer as ") +
                                   ucs_memory_type_names[attr.mem_type] + " memory, not " +
                                   ucs_memory_type_names[want]);
  return Status::OK();
}

std::string EndpointTransports(ucp_ep_h ep) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (f == nullptr) return "";
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  if (std::getenv("FANOUT_UCX_EP_DUMP") != nullptr) std::fputs(text.c_str(), stderr);
  // Lines look like "#                 lane[0]:  3:cma/memory.0 md[1]  ... am zcopy_rndv".
  std::set<std::string> seen;
  std::string out;
  size_t at = 0;
  while ((at = text.find("lane[", at)) != std::string::npos) {
    size_t colon = text.find(':', at);
    size_t eol = text.find('\n', at);
    if (colon == std::string::npos || colon > eol) break;
    size_t p = colon + 1;
    while (p < eol && text[p] == ' ') ++p;
    size_t q = text.find(':', p);  // "3:cma/memory.0 ..."
    if (q != std::string::npos && q < eol) p = q + 1;
    size_t e = p;
    while (e < eol && text[e] != ' ') ++e;
    std::string tl = text.substr(p, e - p);
    size_t dot = tl.rfind('.');
    if (dot != std::string::npos && tl.find('/') != std::string::npos && dot > tl.find('/'))
      tl = tl.substr(0, dot);
    if (!tl.empty() && seen.insert(tl).second) out += (out.empty() ? "" : ", ") + tl;
    at = eol == std::string::npos ? text.size() : eol;
  }
  return out;
}

std::string SockaddrText(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

std::string Version() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace fanout::rpc::ucx
