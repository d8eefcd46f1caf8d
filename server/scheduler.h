// Weighted fair order of a server's request work across tenants, on every
// path (Thrift connection threads and UCX progress threads alike wait here
// before computing a request).
//
// FairQueue is the order alone, deterministic and without threads: start-time
// fair queuing (Goyal et al., SIGCOMM '96) by cost. A request of tenant t and
// estimated cost c gets the start tag S = max(V, F_t) and moves the tenant's
// finish tag to F_t = S + c / w_t; the next request served is the waiting
// one with the smallest start tag (then the earliest), V is the start tag of
// the last one served (one V per class: online and batch tags never mix),
// and a finished request corrects F_t by its actual cost. A tenant's share of a saturated server
// then follows its weight whatever its number of connections, workers or request sizes. Classes:
// `online` work is picked first while its recent share of the work (an
// exponentially decayed sum) is below online_share, so batch work always
// keeps at least the rest; neither class starves the other.
//
// FairScheduler runs the queue with `slots` requests at once (the cores),
// plus `online_slots` more that only online work may take (an inference
// query does not wait for a batch request to finish). Waiting is bounded: a
// request waits at most max_wait (then ResourceExhausted, well under the
// client's deadline), at most max_waiting requests wait at once, and each
// tenant holds at most its weight's share of those places (at least
// min_waiting_per_tenant): a tenant with many connections cannot fill the
// queue and crowd the others out; its requests past its share are refused at
// once, naming it.
//
// Thread safety: FairQueue none (FairScheduler holds its lock around it);
// FairScheduler's methods from any thread.
#ifndef FANOUT_SERVER_SCHEDULER_H_
#define FANOUT_SERVER_SCHEDULER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace fanout::server {

class FairQueue {
 public:
  struct TenantClass {
    double weight = 1;
    bool online = false;
  };
  explicit FairQueue(double online_share = 0.8) : online_share_(online_share) {}
  // The tenants (by index); finish tags of tenants that stay are kept.
  void SetTenants(const std::vector<TenantClass>& tenants);
  // Queues a request; returns its id.
  int64_t Enqueue(int tenant, double est_cost);
  // Removes a queued request (its wait ended without service) and gives its
  // tenant back the charge.
  void Cancel(int64_t id);
  // The next request to serve (removed from the queue), or -1 when none is
  // waiting; `online_only` takes online work only.
  int64_t Pick(bool online_only = false);
  // A served request's actual cost (est_cost was charged at Enqueue).
  void Finish(int tenant, double est_cost, double actual_cost);
  bool Empty() const { return waiting_.empty(); }
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int TenantOf(int64_t id) const;
  bool HasOnlineWaiting() const;

 private:
  struct Waiting {
    int64_t id;
    int tenant;
    double start;
    double charge;  // est_cost / weight
  };
  std::vector<TenantClass> tenants_;
  std::vector<double> finish_;   // per tenant
  std::deque<Waiting> waiting_;  // arrival order
  double v_[2] = {0, 0};         // virtual time per class (batch, online)
  double online_share_;
  double used_online_ = 0, used_batch_ = 0;  // decayed costs served per class
  int64_t next_id_ = 0;
};

struct SchedulerOptions {
  int slots = 2;               // requests computed at once (the usable CPUs)
  int online_slots = 1;        // more, for online work only
  double online_share = 0.8;   // online's most share of the work while batch work waits
  int64_t max_waiting = 4096;  // requests waiting at once; beyond: ResourceExhausted
  // Each tenant's places in the wait: max_waiting x its weight's share of the
  // tenants' weights, at least this many.
  int64_t min_waiting_per_tenant = 64;
  std::chrono::milliseconds max_wait{20000};  // under the client's 30 s call deadline
  // Where online tenants exist: while an online request's device reads
  // wait, batch requests keep at most storage::IoGate::kBatchBudget reads in
  // flight (docs/TENANTS.md, "Priorities past the queue"). Off: CPU priority
  // alone. On by default, as the server's (ServerOptions::online_io_first,
  // --no-online-io-first).
  bool online_io_first = true;
};

class FairScheduler {
 public:
  explicit FairScheduler(SchedulerOptions options);
  void SetTenants(const std::vector<FairQueue::TenantClass>& tenants);

  // A request's turn: held while it computes, then Release()d.
  struct Grant {
    int tenant = -1;
    double est_cost = 0;
    bool online_slot = false;
    double waited_s = 0;  // time in the queue
    bool active = false;
  };
  // Waits for the request's turn (ResourceExhausted naming why where too
  // many wait or it waited max_wait; Aborted once the scheduler is stopped).
  Status Acquire(int tenant, double est_cost, Grant* grant);
  void Release(Grant* grant, double actual_cost);
  // Wakes every waiter with Aborted and refuses new ones (server stop).
  void Stop();
  int64_t waiting() const;
  int running() const;
  // The places in the wait tenant `t` may hold (its weight's share).
  int64_t WaitingCap(int t) const;

 private:
  void DispatchLocked();
  int64_t WaitingCapLocked(int t) const;
  const SchedulerOptions o_;
  mutable std::mutex mu_;
  FairQueue q_;                                 // GUARDED_BY(mu_)
  std::vector<bool> online_;                    // GUARDED_BY(mu_): per tenant
  std::vector<double> weight_;                  // GUARDED_BY(mu_): per tenant
  std::vector<int64_t> waiting_of_;             // GUARDED_BY(mu_): per tenant, waiting now
  double weights_ = 1;                          // GUARDED_BY(mu_): their sum
  int running_ = 0, running_online_slots_ = 0;  // GUARDED_BY(mu_)
  struct Ticket {
    std::condition_variable cv;
    bool granted = false, online_slot = false;
  };
  std::vector<std::pair<int64_t, Ticket*>> tickets_;  // GUARDED_BY(mu_): waiting ids
  bool stopped_ = false;                              // GUARDED_BY(mu_)
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_SCHEDULER_H_
