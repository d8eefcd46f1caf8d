#include "server/scheduler.h"

#include <algorithm>
#include <limits>

namespace fanout::server {

namespace {
constexpr double kDecay = 0.995;  // per pick: the classes' recent usage
}  // namespace

void FairQueue::SetTenants(const std::vector<TenantClass>& tenants) {
  tenants_ = tenants;
  finish_.resize(tenants_.size(), 0);
  for (size_t t = 0; t < tenants_.size(); ++t)
    finish_[t] = std::max(finish_[t], v_[tenants_[t].online ? 1 : 0]);
}

int64_t FairQueue::Enqueue(int tenant, double est_cost) {
  const TenantClass& t = tenants_[static_cast<size_t>(tenant)];
  double& f = finish_[static_cast<size_t>(tenant)];
  const double start = std::max(v_[t.online ? 1 : 0], f);
  const double charge = std::max(est_cost, 1.0) / t.weight;
  f = start + charge;
  waiting_.push_back({next_id_, tenant, start, charge});
  return next_id_++;
}

void FairQueue::Cancel(int64_t id) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (it->id == id) {
      double& f = finish_[static_cast<size_t>(it->tenant)];
      f = std::max(v_[tenants_[static_cast<size_t>(it->tenant)].online ? 1 : 0], f - it->charge);
      waiting_.erase(it);
      return;
    }
}

bool FairQueue::HasOnlineWaiting() const {
  for (const Waiting& w : waiting_)
    if (tenants_[static_cast<size_t>(w.tenant)].online) return true;
  return false;
}

int FairQueue::TenantOf(int64_t id) const {
  for (const Waiting& w : waiting_)
    if (w.id == id) return w.tenant;
  return -1;
}

int64_t FairQueue::Pick(bool online_only) {
  if (waiting_.empty()) return -1;
  bool any_online = false, any_batch = false;
  for (const Waiting& w : waiting_)
    (tenants_[static_cast<size_t>(w.tenant)].online ? any_online : any_batch) = true;
  if (online_only && !any_online) return -1;
  // Online first while its recent share is under its cap (or batch waits not).
  const double total = used_online_ + used_batch_;
  const bool online =
      online_only ||
      (any_online && (!any_batch || total <= 0 || used_online_ / total < online_share_));
  auto best = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (tenants_[static_cast<size_t>(it->tenant)].online != online) continue;
    if (best == waiting_.end() || it->start < best->start) best = it;  // ties: the earlier
  }
  const Waiting w = *best;
  waiting_.erase(best);
  double& v = v_[online ? 1 : 0];
  v = std::max(v, w.start);
  return w.id;
}

void FairQueue::Finish(int tenant, double est_cost, double actual_cost) {
  const TenantClass& t = tenants_[static_cast<size_t>(tenant)];
  finish_[static_cast<size_t>(tenant)] +=
      (std::max(actual_cost, 1.0) - std::max(est_cost, 1.0)) / t.weight;
  used_online_ *= kDecay;
  used_batch_ *= kDecay;
  (t.online ? used_online_ : used_batch_) += std::max(actual_cost, 1.0);
}

FairScheduler::FairScheduler(SchedulerOptions options) : o_(options), q_(options.online_share) {}

void FairScheduler::SetTenants(const std::vector<FairQueue::TenantClass>& tenants) {
  std::lock_guard<std::mutex> lock(mu_);
  q_.SetTenants(tenants);
  online_.clear();
  weight_.clear();
  weights_ = 0;
  for (const auto& t : tenants) {
    online_.push_back(t.online);
    weight_.push_back(t.weight);
    weights_ += t.weight;
  }
  waiting_of_.resize(tenants.size(), 0);
}

int64_t FairScheduler::WaitingCapLocked(int t) const {
  const double share = weights_ > 0 ? weight_[static_cast<size_t>(t)] / weights_ : 1;
  return std::max<int64_t>(o_.min_waiting_per_tenant,
                           static_cast<int64_t>(static_cast<double>(o_.max_waiting) * share));
}

int64_t FairScheduler::WaitingCap(int t) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (t < 0 || static_cast<size_t>(t) >= weight_.size()) return 0;
  return WaitingCapLocked(t);
}

void FairScheduler::DispatchLocked() {
  for (;;) {
    bool online_slot = false;
    int64_t id = -1;
    if (running_ < o_.slots) {
      id = q_.Pick(false);
    } else if (running_online_slots_ < o_.online_slots && q_.HasOnlineWaiting()) {
      id = q_.Pick(true);
      online_slot = true;
    }
    if (id < 0) return;
    auto it = std::find_if(tickets_.begin(), tickets_.end(),
                           [id](const auto& t) { return t.first == id; });
    if (it == tickets_.end()) continue;  // cannot happen: every queued id has a ticket
    Ticket* t = it->second;
    tickets_.erase(it);
    t->granted = true;
    t->online_slot = online_slot;
    if (online_slot)
      ++running_online_slots_;
    else
      ++running_;
    t->cv.notify_one();
  }
}

Status FairScheduler::Acquire(int tenant, double est_cost, Grant* grant) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) return Status::Aborted("the server is stopping");
  if (tenant < 0 || static_cast<size_t>(tenant) >= online_.size())
    return Status::Internal("a request of no known tenant");
  if (q_.waiting() >= o_.max_waiting)
    return Status::ResourceExhausted("the server has " + std::to_string(q_.waiting()) +
                                     " requests waiting already: try again later");
  int64_t& mine = waiting_of_[static_cast<size_t>(tenant)];
  const int64_t cap = WaitingCapLocked(tenant);
  if (mine >= cap)
    return Status::ResourceExhausted("this tenant has " + std::to_string(mine) +
                                     " requests waiting, its weight's share of " +
                                     "the server's wait (" + std::to_string(cap) +
                                     "): more connections buy no more places; try again later");
  Ticket ticket;
  const int64_t id = q_.Enqueue(tenant, est_cost);
  tickets_.emplace_back(id, &ticket);
  ++mine;
  DispatchLocked();
  const auto deadline = t0 + o_.max_wait;
  while (!ticket.granted && !stopped_) {
    if (ticket.cv.wait_until(lock, deadline) == std::cv_status::timeout && !ticket.granted) break;
  }
  --waiting_of_[static_cast<size_t>(tenant)];  // granted, or given up: no longer waiting
  if (!ticket.granted) {
    q_.Cancel(id);  // not served: its charge comes back
    tickets_.erase(std::remove_if(tickets_.begin(), tickets_.end(),
                                  [id](const auto& t) { return t.first == id; }),
                   tickets_.end());
    if (stopped_) return Status::Aborted("the server is stopping");
    return Status::ResourceExhausted("the request waited " + std::to_string(o_.max_wait.count()) +
                                     " ms for its turn: the server is saturated (its other "
                                     "tenants' work, or this tenant's own)");
  }
  grant->tenant = tenant;
  grant->est_cost = est_cost;
  grant->online_slot = ticket.online_slot;
  grant->waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  grant->active = true;
  return Status::OK();
}

void FairScheduler::Release(Grant* grant, double actual_cost) {
  if (!grant->active) return;
  std::lock_guard<std::mutex> lock(mu_);
  grant->active = false;
  q_.Finish(grant->tenant, grant->est_cost, actual_cost);
  if (grant->online_slot)
    --running_online_slots_;
  else
    --running_;
  DispatchLocked();
}

void FairScheduler::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  for (auto& [id, t] : tickets_) t->cv.notify_one();
}

int64_t FairScheduler::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return q_.waiting();
}

int FairScheduler::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_ + running_online_slots_;
}

}  // namespace fanout::server
