#include "client/loader.h"

#include <torch/torch.h>

#include <cstdlib>
#include <stdexcept>

#include "client/region_pool.h"
#include "common/id_range.h"
#include "common/random.h"

namespace fanout::client {

struct NodeLoader::Slot {
  bool ready = false;
  Status status;
  MiniBatch batch;
};

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string(name) + "='" + v + "' is not an integer");
  }
}

// A tensor that owns a PodVector's memory, without copying it.
at::Tensor Wrap(PodVector<int64_t>&& v) {
  auto* holder = new PodVector<int64_t>(std::move(v));
  int64_t n = static_cast<int64_t>(holder->size());
  return torch::from_blob(holder->data(), {n}, [holder](void*) { delete holder; }, torch::kLong);
}

}  // namespace

Status GatherFeaturesOnDevice(DeviceFeatureFetcher& fetcher, Session& session, ArrayView<const int64_t> ids,
                              int device, at::Tensor* out) {
  if (!torch::cuda::is_available())
    return Status::NotSupported("the GPU feature cache needs a CUDA-enabled LibTorch; this one has no CUDA");
  const int64_t n = static_cast<int64_t>(ids.size()), d = fetcher.feature_dim();
  auto buffer = std::make_unique<cache::DeviceBuffer>();
  FANOUT_RETURN_IF_ERROR(cache::DeviceBuffer::Allocate(static_cast<size_t>(n * d) * 4, device, buffer.get()));
  FANOUT_RETURN_IF_ERROR(fetcher.Fetch(session, ids, static_cast<float*>(buffer->data()), nullptr));
  void* ptr = buffer->data();
  cache::DeviceBuffer* raw = buffer.release();  // the tensor's deleter owns the buffer now
  *out = torch::from_blob(ptr, {n, d}, [raw](void*) { delete raw; },
                          torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA, device));
  return Status::OK();
}

NodeLoader::NodeLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds, LoaderOptions options)
    : source_(std::move(source)), seeds_(std::move(seeds)), options_(std::move(options)) {
  if (!source_) throw std::invalid_argument("NodeLoader: no source");
  buffers_ = source_->feature_buffers();
  if (options_.batch_size < 1) throw std::invalid_argument("NodeLoader: batch_size must be >= 1");
  for (int64_t f : options_.fanouts)
    if (f < -1) throw std::invalid_argument("NodeLoader: fanout " + std::to_string(f) + " is invalid (use -1 or >= 0)");
  if (options_.num_workers < 1) throw std::invalid_argument("NodeLoader: num_workers must be >= 1");
  if (options_.prefetch < 1) throw std::invalid_argument("NodeLoader: prefetch must be >= 1");
  world_ = options_.world_size >= 0 ? options_.world_size : EnvInt("WORLD_SIZE", 1);
  rank_ = options_.rank >= 0 ? options_.rank : EnvInt("RANK", 0);
  if (world_ < 1 || rank_ < 0 || rank_ >= world_)
    throw std::invalid_argument("NodeLoader: rank " + std::to_string(rank_) + " is outside [0, world_size=" +
                                std::to_string(world_) + ")");
  if (options_.gpu_cache && !torch::cuda::is_available())
    throw std::invalid_argument("NodeLoader: gpu_cache needs a CUDA-enabled LibTorch; this one has no CUDA");
  IdRangeCheck seed;
  seed.what = "seed";
  Status range = CheckIdsInRange(seeds_, 0, source_->num_nodes(), seed);
  if (!range.ok()) throw std::invalid_argument("NodeLoader: " + range.message());
}

NodeLoader::~NodeLoader() { StopWorkers(); }

std::vector<int64_t> NodeLoader::EpochSeeds(int64_t epoch) const {
  std::vector<int64_t> perm = seeds_;
  if (options_.shuffle) {
    SplitMix64 rng(Mix64(options_.seed ^ (static_cast<uint64_t>(epoch) * kGolden64)));
    for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i)
      std::swap(perm[i], perm[static_cast<int64_t>(DrawBelow(rng.Next(), static_cast<uint64_t>(i + 1)))]);
  }
  std::vector<int64_t> mine;
  mine.reserve(perm.size() / world_ + 1);
  for (size_t i = rank_; i < perm.size(); i += world_) mine.push_back(perm[i]);
  return mine;
}

int64_t NodeLoader::num_batches() const {
  int64_t n = static_cast<int64_t>(seeds_.size());
  int64_t mine = n / world_ + (rank_ < n % world_ ? 1 : 0);
  return options_.drop_last ? mine / options_.batch_size : (mine + options_.batch_size - 1) / options_.batch_size;
}

void NodeLoader::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void NodeLoader::SetEpoch(int64_t epoch) {
  StopWorkers();
  while (static_cast<int>(sessions_.size()) < options_.num_workers) {
    std::unique_ptr<Session> s;
    Status st = source_->NewSession(&s);
    if (!st.ok()) throw LoaderError(std::move(st));
    sessions_.push_back(std::move(s));
  }
  epoch_ = epoch;
  running_ = true;
  order_ = EpochSeeds(epoch);
  batches_ = num_batches();
  {
    std::lock_guard<std::mutex> lock(mu_);
    slots_.clear();
    consumed_ = 0;
    next_claim_ = 0;
    stop_ = false;
  }
  for (int w = 0; w < options_.num_workers; ++w) workers_.emplace_back([this, w] { Worker(w); });
}

void NodeLoader::Worker(int w) {
  Session* session = sessions_[w].get();
  std::unique_ptr<DeviceFeatureFetcher> fetcher;
  if (options_.features && options_.gpu_cache) fetcher = std::make_unique<DeviceFeatureFetcher>(options_.gpu_cache.get());
  for (;;) {
    int64_t b;
    Slot* slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || (next_claim_ < batches_ && next_claim_ < consumed_ + options_.prefetch); });
      if (stop_) return;
      b = next_claim_++;
      slots_.push_back(std::make_unique<Slot>());
      slot = slots_.back().get();
    }
    SessionStats before = session->stats();
    const int64_t staged_before = fetcher ? fetcher->stats().staged_bytes : 0;
    MiniBatch mb;
    Status st;
    try {
      st = Produce(session, fetcher.get(), b, &mb);
    } catch (const std::exception& e) {
      st = Status::Internal(std::string("building batch tensors: ") + e.what());
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      const SessionStats& after = session->stats();
      stats_.network_wait_s += after.network_wait_s - before.network_wait_s;
      stats_.feature_bytes += after.feature_bytes - before.feature_bytes;
      stats_.cache_lookups += after.cache_lookups - before.cache_lookups;
      stats_.cache_hits += after.cache_hits - before.cache_hits;
      stats_.cache_bytes += after.cache_bytes - before.cache_bytes;
      stats_.thrift_bytes += after.thrift_bytes - before.thrift_bytes;
      stats_.ucx_bytes += after.ucx_bytes - before.ucx_bytes;
      stats_.placed_bytes += after.placed_bytes - before.placed_bytes;
      stats_.staged_bytes += after.staged_bytes - before.staged_bytes;
      if (fetcher) stats_.staged_bytes += fetcher->stats().staged_bytes - staged_before;
      stats_.fallbacks += after.fallbacks - before.fallbacks;
      stats_.retries += after.retries - before.retries;
      stats_.failovers += after.failovers - before.failovers;
      if (st.ok()) {
        stats_.sampled_edges += mb.edge_index.size(1);
        stats_.sampled_nodes += mb.n_id.size(0);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot->batch = std::move(mb);
      slot->status = std::move(st);
      slot->ready = true;
    }
    cv_.notify_all();
  }
}

Status NodeLoader::Produce(Session* session, DeviceFeatureFetcher* fetcher, int64_t b, MiniBatch* out) {
  const int64_t begin = b * options_.batch_size;
  const int64_t end = std::min<int64_t>(static_cast<int64_t>(order_.size()), begin + options_.batch_size);
  ArrayView<const int64_t> seeds(order_.data() + begin, static_cast<size_t>(end - begin));
  sampler::MultiHopOptions mo;
  mo.fanouts = options_.fanouts;
  mo.sampling.replace = options_.replace;
  mo.sampling.weighted = options_.weighted;
  mo.sampling.with_edge_ids = options_.edge_ids;
  mo.induced = options_.subgraph;
  uint64_t request_seed = NodeKey(options_.seed, static_cast<uint64_t>(epoch_),
                                  static_cast<uint64_t>(b) * world_ + static_cast<uint64_t>(rank_));
  sampler::SampledSubgraph sub;
  FANOUT_RETURN_IF_ERROR(session->Sample(seeds, request_seed, mo, &sub));
  const int64_t n = static_cast<int64_t>(sub.n_id.size());
  out->batch_size = sub.batch_size;
  out->epoch = epoch_;
  out->index = b;
  out->num_sampled_nodes = sub.num_sampled_nodes;
  out->num_sampled_edges = sub.num_sampled_edges;
  out->n_id = Wrap(std::move(sub.n_id));
  const int64_t* ids = out->n_id.data_ptr<int64_t>();
  ArrayView<const int64_t> id_view(ids, static_cast<size_t>(n));
  out->edge_index = torch::stack({Wrap(std::move(sub.row)), Wrap(std::move(sub.col))});
  int64_t at = 0;
  for (int64_t e : out->num_sampled_edges) {
    out->hop_edge_index.push_back(out->edge_index.narrow(1, at, e));
    at += e;
  }
  if (options_.edge_ids) out->edge_id = Wrap(std::move(sub.edge_id));
  if (options_.features && options_.gpu_cache) {
    FANOUT_RETURN_IF_ERROR(
        GatherFeaturesOnDevice(*fetcher, *session, id_view, options_.gpu_cache->device(), &out->x));
  } else if (options_.features) {
    // In a data-plane region where the source has them: servers on this host
    // then write each row into x themselves.
    const int64_t dim = source_->feature_dim();
    std::shared_ptr<rpc::DataRegion> region;
    if (buffers_ && n > 0 && buffers_->Acquire(static_cast<size_t>(n * dim) * 4, &region).ok()) {
      out->x = torch::from_blob(
          region->data(), {n, dim}, [region](void*) mutable { region.reset(); }, torch::kFloat);
    } else {
      out->x = torch::empty({n, dim}, torch::kFloat);
    }
    FANOUT_RETURN_IF_ERROR(session->Features(id_view, out->x.data_ptr<float>()));
  }
  if (options_.labels) {
    out->y = torch::empty({n}, torch::kLong);
    FANOUT_RETURN_IF_ERROR(session->Labels(id_view, out->y.data_ptr<int64_t>()));
  }
  if (options_.original_ids) {
    out->original_id = torch::empty({n}, torch::kLong);
    FANOUT_RETURN_IF_ERROR(session->OriginalIds(id_view, out->original_id.data_ptr<int64_t>()));
  }
  return Status::OK();
}

bool NodeLoader::Next(MiniBatch* out) {
  auto now = std::chrono::steady_clock::now();
  if (timing_) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.seconds += std::chrono::duration<double>(now - last_next_).count();
  }
  timing_ = true;
  last_next_ = now;
  if (!running_) SetEpoch(pending_epoch_);
  std::unique_ptr<Slot> slot;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (consumed_ >= batches_) {
      lock.unlock();
      StopWorkers();
      running_ = false;
      pending_epoch_ = epoch_ + 1;  // the next call starts the following epoch
      return false;
    }
    auto t0 = std::chrono::steady_clock::now();
    cv_.wait(lock, [&] { return !slots_.empty() && slots_.front()->ready; });
    {
      std::lock_guard<std::mutex> slock(stats_mu_);
      stats_.consumer_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    slot = std::move(slots_.front());
    slots_.pop_front();
    ++consumed_;
  }
  cv_.notify_all();
  if (!slot->status.ok()) throw LoaderError(slot->status);
  *out = std::move(slot->batch);
  std::lock_guard<std::mutex> lock(stats_mu_);
  ++stats_.batches;
  return true;
}

LoaderStats NodeLoader::stats() const {
  LoaderStats s;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    s = stats_;
  }
  s.servers = source_->Health();
  return s;
}

}  // namespace fanout::client
