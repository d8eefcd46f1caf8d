#include "server/tenancy.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include "common/secret.h"
#include "server/prometheus_text.h"
#include "storage/io_gate.h"

namespace fanout::server {

// What one tenant id used (atomics: updated by request threads, read by the
// admin endpoint), and its quota state (under its mutex).
struct Tenancy::Usage {
  std::string name;  // set once, when the id is made
  std::atomic<int64_t> requests{0}, errors{0}, refused_quota{0}, refused_busy{0};
  std::atomic<int64_t> cost{0}, sampled_edges{0}, feature_rows{0}, feature_bytes{0},
      update_bytes{0};
  std::atomic<int64_t> local_requests{0}, local_edges{0}, local_rows{0}, local_bytes{0};
  std::atomic<int64_t> waits[kWaitBuckets] = {};
  std::atomic<int64_t> wait_us_sum{0};
  std::mutex mu;
  int64_t held_bytes = 0;                                            // GUARDED_BY(mu)
  double request_tokens = 0, feature_tokens = 0, update_tokens = 0;  // GUARDED_BY(mu)
  std::chrono::steady_clock::time_point refilled{};                  // GUARDED_BY(mu)
  // When this tenant's next refusal may leave (its refusals are paced per
  // tenant, not per connection: more connections buy no more refusals).
  std::chrono::steady_clock::time_point next_refusal{};  // GUARDED_BY(mu)
};

// The current table and how its tenants map to ids.
struct Tenancy::Snapshot {
  std::shared_ptr<const TenantTable> table;
  std::vector<int> id_of;                // table index -> id
  std::vector<const Tenant*> tenant_of;  // id -> its entry (null: dropped)
  // id -> its data-plane ticket ("" for a dropped tenant: its ticket names no one). A
  // ticket is bound to the tenant's credentials: kept across a reload only while its
  // token and TLS subject stay the same, so rotating either revokes the old ticket.
  std::vector<std::string> ticket_of;
  std::unordered_map<std::string, int> by_ticket;  // current tenants' tickets only
  int default_id = 0;
  bool has_online = false;  // some tenant is of class online
};

namespace {

std::string RandomTicket() {
  std::random_device rd;
  std::string t(32, '\0');
  for (char& c : t) c = static_cast<char>(rd());
  return t;
}

double BucketUpperSeconds(int k) { return std::pow(2.0, k / 2.0) * 1e-6; }

// 2, 2.5, 1e+09: a quota as people write it.
std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int BucketOf(double seconds) {
  const double us = seconds * 1e6;
  if (us <= 1) return 0;
  const int k = static_cast<int>(std::ceil(2.0 * std::log2(us)));
  return std::min(k, Tenancy::kWaitBuckets - 1);
}

}  // namespace

Tenancy::Tenancy(std::shared_ptr<const TenantTable> table, bool schedule, SchedulerOptions options,
                 bool tickets_required)
    : schedule_(schedule),
      online_io_first_(options.online_io_first),
      tickets_required_(tickets_required),
      scheduler_(options) {
  usage_.resize(kMaxTenants);
  std::lock_guard<std::mutex> lock(mu_);
  (void)Apply(table ? std::move(table) : TenantTable::DefaultOnly());
}

Tenancy::~Tenancy() { Stop(); }

void Tenancy::Stop() { scheduler_.Stop(); }

std::shared_ptr<const Tenancy::Snapshot> Tenancy::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_;
}

Status Tenancy::Apply(std::shared_ptr<const TenantTable> table) {
  auto s = std::make_shared<Snapshot>();
  s->table = table;
  // Ids by name: the ones known keep theirs.
  const int known = ids_.load();
  int next = known;
  std::vector<int> id_of;
  for (const Tenant& t : table->tenants()) {
    int id = -1;
    for (int i = 0; i < known; ++i)
      if (usage_[i]->name == t.name) id = i;
    if (id < 0) {
      if (next >= kMaxTenants)
        return Status::InvalidArgument("more than " + std::to_string(kMaxTenants) +
                                       " tenants over this server's life: restart it");
      id = next++;
      id_of.push_back(-id - 1);  // new: made below, once the whole table fits
      continue;
    }
    id_of.push_back(id);
  }
  for (size_t i = 0; i < id_of.size(); ++i) {
    if (id_of[i] >= 0) continue;
    const int id = -id_of[i] - 1;
    usage_[id] = std::make_unique<Usage>();
    usage_[id]->name = table->tenants()[i].name;
    id_of[i] = id;
  }
  ids_.store(next);
  s->id_of = id_of;
  s->tenant_of.assign(static_cast<size_t>(next), nullptr);
  s->ticket_of.assign(static_cast<size_t>(next), std::string());
  std::vector<FairQueue::TenantClass> classes(static_cast<size_t>(next));
  for (size_t i = 0; i < id_of.size(); ++i) {
    const Tenant& t = table->tenants()[i];
    const int id = id_of[i];
    s->tenant_of[id] = &t;
    classes[id] = {t.weight, t.online};
    s->has_online = s->has_online || t.online;
    // The ticket survives the reload only where the same credentials still name the
    // tenant; a tenant removed and added back gets a new one too.
    const Tenant* was =
        snap_ && id < static_cast<int>(snap_->tenant_of.size()) ? snap_->tenant_of[id] : nullptr;
    const bool same = was != nullptr && was->token == t.token && was->tls_subject == t.tls_subject;
    s->ticket_of[id] = same ? snap_->ticket_of[id] : RandomTicket();
    s->by_ticket[s->ticket_of[id]] = id;
  }
  for (int id = 0; id < next; ++id)
    if (s->tenant_of[id] == nullptr) classes[id] = {1, false};  // dropped: plain batch work
  s->default_id = id_of[static_cast<size_t>(table->default_index())];
  scheduler_.SetTenants(classes);
  snap_ = std::move(s);
  generation_.fetch_add(1);
  return Status::OK();
}

Status Tenancy::Reload(std::shared_ptr<const TenantTable> table) {
  std::lock_guard<std::mutex> lock(mu_);
  return Apply(std::move(table));
}

std::shared_ptr<const TenantTable> Tenancy::table() const { return Current()->table; }

int Tenancy::DefaultId() const { return Current()->default_id; }

bool Tenancy::DefaultRefused() const {
  auto s = Current();
  return s->table->tenants()[static_cast<size_t>(s->table->default_index())].refuse;
}

int Tenancy::ByToken(const std::string& token) const {
  auto s = Current();
  const int i = s->table->ByToken(token);
  return i < 0 ? -1 : s->id_of[static_cast<size_t>(i)];
}

int Tenancy::ByTlsSubject(const std::string& subject) const {
  auto s = Current();
  const int i = s->table->ByTlsSubject(subject);
  return i < 0 ? -1 : s->id_of[static_cast<size_t>(i)];
}

int Tenancy::ByTicket(const std::string& ticket) const {
  auto s = Current();
  auto it = s->by_ticket.find(ticket);
  return it == s->by_ticket.end() ? -1 : it->second;
}

std::string Tenancy::Ticket(int id) const {
  if (!tickets_required_) return "";
  auto s = Current();
  if (id < 0 || id >= static_cast<int>(s->ticket_of.size())) return "";
  return s->ticket_of[id];
}

Status Tenancy::MayWrite(int id) const {
  auto s = Current();
  const Tenant* t =
      id >= 0 && static_cast<size_t>(id) < s->tenant_of.size() ? s->tenant_of[id] : nullptr;
  if (t == nullptr)
    return Status::Unauthenticated("this connection's tenant is no longer in the tenants file");
  if (!t->write)
    return Status::Unauthenticated("tenant '" + t->name +
                                   "' may not write: the tenants file allows updates to a tenant "
                                   "with write=yes");
  return Status::OK();
}

Status Tenancy::MayMapExport(const std::string& ticket) const {
  auto s = Current();
  auto it = s->by_ticket.find(ticket);
  if (ticket.empty() || it == s->by_ticket.end())
    return Status::Unauthenticated(
        "the hello carries no current tenant credential (the data-plane ticket an "
        "authenticated RPC connection is handed; a tenant removed from the tenants file, or "
        "whose token or TLS subject changed, has none)");
  const Tenant* t = s->tenant_of[it->second];
  if (!t->local)
    return Status::Unauthenticated("tenant '" + t->name +
                                   "' may not map this server's export: the tenants file "
                                   "allows it to a tenant with local=yes");
  return Status::OK();
}

int64_t Tenancy::ConnectionSlots(int id, int64_t max_connections) const {
  if (max_connections <= 0) return 0;
  auto s = Current();
  double total = 0;
  for (const Tenant& t : s->table->tenants()) total += t.weight;
  const Tenant* t =
      id >= 0 && static_cast<size_t>(id) < s->tenant_of.size() ? s->tenant_of[id] : nullptr;
  const double share = t != nullptr && total > 0 ? t->weight / total : 1;
  return std::max<int64_t>(kMinConnectionsPerTenant,
                           static_cast<int64_t>(static_cast<double>(max_connections) * share));
}

std::string Tenancy::Name(int id) const {
  return id >= 0 && id < ids_.load() ? usage_[id]->name : "?";
}

namespace {

// Batch work runs its thread at kBatchNice, online work at 0, so that on a
// saturated host (every core busy with batch requests) the kernel runs an
// online request's thread first: the scheduler orders who starts, this orders
// who gets the CPU once started. Raising a thread's nice is always allowed;
// lowering it back needs CAP_SYS_NICE or RLIMIT_NICE, so it is done only where
// a probe shows it can be undone (else a pooled thread that once ran batch work
// would run online work niced).
//
// With SchedulerOptions::online_io_first, the same for the device: the
// thread's reads are of class online or batch (storage/io_gate.h), so that
// while an online query's feature reads wait, batch reads keep only a few in
// flight and the query's reads do not queue behind a hundred of theirs.
constexpr int kBatchNice = 5;
// A request refused over max_inflight_bytes could pass once one of the
// tenant's requests is answered: no time is known, a short one is said.
constexpr double kInflightRetryS = 0.005;
// The least time between two refusals of one tenant (a tenant hammering from
// many connections is paced as one).
constexpr double kRefusalSpacingS = 0.002;

bool CanUndoNice() {
  static const bool can = [] {
    bool ok = false;
    std::thread probe([&ok] {
      const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
      if (setpriority(PRIO_PROCESS, tid, kBatchNice) != 0) return;
      ok = setpriority(PRIO_PROCESS, tid, 0) == 0;
    });
    probe.join();
    return ok;
  }();
  return can;
}

// The thread's nice for the request's class (the CPU's order is the
// thread's own: a nice value belongs to a thread). The device's order travels
// with the reads instead (Admission::read_class).
void RunAtClassPriority(bool online) {
  thread_local int class_now = 0;  // 0: as started, 1: online, 2: batch
  const int want = online ? 1 : 2;
  if (want == class_now) return;
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (CanUndoNice()) (void)setpriority(PRIO_PROCESS, tid, online ? 0 : kBatchNice);
  class_now = want;
}

}  // namespace

Status Tenancy::Admit(int tenant, double est_cost, int64_t est_feature_bytes, Admission* a,
                      int64_t update_bytes) {
  auto s = Current();
  if (tenant < 0 || tenant >= static_cast<int>(s->tenant_of.size()))
    return Status::Internal("a request of tenant id " + std::to_string(tenant));
  Usage& u = *usage_[tenant];
  const Tenant* t = s->tenant_of[tenant];
  // A tenant removed from the file by a reload is refused, never served without quotas
  // (its connections are re-resolved at their next request; this closes the gap).
  if (t == nullptr)
    return Status::Unauthenticated("tenant '" + u.name +
                                   "' is no longer in this server's tenants file");
  a->tenant = tenant;
  a->est_cost = est_cost;
  a->read_class = storage::ReadClass::kNone;
  // The thread's class priority before anything else, refusals included (a
  // tenant hammering past its quota must not outrun the others on the CPU).
  // Only where both classes are served: otherwise there is nothing to put first.
  if (s->has_online) {
    RunAtClassPriority(t->online);
    if (online_io_first_)
      a->read_class = t->online ? storage::ReadClass::kOnline : storage::ReadClass::kBatch;
  }
  {
    std::lock_guard<std::mutex> lock(u.mu);
    const auto now = std::chrono::steady_clock::now();
    const double dt = u.refilled == std::chrono::steady_clock::time_point{}
                          ? 1.0
                          : std::chrono::duration<double>(now - u.refilled).count();
    u.refilled = now;
    auto refuse = [&](const std::string& quota, const std::string& value, double retry_s) {
      ++u.refused_quota;
      // Refusals of one tenant leave kRefusalSpacingS apart at least, over all
      // its connections: each is held until its turn (PartitionService::Run).
      const auto at = std::max(now, u.next_refusal);
      u.next_refusal = at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(kRefusalSpacingS));
      retry_s = std::max(retry_s, std::chrono::duration<double>(at - now).count());
      a->retry_after_s = retry_s;
      a->hold_refusal = !t->online;
      return Status::ResourceExhausted(
          "tenant '" + t->name + "' is over its quota " + quota + " (" + value +
          "): this request is refused, the others' go on; it could pass in " +
          std::to_string(static_cast<int64_t>(std::ceil(retry_s * 1e3))) + " ms");
    };
    if (t->max_requests_per_s > 0) {
      u.request_tokens =
          std::min(t->max_requests_per_s, u.request_tokens + dt * t->max_requests_per_s);
      if (u.request_tokens < 1)
        return refuse("max_requests_per_s", Number(t->max_requests_per_s),
                      (1 - u.request_tokens) / t->max_requests_per_s);
    }
    if (t->max_feature_bytes_per_s > 0 && est_feature_bytes > 0) {
      u.feature_tokens =
          std::min(t->max_feature_bytes_per_s, u.feature_tokens + dt * t->max_feature_bytes_per_s);
      // A request larger than one second's worth passes when the bucket is
      // full (and leaves it in debt): it would never pass otherwise.
      const double need =
          std::min(static_cast<double>(est_feature_bytes), t->max_feature_bytes_per_s);
      if (u.feature_tokens < need)
        return refuse("max_feature_bytes_per_s", Number(t->max_feature_bytes_per_s),
                      (need - u.feature_tokens) / t->max_feature_bytes_per_s);
    }
    if (t->max_update_bytes_per_s > 0 && update_bytes > 0) {
      u.update_tokens =
          std::min(t->max_update_bytes_per_s, u.update_tokens + dt * t->max_update_bytes_per_s);
      const double need = std::min(static_cast<double>(update_bytes), t->max_update_bytes_per_s);
      if (u.update_tokens < need)
        return refuse("max_update_bytes_per_s", Number(t->max_update_bytes_per_s),
                      (need - u.update_tokens) / t->max_update_bytes_per_s);
    }
    const int64_t held = static_cast<int64_t>(est_cost);
    if (t->max_inflight_bytes > 0 && u.held_bytes + held > t->max_inflight_bytes)
      return refuse("max_inflight_bytes",
                    std::to_string(t->max_inflight_bytes) + " bytes; " +
                        std::to_string(u.held_bytes) + " held",
                    kInflightRetryS);
    if (t->max_requests_per_s > 0) u.request_tokens -= 1;
    if (t->max_feature_bytes_per_s > 0) u.feature_tokens -= static_cast<double>(est_feature_bytes);
    if (t->max_update_bytes_per_s > 0) u.update_tokens -= static_cast<double>(update_bytes);
    a->update_bytes = update_bytes;
    u.held_bytes += held;
    a->held_bytes = held;
  }
  if (schedule_) {
    Status st = scheduler_.Acquire(tenant, est_cost, &a->grant);
    if (!st.ok()) {
      {
        std::lock_guard<std::mutex> lock(u.mu);
        u.held_bytes -= a->held_bytes;
      }
      a->held_bytes = 0;
      if (st.code() == Status::Code::kResourceExhausted) {
        ++u.refused_busy;
        return Status::ResourceExhausted("tenant '" + u.name + "': " + st.message());
      }
      return st;
    }
    a->waited_s = a->grant.waited_s;
  }
  ++u.waits[BucketOf(a->waited_s)];
  u.wait_us_sum += static_cast<int64_t>(a->waited_s * 1e6);
  return Status::OK();
}

void Tenancy::Done(Admission* a, bool ok, double actual_cost, int64_t sampled_edges,
                   int64_t feature_rows, int64_t feature_bytes) {
  if (a->tenant < 0) return;
  Usage& u = *usage_[a->tenant];
  if (a->grant.active) scheduler_.Release(&a->grant, actual_cost);
  if (a->held_bytes > 0) {
    std::lock_guard<std::mutex> lock(u.mu);
    u.held_bytes -= a->held_bytes;
  }
  a->held_bytes = 0;
  ++u.requests;
  if (!ok) ++u.errors;
  u.cost += static_cast<int64_t>(actual_cost);
  u.sampled_edges += sampled_edges;
  u.feature_rows += feature_rows;
  u.feature_bytes += feature_bytes;
  if (ok) u.update_bytes += a->update_bytes;
  a->tenant = -1;
}

void Tenancy::AddLocalWork(int tenant, int64_t requests, int64_t edges, int64_t feature_rows,
                           int64_t bytes) {
  if (tenant < 0 || tenant >= ids_.load()) return;
  Usage& u = *usage_[tenant];
  u.local_requests += requests;
  u.local_edges += edges;
  u.local_rows += feature_rows;
  u.local_bytes += bytes;
}

namespace {
double Quantile(const std::atomic<int64_t>* b, double q) {
  int64_t total = 0;
  for (int k = 0; k < Tenancy::kWaitBuckets; ++k) total += b[k].load();
  if (total == 0) return 0;
  const double want = q * static_cast<double>(total);
  int64_t seen = 0;
  for (int k = 0; k < Tenancy::kWaitBuckets; ++k) {
    seen += b[k].load();
    if (static_cast<double>(seen) >= want) return BucketUpperSeconds(k);
  }
  return BucketUpperSeconds(Tenancy::kWaitBuckets - 1);
}
}  // namespace

nlohmann::json Tenancy::StatsJson() const {
  auto s = Current();
  const int n = static_cast<int>(s->tenant_of.size());
  double total_cost = 0, total_weight = 0;
  for (int id = 0; id < n; ++id) {
    total_cost += static_cast<double>(usage_[id]->cost.load());
    if (s->tenant_of[id] != nullptr && usage_[id]->requests.load() > 0)
      total_weight += s->tenant_of[id]->weight;
  }
  nlohmann::json list = nlohmann::json::array();
  for (int id = 0; id < n; ++id) {
    const Usage& u = *usage_[id];
    const Tenant* t = s->tenant_of[id];
    const double cost = static_cast<double>(u.cost.load());
    list.push_back(
        {{"tenant", u.name},
         {"in_file", t != nullptr},
         {"weight", t ? t->weight : 1.0},
         {"class", t && t->online ? "online" : "batch"},
         {"requests", u.requests.load()},
         {"errors", u.errors.load()},
         {"refused_quota", u.refused_quota.load()},
         {"refused_busy", u.refused_busy.load()},
         {"bytes", u.cost.load()},
         {"sampled_edges", u.sampled_edges.load()},
         {"feature_rows", u.feature_rows.load()},
         {"feature_bytes", u.feature_bytes.load()},
         {"update_bytes", u.update_bytes.load()},
         {"queue_wait_p50_s", Quantile(u.waits, 0.5)},
         {"queue_wait_p99_s", Quantile(u.waits, 0.99)},
         {"share", total_cost > 0 ? cost / total_cost : 0.0},
         {"weight_share",
          t && total_weight > 0 && u.requests.load() > 0 ? t->weight / total_weight : 0.0},
         {"local",
          {{"requests", u.local_requests.load()},
           {"sampled_edges", u.local_edges.load()},
           {"feature_rows", u.local_rows.load()},
           {"bytes", u.local_bytes.load()}}}});
  }
  return {{"scheduling", schedule_},
          {"waiting", scheduler_.waiting()},
          {"running", scheduler_.running()},
          {"tenants", list}};
}

void Tenancy::Prometheus(PrometheusText* out) const {
  auto s = Current();
  const int n = static_cast<int>(s->tenant_of.size());
  auto label = [&](int id) { return "tenant=\"" + usage_[id]->name + "\""; };
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out->Family(name, type, help);
    for (int id = 0; id < n; ++id) out->Sample(name, label(id), value(*usage_[id]));
  };
  family("fanout_tenant_requests_total", "counter", "Data requests served, per tenant.",
         [](const Usage& u) { return u.requests.load(); });
  family("fanout_tenant_errors_total", "counter", "Data requests that failed, per tenant.",
         [](const Usage& u) { return u.errors.load(); });
  family("fanout_tenant_refused_total", "counter",
         "Requests refused at once: over one of the tenant's quotas.",
         [](const Usage& u) { return u.refused_quota.load(); });
  family("fanout_tenant_refused_busy_total", "counter",
         "Requests refused after waiting the most for their turn (a saturated server).",
         [](const Usage& u) { return u.refused_busy.load(); });
  family("fanout_tenant_bytes_total", "counter",
         "Request and reply bytes of the tenant's data requests (the scheduler's cost).",
         [](const Usage& u) { return u.cost.load(); });
  family("fanout_tenant_sampled_edges_total", "counter", "Edges sampled for the tenant.",
         [](const Usage& u) { return u.sampled_edges.load(); });
  family("fanout_tenant_feature_bytes_total", "counter", "Feature bytes served to the tenant.",
         [](const Usage& u) { return u.feature_bytes.load(); });
  family("fanout_tenant_update_bytes_total", "counter",
         "Update batch bytes the tenant applied to a live partition.",
         [](const Usage& u) { return u.update_bytes.load(); });
  family("fanout_tenant_local_bytes_total", "counter",
         "Bytes the tenant's same-host clients read from the export themselves (reported).",
         [](const Usage& u) { return u.local_bytes.load(); });
  out->Family("fanout_tenant_queue_wait_seconds", "summary",
              "Time the tenant's requests waited for their turn (quantiles).");
  for (int id = 0; id < n; ++id) {
    const Usage& u = *usage_[id];
    out->Sample("fanout_tenant_queue_wait_seconds", label(id) + ",quantile=\"0.5\"",
                Quantile(u.waits, 0.5));
    out->Sample("fanout_tenant_queue_wait_seconds", label(id) + ",quantile=\"0.99\"",
                Quantile(u.waits, 0.99));
    int64_t count = 0;
    for (int k = 0; k < kWaitBuckets; ++k) count += u.waits[k].load();
    out->Sample("fanout_tenant_queue_wait_seconds_sum", label(id),
                static_cast<double>(u.wait_us_sum.load()) * 1e-6);
    out->Sample("fanout_tenant_queue_wait_seconds_count", label(id), count);
  }
  out->Family("fanout_tenant_weight", "gauge", "The tenant's weight (the tenants file).");
  for (int id = 0; id < n; ++id)
    out->Sample("fanout_tenant_weight", label(id),
                s->tenant_of[id] != nullptr ? s->tenant_of[id]->weight : 0.0);
}

}  // namespace fanout::server
