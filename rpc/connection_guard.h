// ConnectionGuard: the RPC server's limits on connections, time and memory.
//
// Thrift's TThreadedServer gives every connection a thread and waits on it
// forever. The guard bounds what clients can hold:
//  - max_connections: connections open at once. At the limit a new
//    connection takes the place of the one idle the longest (its socket is
//    shut down; a client's next call on it reconnects), so a flood of idle
//    sockets cannot lock out a working client; when none is idle (every
//    connection is inside a request), the new one is refused: its first
//    request is answered with a TApplicationException naming the limit, and
//    it is counted.
//  - unauthenticated_connections (a server with credentials: tenants or an
//    auth token): connections that have not yet said who they are share a
//    small pool of their own. At its limit a new one takes the place of the
//    pool's longest-idle connection, else of its connection longest inside
//    a frame (once past kPoolGraceMs: a client's first request arrives whole
//    at once), else it is refused. A flood of anonymous sockets then costs
//    the pool, never the slots of the tenants.
//  - Bind(owner, cap): a connection that said who it is (a tenant, or the
//    auth token) leaves the pool for its owner's slots, at most `cap` of
//    them (a tenant's weight's share): at the cap it takes the place of the
//    owner's longest-idle connection, else it is refused naming the owner.
//    One tenant with many connections crowds out only itself.
//  - idle_timeout_ms: a connection that sends no request for this long is
//    closed.
//  - frame_timeout_ms: a request frame must arrive whole within this long of
//    its first byte, and a reply must be taken by the client within it (a
//    slow or stalled client loses its connection, not a thread forever).
//  - max_inflight_bytes: request frames held by all connections together,
//    taken from the server's MemoryBudget (memory_budget.h), which its data
//    plane shares, and each reply while it is sent (recorded, never waited
//    for). A frame that does not fit waits (at most frame_timeout_ms) for
//    others to finish; then its connection is closed and counted. Frames of
//    at most kMaxControlFrameBytes (pings, info, health checks, reports, a
//    lookup of a few ids) take no budget: at most max_connections of them
//    are held at once, and a busy server still answers its health checks.
//
// Used by GuardedFramedTransportFactory (framed_transport.h), which admits
// each accepted socket here. Thread safety: every method is safe from any
// thread.
#ifndef FANOUT_RPC_CONNECTION_GUARD_H_
#define FANOUT_RPC_CONNECTION_GUARD_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rpc/memory_budget.h"

namespace fanout::rpc {

// Request frames this small bypass the in-flight budget (see above).
inline constexpr int64_t kMaxControlFrameBytes = 512;
// A pooled (unauthenticated) connection inside a frame this long may be
// replaced by a newcomer when the pool is full.
inline constexpr int64_t kPoolGraceMs = 1000;

struct ConnectionLimits {
  int max_connections = 0;         // 0 = unlimited
  int64_t idle_timeout_ms = 0;     // 0 = never
  int64_t frame_timeout_ms = 0;    // 0 = never
  int64_t max_inflight_bytes = 0;  // 0 = unlimited
  // Connections not yet bound to an owner (Bind) held at once; 0 = no pool
  // (every connection is one class, as on a server without credentials).
  int unauthenticated_connections = 0;
  // How long a frame waits for the budget at most (and never past its frame
  // deadline): under the client's default 30 s call deadline, so that the
  // server gives up first. <= 0: 20 s.
  int64_t budget_wait_ms = 20000;
  // The machine's defaults: 64 connections per CPU (at least 256, at most
  // half the open-file limit), 10 min idle, 60 s per frame, a quarter of
  // physical memory for request frames.
  static ConnectionLimits Defaults();
  // The pool a server with credentials gives anonymous connections: an
  // eighth of max_connections, at least 8 and at most 256 (0 = no limit: 256).
  static int UnauthenticatedPool(int max_connections);
};

struct ConnectionStats {
  int64_t open = 0;  // connections now
  int64_t peak_open = 0;
  int64_t accepted = 0;        // admitted since start
  int64_t refused = 0;         // refused at the limit (every connection busy)
  int64_t evicted_idle = 0;    // closed to make room at the limit
  int64_t idle_timeouts = 0;   // closed after idle_timeout_ms without a request
  int64_t frame_timeouts = 0;  // closed because a frame or reply took longer than frame_timeout_ms
  int64_t memory_waits = 0;    // frames that waited for the in-flight byte budget
  int64_t memory_refused = 0;  // connections closed because the budget stayed full
  int64_t inflight_bytes = 0;  // request bytes held now by Thrift connections (the budget's share)
  int64_t tls_failures =
      0;  // TLS handshakes or records that failed (wrong CA, expired, no client certificate)
  int64_t unauthenticated = 0;  // connections now in the anonymous pool
  int64_t pool_refused = 0;     // refused: the anonymous pool full, none replaceable
  int64_t pool_evicted = 0;     // pooled connections replaced by a newcomer
  int64_t owner_refused = 0;    // Bind refused: the owner at its cap, every one busy
  int64_t owner_evicted = 0;    // an owner's idle connection replaced by its own newcomer
  std::map<std::string, int64_t> by_owner;  // bound connections now, per owner
};

class ConnectionGuard {
 public:
  // `budget`: the server's request-memory budget (shared with its data
  // plane); null makes one of limits.max_inflight_bytes.
  explicit ConnectionGuard(ConnectionLimits limits, std::shared_ptr<MemoryBudget> budget = nullptr);
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // One admitted (or refused) connection; its transport owns it.
  class Connection {
   public:
    ~Connection() { Close(); }
    bool refused() const { return refused_; }
    // Why it was refused at admission (the client reads it).
    const std::string& why_refused() const { return why_refused_; }
    const ConnectionGuard* guard() const { return guard_; }
    // Moves this connection out of the anonymous pool (or from another
    // owner) to `owner`'s slots, at most `cap` of them (<= 0: no cap). At the
    // cap the owner's longest-idle other connection is shut down to make
    // room; when every one is inside a request: false, `why` naming the
    // owner and its cap (counted), and the connection stays where it was.
    bool Bind(const std::string& owner, int64_t cap, std::string* why);
    // Waiting for the next request frame (its budget released).
    void Idle();
    // A frame began (its first byte; again with its size once known):
    // reserves `bytes` from the in-flight budget, waiting while it is full
    // (not for a control frame: kMaxControlFrameBytes). false (and counted)
    // when the budget stayed full for frame_timeout_ms, or the connection was
    // shut down while it waited.
    bool Begin(int64_t bytes);
    // A receive or send wait timed out after the guard's tick: true to keep
    // waiting, false (counted) when the connection's idle or frame deadline
    // passed. `in_frame`: inside a frame (or sending a reply), else idle.
    bool KeepWaiting(bool in_frame);
    // A TLS error on this connection (counted; the last one is kept).
    void NoteTlsFailure(const std::string& why);
    // Leaves the guard (before the socket is closed, so it cannot be shut
    // down after its descriptor is reused). Idempotent.
    void Close();

   private:
    friend class ConnectionGuard;
    ConnectionGuard* guard_ = nullptr;
    int fd_ = -1;
    bool refused_ = false;
    std::string why_refused_;
    bool bound_ = false;             // owned by owner_ (else pooled) (GUARDED_BY guard_->mu_)
    std::string owner_;              // GUARDED_BY guard_->mu_
    bool listed_ = false;            // in guard_->open_ (GUARDED_BY guard_->mu_)
    bool idle_ = true;               // GUARDED_BY guard_->mu_
    bool waiting_ = false;           // waiting for the budget (GUARDED_BY guard_->mu_)
    std::atomic<bool> shut_{false};  // shut down by the guard (written under guard_->mu_)
    int64_t reserved_ = 0;           // GUARDED_BY guard_->mu_
    std::chrono::steady_clock::time_point
        since_;  // idle or in frame since (GUARDED_BY guard_->mu_)
    std::list<Connection*>::iterator pos_;
  };

  // Admits the accepted socket `fd` (evicting the longest-idle connection at
  // the limit) or returns a refused Connection (every connection busy). The
  // guard must outlive every Connection.
  std::unique_ptr<Connection> Admit(int fd);

  // The server stops: frames waiting for the budget give up now (their
  // connections close), and no frame starts a new wait; requests being
  // served finish.
  void ShutdownAll();

  // How long a socket wait may block before the guard is asked again (its
  // receive timeout): small enough to see each deadline in time.
  int tick_ms() const { return tick_ms_; }
  const ConnectionLimits& limits() const { return limits_; }
  const std::shared_ptr<MemoryBudget>& budget() const { return budget_; }
  ConnectionStats Stats() const;
  // The refusal the client reads.
  std::string RefusalMessage() const;
  std::string LastTlsFailure() const;

 private:
  // REQUIRES: mu_ held; `mu_held` (a guard on mu_) stands witness, since a
  // std::mutex cannot be asked who holds it.
  void Release(Connection* c, const std::lock_guard<std::mutex>& mu_held);
  // Shuts `c` down to make room (its thread sees end-of-stream) and releases it.
  void Evict(Connection* c, const std::lock_guard<std::mutex>& mu_held);
  // Among open connections matching `in`: the one idle the longest, else
  // (when `busy_after_ms` >= 0) the one inside a frame the longest, if for at
  // least that long; null when none.
  template <typename Pred>
  Connection* Oldest(Pred in, int64_t busy_after_ms, const std::lock_guard<std::mutex>& mu_held);

  const ConnectionLimits limits_;
  const std::shared_ptr<MemoryBudget> budget_;
  int tick_ms_ = 0;
  mutable std::mutex mu_;
  std::list<Connection*> open_;   // GUARDED_BY(mu_)
  ConnectionStats stats_;         // GUARDED_BY(mu_)
  std::string last_tls_failure_;  // GUARDED_BY(mu_)
  bool stopping_ = false;         // GUARDED_BY(mu_)
  int64_t pooled_ = 0;            // GUARDED_BY(mu_): open connections not bound
};

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_CONNECTION_GUARD_H_
