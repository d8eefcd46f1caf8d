// A server's tenants at run time (server/tenants.h is their file): who a
// request is charged to, its quotas, its turn (server/scheduler.h), and what
// each tenant used (/stats, /metrics with a `tenant` label, the admin page,
// fanout-ctl tenants).
//
// Tenants keep a stable id by name for the server's life (ids survive a
// reload; a tenant dropped from the file keeps its counters). A reload
// revokes on every path: a dropped tenant's requests are refused (Admit), its
// ticket names no one; open Thrift connections resolve their credentials
// again at their next request once generation() moved (server/handler.cc).
// Each current tenant has a data-plane ticket (random), bound to its
// credentials: a reload that changes its token or TLS subject gives it a new
// one. An authenticated connection is handed its tenant's ticket in
// PartitionInfo; a data-plane request's ticket, and the same-host export's
// hello, name the tenant.
//
// Quotas, checked before a request waits for its turn (over one: the
// request is refused without waiting, with ResourceExhausted naming the
// tenant and the quota, and takes nothing from the others): request and reply bytes in
// flight (max_inflight_bytes), requests per second, feature bytes per
// second and update-batch bytes per second (token buckets holding one
// second's worth). A refusal says when the
// request could pass (Admission::retry_after_s; the Thrift path holds its
// reply that long, capped: PartitionService::Run).
//
// Thread safety: every method from any thread.
#ifndef FANOUT_SERVER_TENANCY_H_
#define FANOUT_SERVER_TENANCY_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "server/scheduler.h"
#include "server/tenants.h"
#include "storage/io_gate.h"

namespace fanout::server {

class PrometheusText;

class Tenancy {
 public:
  static constexpr int kMaxTenants = 1024;  // ids, over the server's life
  static constexpr int kWaitBuckets = 40;   // queue wait bucket k: <= 2^(k/2) microseconds

  // `schedule`: requests wait for their turn (a tenants file was given);
  // false: the default tenant alone, counted, never queued.
  Tenancy(std::shared_ptr<const TenantTable> table, bool schedule, SchedulerOptions options,
          bool tickets_required);
  ~Tenancy();

  // Replaces the table (a reload): ids by name kept, new names get new ids
  // and tickets; InvalidArgument where the server would pass 1024 ids.
  Status Reload(std::shared_ptr<const TenantTable> table);
  std::shared_ptr<const TenantTable> table() const;
  bool scheduling() const { return schedule_; }

  // Credentials -> tenant id (-1: none names one).
  int DefaultId() const;
  bool DefaultRefused() const;
  int ByToken(const std::string& token) const;
  int ByTlsSubject(const std::string& subject) const;
  // A data-plane ticket -> tenant id (-1: unknown).
  int ByTicket(const std::string& ticket) const;
  // The ticket to hand a connection of tenant `id` ("" where none is
  // required).
  std::string Ticket(int id) const;
  // OK where `ticket` names a current tenant whose line allows the same-host
  // export (local=yes); Unauthenticated saying why not.
  Status MayMapExport(const std::string& ticket) const;
  // OK where tenant `id` may apply updates to a live partition (write=yes);
  // Unauthenticated naming it otherwise.
  Status MayWrite(int id) const;
  // Moves on every reload: connections compare it to re-resolve their tenant.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  bool tickets_required() const { return tickets_required_; }
  std::string Name(int id) const;
  // The connection slots of tenant `id` out of `max_connections` (<= 0: no
  // cap, 0 returned): its weight's share, at least kMinConnectionsPerTenant.
  static constexpr int64_t kMinConnectionsPerTenant = 8;
  int64_t ConnectionSlots(int id, int64_t max_connections) const;

  // One data request's charge: Admit before computing (quotas, then its
  // turn), Done after.
  struct Admission {
    int tenant = -1;
    int64_t held_bytes = 0;    // counted against max_inflight_bytes
    int64_t update_bytes = 0;  // an admitted update batch's, counted at Done
    double est_cost = 0;
    double waited_s = 0;
    // Refused over a quota: how long until the same request could pass (a
    // rate's bucket refilling; a fixed short time for in-flight bytes).
    double retry_after_s = 0;
    // ... and whether the Thrift path may hold the refusal that long: a batch
    // tenant's (an online one's client waits with a deadline of its own, near
    // its query's: a held refusal would reach it as a timeout, not as a refusal).
    bool hold_refusal = false;
    // The class of the request's device reads (storage/io_gate.h): online or
    // batch where the file names an online tenant and online_io_first is on,
    // else none. Passed with the reads (ReadOptions), never through the thread.
    storage::ReadClass read_class = storage::ReadClass::kNone;
    FairScheduler::Grant grant;
  };
  // `update_bytes`: an update batch's bytes (apply_updates), counted against
  // max_update_bytes_per_s and in the tenant's update_bytes.
  Status Admit(int tenant, double est_cost, int64_t est_feature_bytes, Admission* a,
               int64_t update_bytes = 0);
  void Done(Admission* a, bool ok, double actual_cost, int64_t sampled_edges, int64_t feature_rows,
            int64_t feature_bytes);
  // Work a co-located client of `tenant` did itself (report_local).
  void AddLocalWork(int tenant, int64_t requests, int64_t edges, int64_t feature_rows,
                    int64_t bytes);

  // Per tenant: requests, bytes, edges, queue wait p50/p99, refusals, share
  // of the work against its weight's share.
  nlohmann::json StatsJson() const;
  void Prometheus(PrometheusText* out) const;
  void Stop();

 private:
  struct Usage;
  struct Snapshot;
  std::shared_ptr<const Snapshot> Current() const;
  Status Apply(std::shared_ptr<const TenantTable> table);  // REQUIRES: mu_ held
  const bool schedule_;
  const bool online_io_first_;
  const bool tickets_required_;
  FairScheduler scheduler_;
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> snap_;  // GUARDED_BY(mu_) (read via Current())
  // By id: sized once (kMaxTenants); an entry is made under mu_ and published
  // through ids_ (seq_cst) before any reader can name its id.
  std::vector<std::unique_ptr<Usage>> usage_;
  std::atomic<int> ids_{0};
  std::atomic<uint64_t> generation_{0};
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_TENANCY_H_
