#include "client/online.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

namespace fanout::client {

// One query: the worker fills status and batch; the caller waits for done
// until its deadline, then leaves (the worker's result is dropped).
struct OnlineSampler::Call {
  std::vector<int64_t> seeds;
  QueryOptions options;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // GUARDED_BY(mu)
  Status status;      // GUARDED_BY(mu)
  Batch batch;        // GUARDED_BY(mu)
};

Status OnlineSampler::Create(std::shared_ptr<Source> source, int workers,
                             std::unique_ptr<OnlineSampler>* out) {
  if (!source) return Status::InvalidArgument("OnlineSampler: no source");
  if (workers < 1 || workers > 256)
    return Status::InvalidArgument("OnlineSampler: workers " + std::to_string(workers) +
                                   " must be in [1, 256]");
  std::unique_ptr<OnlineSampler> s(new OnlineSampler());
  s->source_ = std::move(source);
  for (int i = 0; i < workers; ++i) s->workers_.emplace_back([p = s.get()] { p->Work(); });
  *out = std::move(s);
  return Status::OK();
}

OnlineSampler::~OnlineSampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void OnlineSampler::Work() {
  std::unique_ptr<Session> session;  // this thread's, opened on first use (and after a failure)
  for (;;) {
    std::shared_ptr<Call> call;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    Status st;
    Batch batch;
    if (!session) st = source_->NewSession(&session);
    if (st.ok()) {
      LoaderOptions o;
      o.fanouts = call->options.num_neighbors;
      o.batch_size = static_cast<int64_t>(call->seeds.size());
      o.shuffle = false;
      o.num_workers = 1;
      o.features = call->options.features;
      o.labels = call->options.labels;
      o.edge_ids = call->options.edge_ids;
      o.ppr = call->options.ppr;
      o.ppr_options = call->options.ppr_options;
      BatchSeeds seeds;
      seeds.nodes = call->seeds;
      st = SampleBatch(*source_, session.get(), seeds, call->options.request_seed, o, &batch);
      // A failed call may leave a reply in flight: the next query starts afresh.
      if (!st.ok() && st.code() != Status::Code::kInvalidArgument) session.reset();
    }
    {
      std::lock_guard<std::mutex> lock(call->mu);
      call->status = std::move(st);
      call->batch = std::move(batch);
      call->done = true;
    }
    call->cv.notify_all();
  }
}

Status OnlineSampler::Query(const std::vector<int64_t>& seeds, const QueryOptions& options,
                            Batch* out) {
  const auto start = std::chrono::steady_clock::now();
  if (seeds.empty() || seeds.size() > static_cast<size_t>(kMaxSeeds))
    return Status::InvalidArgument("a query takes 1 to " + std::to_string(kMaxSeeds) +
                                   " seeds, not " + std::to_string(seeds.size()));
  const int64_t n = source_->num_nodes();
  for (int64_t v : seeds)
    if (v < 0 || v >= n)
      return Status::InvalidArgument("query seed " + std::to_string(v) + " is outside [0, " +
                                     std::to_string(n) + ")");
  if (options.num_neighbors.empty())
    return Status::InvalidArgument("a query needs at least one hop (num_neighbors)");
  if (options.ppr && options.num_neighbors.size() != 1)
    return Status::InvalidArgument("a PPR query has one hop: num_neighbors = [top_k], not " +
                                   std::to_string(options.num_neighbors.size()) + " hops");
  if (options.deadline_ms < 0)
    return Status::InvalidArgument("deadline_ms " + std::to_string(options.deadline_ms) +
                                   " must be >= 0 (0 = none)");
  auto call = std::make_shared<Call>();
  call->seeds = seeds;
  call->options = options;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return Status::Unavailable("OnlineSampler is closing");
    queue_.push_back(call);
    ++stats_.queries;
  }
  cv_.notify_one();
  std::unique_lock<std::mutex> lock(call->mu);
  const auto ready = [&] { return call->done; };
  if (options.deadline_ms > 0) {
    const auto until = start + std::chrono::milliseconds(options.deadline_ms);
    if (!call->cv.wait_until(lock, until, ready)) {
      lock.unlock();
      {
        // Still queued: nobody needs it any more.
        std::lock_guard<std::mutex> q(mu_);
        auto it = std::find(queue_.begin(), queue_.end(), call);
        if (it != queue_.end()) queue_.erase(it);
        ++stats_.deadline_exceeded;
      }
      const double took =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      char buf[128];
      std::snprintf(buf, sizeof buf, "the query took over its deadline of %d ms (%.1f ms)",
                    options.deadline_ms, took);
      return Status::DeadlineExceeded(buf);
    }
  } else {
    call->cv.wait(lock, ready);
  }
  if (!call->status.ok()) {
    std::lock_guard<std::mutex> q(mu_);
    ++stats_.failed;
    return call->status;
  }
  *out = std::move(call->batch);
  return Status::OK();
}

OnlineSampler::Stats OnlineSampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace fanout::client
