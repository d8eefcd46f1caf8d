#include "rpc/connection_guard.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>

#include "common/cpu.h"

namespace fanout::rpc {

namespace {
using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// A refused connection gets this long to send the request it is refused in.
constexpr int64_t kRefusalWaitMs = 2000;
}  // namespace

ConnectionLimits ConnectionLimits::Defaults() {
  ConnectionLimits l;
  int64_t conns = std::max<int64_t>(256, int64_t{64} * UsableCpuCount());
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    conns =
        std::min<int64_t>(conns, std::max<int64_t>(16, static_cast<int64_t>(files.rlim_cur) / 2));
  l.max_connections = static_cast<int>(conns);
  l.idle_timeout_ms = 600000;
  l.frame_timeout_ms = 60000;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  l.max_inflight_bytes =
      pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 4 : int64_t{1} << 30;
  return l;
}

int ConnectionLimits::UnauthenticatedPool(int max_connections) {
  if (max_connections <= 0) return 256;
  return std::min(256, std::max(8, max_connections / 8));
}

ConnectionGuard::ConnectionGuard(ConnectionLimits limits, std::shared_ptr<MemoryBudget> budget)
    : limits_(limits),
      budget_(budget ? std::move(budget)
                     : std::make_shared<MemoryBudget>(limits.max_inflight_bytes)) {
  int64_t tick = 1000;
  if (limits_.idle_timeout_ms > 0) tick = std::min(tick, limits_.idle_timeout_ms / 4);
  if (limits_.frame_timeout_ms > 0) tick = std::min(tick, limits_.frame_timeout_ms / 4);
  tick_ms_ = static_cast<int>(std::max<int64_t>(tick, 10));
}

std::string ConnectionGuard::RefusalMessage() const {
  return "server at its connection limit (--max-connections " +
         std::to_string(limits_.max_connections) +
         ", every connection inside a request): connection refused; retry later or use another "
         "replica";
}

template <typename Pred>
ConnectionGuard::Connection* ConnectionGuard::Oldest(Pred in, int64_t busy_after_ms,
                                                     const std::lock_guard<std::mutex>&) {
  Connection* idle = nullptr;
  Connection* busy = nullptr;
  for (Connection* o : open_) {
    if (!in(o)) continue;
    Connection*& best = o->idle_ ? idle : busy;
    if (best == nullptr || o->since_ < best->since_) best = o;
  }
  if (idle != nullptr) return idle;
  if (busy != nullptr && busy_after_ms >= 0 && MsSince(busy->since_) >= busy_after_ms) return busy;
  return nullptr;
}

void ConnectionGuard::Evict(Connection* c, const std::lock_guard<std::mutex>& lock) {
  // Its thread sees end-of-stream and ends the connection; the client's
  // next call on it reconnects.
  ::shutdown(c->fd_, SHUT_RDWR);
  c->shut_ = true;
  budget_->Wake();
  Release(c, lock);
}

std::unique_ptr<ConnectionGuard::Connection> ConnectionGuard::Admit(int fd) {
  auto c = std::make_unique<Connection>();
  c->guard_ = this;
  c->fd_ = fd;
  std::lock_guard<std::mutex> lock(mu_);
  c->since_ = Clock::now();
  if (limits_.unauthenticated_connections > 0 && pooled_ >= limits_.unauthenticated_connections) {
    Connection* victim = Oldest([](const Connection* o) { return !o->bound_; }, kPoolGraceMs, lock);
    if (victim == nullptr) {
      c->refused_ = true;
      c->why_refused_ = "server's pool for connections without credentials is full (" +
                        std::to_string(limits_.unauthenticated_connections) +
                        " connections that have not yet authenticated, every one inside its "
                        "first request): connection refused; retry later or use another replica";
      ++stats_.pool_refused;
      return c;
    }
    Evict(victim, lock);
    ++stats_.pool_evicted;
  }
  if (limits_.max_connections > 0 && static_cast<int>(open_.size()) >= limits_.max_connections) {
    Connection* oldest = Oldest([](const Connection*) { return true; }, -1, lock);
    if (oldest == nullptr) {
      c->refused_ = true;
      c->why_refused_ = RefusalMessage();
      ++stats_.refused;
      return c;
    }
    Evict(oldest, lock);
    ++stats_.evicted_idle;
  }
  c->pos_ = open_.insert(open_.end(), c.get());
  c->listed_ = true;
  ++pooled_;
  ++stats_.accepted;
  stats_.open = static_cast<int64_t>(open_.size());
  stats_.peak_open = std::max(stats_.peak_open, stats_.open);
  stats_.unauthenticated = pooled_;
  return c;
}

bool ConnectionGuard::Connection::Bind(const std::string& owner, int64_t cap, std::string* why) {
  ConnectionGuard& g = *guard_;
  std::lock_guard<std::mutex> lock(g.mu_);
  if (!listed_ || refused_) return true;  // leaving, or answered with its refusal anyway
  if (bound_ && owner_ == owner) return true;
  auto& counts = g.stats_.by_owner;
  auto it = counts.find(owner);
  const int64_t held = it == counts.end() ? 0 : it->second;
  if (cap > 0 && held >= cap) {
    Connection* victim =
        g.Oldest([&](const Connection* o) { return o != this && o->bound_ && o->owner_ == owner; },
                 -1, lock);
    if (victim == nullptr) {
      ++g.stats_.owner_refused;
      *why = "tenant \"" + owner + "\" holds all " + std::to_string(cap) +
             " of its connection slots (its weight's share of --max-connections " +
             std::to_string(g.limits_.max_connections) +
             "), every one inside a request: this connection is refused; retry later, or use "
             "fewer connections";
      return false;
    }
    g.Evict(victim, lock);
    ++g.stats_.owner_evicted;
  }
  if (bound_) {
    if (--counts[owner_] <= 0) counts.erase(owner_);
  } else {
    --g.pooled_;
    g.stats_.unauthenticated = g.pooled_;
  }
  bound_ = true;
  owner_ = owner;
  ++counts[owner];
  return true;
}

void ConnectionGuard::ShutdownAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    // Frames waiting for the budget give up (requests being served finish:
    // the server drains them).
    for (Connection* c : open_)
      if (c->waiting_) c->shut_ = true;
  }
  budget_->Wake();  // waiters see their abandon flag now, not at their deadline
}

void ConnectionGuard::Release(Connection* c, const std::lock_guard<std::mutex>&) {
  stats_.inflight_bytes -= c->reserved_;
  budget_->Give(c->reserved_);
  c->reserved_ = 0;
  if (c->listed_) {
    open_.erase(c->pos_);
    c->listed_ = false;
    stats_.open = static_cast<int64_t>(open_.size());
    if (c->bound_) {
      if (--stats_.by_owner[c->owner_] <= 0) stats_.by_owner.erase(c->owner_);
    } else {
      --pooled_;
      stats_.unauthenticated = pooled_;
    }
  }
}

ConnectionStats ConnectionGuard::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ConnectionGuard::Connection::Idle() {
  std::lock_guard<std::mutex> lock(guard_->mu_);
  if (reserved_ > 0) {
    guard_->stats_.inflight_bytes -= reserved_;
    guard_->budget_->Give(reserved_);
    reserved_ = 0;
  }
  idle_ = true;
  since_ = Clock::now();
}

bool ConnectionGuard::Connection::Begin(int64_t bytes) {
  ConnectionGuard& g = *guard_;
  {
    std::lock_guard<std::mutex> lock(g.mu_);
    assert(reserved_ == 0);
    if (idle_) {  // the frame's first byte: its deadline starts
      idle_ = false;
      since_ = Clock::now();
    }
    // Control frames (pings, info, health, reports) are never held up by
    // the budget: a busy server still answers its health checks.
    if (g.budget_->limit() <= 0 || refused_ || bytes <= kMaxControlFrameBytes) return true;
  }
  // The budget is taken without the guard's lock (its waits block), and kept
  // under it (Release gives back what is recorded here).
  int64_t taken = 0;
  if (!g.budget_->TryTake(bytes, &taken, /*count_wait=*/false)) {
    {
      std::lock_guard<std::mutex> lock(g.mu_);
      ++g.stats_.memory_waits;
      if (g.stopping_) return false;  // a stopping server takes no new waits
      waiting_ = true;
    }
    // At most budget_wait_ms (and the frame's deadline): never without end,
    // and under the client's own call deadline.
    int64_t wait_ms = g.limits_.budget_wait_ms > 0 ? g.limits_.budget_wait_ms : 20000;
    if (g.limits_.frame_timeout_ms > 0) wait_ms = std::min(wait_ms, g.limits_.frame_timeout_ms);
    const bool got = g.budget_->Take(bytes, wait_ms, &shut_, &taken);
    std::lock_guard<std::mutex> lock(g.mu_);
    waiting_ = false;
    if (!got) {
      if (!shut_) ++g.stats_.memory_refused;
      return false;
    }
  }
  std::lock_guard<std::mutex> lock(g.mu_);
  if (shut_ || !listed_) {  // shut down while it waited: nothing is kept for it
    g.budget_->Give(taken);
    return false;
  }
  reserved_ = taken;
  g.stats_.inflight_bytes += taken;
  return true;
}

bool ConnectionGuard::Connection::KeepWaiting(bool in_frame) {
  ConnectionGuard& g = *guard_;
  std::lock_guard<std::mutex> lock(g.mu_);
  if (shut_) return false;
  const int64_t waited = MsSince(since_);
  if (refused_) return waited < kRefusalWaitMs;
  if (in_frame) {
    if (g.limits_.frame_timeout_ms > 0 && waited >= g.limits_.frame_timeout_ms) {
      ++g.stats_.frame_timeouts;
      return false;
    }
    return true;
  }
  if (g.limits_.idle_timeout_ms > 0 && waited >= g.limits_.idle_timeout_ms) {
    ++g.stats_.idle_timeouts;
    return false;
  }
  return true;
}

void ConnectionGuard::Connection::NoteTlsFailure(const std::string& why) {
  std::lock_guard<std::mutex> lock(guard_->mu_);
  ++guard_->stats_.tls_failures;
  guard_->last_tls_failure_ = why;
}

std::string ConnectionGuard::LastTlsFailure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_tls_failure_;
}

void ConnectionGuard::Connection::Close() {
  if (guard_ == nullptr) return;
  std::lock_guard<std::mutex> lock(guard_->mu_);
  guard_->Release(this, lock);
  shut_ = true;
}

}  // namespace fanout::rpc
