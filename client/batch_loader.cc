#include "client/batch_loader.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "client/detail/batch_sampling.h"
#include "client/detail/stage_timer.h"
#include "common/id_range.h"
#include "common/random.h"
#include "sampler/temporal.h"

namespace fanout::client {

struct BatchLoader::Slot {
  bool ready = false;
  Status status;
  Batch batch;
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

}  // namespace

using detail::CheckSampling;
using detail::Int64Array;
using detail::LinkSeedNodes;
using detail::SampleAndFetch;

Status GatherFeaturesOnDevice(DeviceFeatureFetcher& fetcher, Session& session,
                              ArrayView<const int64_t> ids, int device, Array* out) {
  if (cache::CudaDeviceCount() <= 0)
    return Status::NotSupported(
        "the GPU feature cache needs a build with CUDA and a CUDA device; there is none");
  const int64_t n = static_cast<int64_t>(ids.size()), d = fetcher.feature_dim();
  // The batch's buffer from the device's stream-ordered pool, filled on this
  // worker's own stream (DeviceBuffer::AllocateAsync says when it is freed).
  FANOUT_RETURN_IF_ERROR(fetcher.EnsureStream());
  auto buffer = std::make_unique<cache::DeviceBuffer>();
  FANOUT_RETURN_IF_ERROR(cache::DeviceBuffer::AllocateAsync(static_cast<size_t>(n * d) * 4, device,
                                                            fetcher.stream(), buffer.get()));
  FANOUT_RETURN_IF_ERROR(
      fetcher.Fetch(session, ids, static_cast<float*>(buffer->data()), fetcher.stream()));
  void* ptr = buffer->data();
  *out = Array::Borrow(std::shared_ptr<cache::DeviceBuffer>(std::move(buffer)), ptr,
                       DType::kFloat32, {n, d}, device);
  return Status::OK();
}

BatchLoader::BatchLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds,
                         LoaderOptions options)
    : BatchLoader(std::move(source), std::move(seeds), std::move(options), nullptr) {}

BatchLoader::BatchLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds,
                         LoaderOptions options, std::shared_ptr<const LinkSeeds> links)
    : source_(std::move(source)),
      links_(std::move(links)),
      seeds_(std::move(seeds)),
      options_(std::move(options)) {
  if (!source_) throw std::invalid_argument("NodeLoader: no source");
  if (links_) {  // checked by LinkLoader; the seeds are the edges' positions
    seeds_.resize(links_->src.size());
    std::iota(seeds_.begin(), seeds_.end(), int64_t{0});
  }
  if (options_.batch_size < 1) throw std::invalid_argument("NodeLoader: batch_size must be >= 1");
  if (options_.num_workers < 1) throw std::invalid_argument("NodeLoader: num_workers must be >= 1");
  if (options_.prefetch < 1) throw std::invalid_argument("NodeLoader: prefetch must be >= 1");
  // Two large arrays a batch; enough idle buffers for each worker's next
  // batch and the one the consumer lets go of.
  pool_ = BufferPool::Create(2 * (static_cast<size_t>(options_.num_workers) + 1));
  world_ = options_.world_size >= 0 ? options_.world_size : EnvInt("WORLD_SIZE", 1);
  rank_ = options_.rank >= 0 ? options_.rank : EnvInt("RANK", 0);
  if (world_ < 1 || rank_ < 0 || rank_ >= world_)
    throw std::invalid_argument("NodeLoader: rank " + std::to_string(rank_) +
                                " is outside [0, world_size=" + std::to_string(world_) + ")");
  if (options_.gpu_cache && cache::CudaDeviceCount() <= 0)
    throw std::invalid_argument(
        "NodeLoader: gpu_cache needs a build with CUDA and a CUDA device; there is none");
  CheckSampling(*source_, options_, links_ ? links_->src.size() : seeds_.size(), links_ != nullptr);
  if (!links_) {
    IdRangeCheck seed;
    seed.what = "seed";
    Status range = CheckIdsInRange(seeds_, 0, source_->num_nodes(), seed);
    if (!range.ok()) throw std::invalid_argument("NodeLoader: " + range.message());
  }
}

BatchLoader::~BatchLoader() { StopWorkers(); }

std::vector<int64_t> BatchLoader::EpochSeeds(int64_t epoch) const {
  std::vector<int64_t> mine = EpochPositions(epoch);
  for (int64_t& p : mine) p = seeds_[p];
  return mine;
}

std::vector<int64_t> BatchLoader::EpochPositions(int64_t epoch) const {
  std::vector<int64_t> perm(seeds_.size());
  std::iota(perm.begin(), perm.end(), int64_t{0});
  if (options_.shuffle) {
    SplitMix64 rng(Mix64(options_.seed ^ (static_cast<uint64_t>(epoch) * kGolden64)));
    for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i)
      std::swap(perm[i],
                perm[static_cast<int64_t>(DrawBelow(rng.Next(), static_cast<uint64_t>(i + 1)))]);
  }
  // Every rank gets the same count (a DDP job all-reduces once a batch, so a rank with one
  // batch more waits for ever): as torch's DistributedSampler, the epoch's permutation is
  // padded by wrapping around to a multiple of world_size (drop_last=false), or cut to one
  // (drop_last=true), then dealt round-robin.
  const int64_t total = EpochLength();
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(total / world_));
  const int64_t n = static_cast<int64_t>(perm.size());
  for (int64_t i = rank_; i < total; i += world_) mine.push_back(perm[i % n]);
  return mine;
}

int64_t BatchLoader::EpochLength() const {
  const int64_t n = static_cast<int64_t>(seeds_.size());
  if (n == 0) return 0;
  return options_.drop_last ? n / world_ * world_ : (n + world_ - 1) / world_ * world_;
}

int64_t BatchLoader::num_batches() const {
  const int64_t mine = EpochLength() / world_;  // the same on every rank
  return options_.drop_last ? mine / options_.batch_size
                            : (mine + options_.batch_size - 1) / options_.batch_size;
}

void BatchLoader::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void BatchLoader::SetEpoch(int64_t epoch) {
  StopWorkers();
  while (static_cast<int>(sessions_.size()) < options_.num_workers) {
    std::unique_ptr<Session> s;
    Status st = source_->NewSession(&s);
    if (!st.ok()) throw LoaderError(std::move(st));
    sessions_.push_back(std::move(s));
  }
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    worker_paths_.resize(sessions_.size());
    for (size_t w = 0; w < sessions_.size(); ++w) worker_paths_[w] = sessions_[w]->Paths();
  }
  if (options_.snapshot_epoch) {
    // The epoch's versions, fixed before any of its batches is sampled.
    Status st = sessions_[0]->Newest(&options_.snapshot);
    if (!st.ok()) throw LoaderError(std::move(st));
    if (std::all_of(options_.snapshot.begin(), options_.snapshot.end(),
                    [](int64_t v) { return v < 0; }))
      options_.snapshot.clear();  // no live partition: nothing to pin
  }
  epoch_ = epoch;
  running_ = true;
  order_ = EpochPositions(epoch);
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

void BatchLoader::Worker(int w) {
  Session* session = sessions_[w].get();
  std::unique_ptr<DeviceFeatureFetcher> fetcher;
  if (options_.features && options_.gpu_cache)
    fetcher = std::make_unique<DeviceFeatureFetcher>(options_.gpu_cache.get());
  for (;;) {
    int64_t b;
    Slot* slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || (next_claim_ < batches_ && next_claim_ < consumed_ + options_.prefetch);
      });
      if (stop_) return;
      b = next_claim_++;
      slots_.push_back(std::make_unique<Slot>());
      slot = slots_.back().get();
    }
    SessionStats before = session->stats();
    const int64_t staged_before = fetcher ? fetcher->stats().staged_bytes : 0;
    Batch mb;
    Status st;
    StageTime produced;
    {
      detail::StageTimer timer(&produced);
      try {
        st = Produce(session, fetcher.get(), b, &mb);
      } catch (const std::exception& e) {
        st = Status::Internal(std::string("building batch tensors: ") + e.what());
      }
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      const SessionStats& after = session->stats();
      stats_.produce.wall_s += produced.wall_s;
      stats_.produce.cpu_s += produced.cpu_s;
      stats_.produce.calls += produced.calls;
      for (int i = 0; i < kNumStages; ++i) {
        stats_.stages[i].wall_s += after.stages[i].wall_s - before.stages[i].wall_s;
        stats_.stages[i].cpu_s += after.stages[i].cpu_s - before.stages[i].cpu_s;
        stats_.stages[i].calls += after.stages[i].calls - before.stages[i].calls;
      }
      stats_.network_wait_s += after.network_wait_s - before.network_wait_s;
      stats_.feature_bytes += after.feature_bytes - before.feature_bytes;
      stats_.cache_lookups += after.cache_lookups - before.cache_lookups;
      stats_.cache_hits += after.cache_hits - before.cache_hits;
      stats_.cache_bytes += after.cache_bytes - before.cache_bytes;
      stats_.thrift_bytes += after.thrift_bytes - before.thrift_bytes;
      stats_.ucx_bytes += after.ucx_bytes - before.ucx_bytes;
      stats_.local_bytes += after.local_bytes - before.local_bytes;
      stats_.local_edges += after.local_edges - before.local_edges;
      stats_.local_rows += after.local_rows - before.local_rows;
      stats_.staged_bytes += after.staged_bytes - before.staged_bytes;
      if (fetcher) stats_.staged_bytes += fetcher->stats().staged_bytes - staged_before;
      stats_.fallbacks += after.fallbacks - before.fallbacks;
      stats_.retries += after.retries - before.retries;
      stats_.failovers += after.failovers - before.failovers;
      stats_.health_abandons += after.health_abandons - before.health_abandons;
      stats_.data_faults += after.data_faults - before.data_faults;
      std::vector<PartitionPath> now = session->Paths();
      if (now != worker_paths_[w]) worker_paths_[w] = std::move(now);
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

Status BatchLoader::Produce(Session* session, DeviceFeatureFetcher* fetcher, int64_t b,
                            Batch* out) {
  const int64_t begin = b * options_.batch_size;
  const int64_t end =
      std::min<int64_t>(static_cast<int64_t>(order_.size()), begin + options_.batch_size);
  ArrayView<const int64_t> positions(order_.data() + begin, static_cast<size_t>(end - begin));
  uint64_t request_seed = NodeKey(options_.seed, static_cast<uint64_t>(epoch_),
                                  static_cast<uint64_t>(b) * world_ + static_cast<uint64_t>(rank_));
  out->epoch = epoch_;
  out->index = b;
  const bool temporal = !options_.input_time.empty();
  std::vector<int64_t> nodes, times;
  if (links_) {
    FANOUT_RETURN_IF_ERROR(LinkSeedNodes(*source_, options_, *links_, session, positions,
                                         request_seed, &nodes, &times, out));
  } else {
    nodes.resize(positions.size());
    for (size_t i = 0; i < positions.size(); ++i) nodes[i] = seeds_[positions[i]];
    // Each seed's position in the loader's seeds (a seed given twice keeps both).
    out->input_id = Int64Array(positions);
    if (temporal) {
      times.resize(positions.size());
      for (size_t i = 0; i < positions.size(); ++i) times[i] = options_.input_time[positions[i]];
    }
  }
  return SampleAndFetch(*source_, options_, session, fetcher, nodes, times, request_seed, out,
                        pool_.get());
}

bool BatchLoader::Next(Batch* out) {
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
      stats_.consumer_wait_s +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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

namespace {

// Checks a LinkLoader's seed edges and options (throws std::invalid_argument
// naming what is wrong); shifts binary labels that start at 0 up by one.
std::shared_ptr<const LinkSeeds> CheckLinks(const Source* source, LinkSeeds seeds,
                                            const LoaderOptions& options) {
  if (source == nullptr) throw std::invalid_argument("LinkLoader: no source");
  if (seeds.src.size() != seeds.dst.size())
    throw std::invalid_argument("LinkLoader: edge_label_index has " +
                                std::to_string(seeds.src.size()) + " sources but " +
                                std::to_string(seeds.dst.size()) + " destinations");
  if (!seeds.label.empty() && seeds.label.size() != seeds.src.size())
    throw std::invalid_argument("LinkLoader: " + std::to_string(seeds.label.size()) +
                                " edge labels for " + std::to_string(seeds.src.size()) +
                                " seed edges");
  Status st = sampler::CheckNegativeOptions(options.negative);
  if (!st.ok()) throw std::invalid_argument("LinkLoader: " + st.message());
  for (auto [ids, what] : {std::pair{&seeds.src, "seed edge source"},
                           std::pair{&seeds.dst, "seed edge destination"}}) {
    IdRangeCheck check;
    check.what = what;
    st = CheckIdsInRange(*ids, 0, source->num_nodes(), check);
    if (!st.ok()) throw std::invalid_argument("LinkLoader: " + st.message());
  }
  if (const sampler::HeteroSchema* h = source->hetero();
      h != nullptr && options.negative.mode != sampler::NegativeMode::kNone) {
    const int e = options.link_edge_type;
    if (e < 0 || e >= h->num_edge_types())
      throw std::invalid_argument(
          "LinkLoader: a heterogeneous dataset needs the seed edges' type (link_edge_type, one "
          "of " +
          std::to_string(h->num_edge_types()) + " edge types) for negative sampling");
    for (size_t i = 0; i < seeds.src.size(); ++i) {
      const int32_t s = h->NodeTypeOf(seeds.src[i]), d = h->NodeTypeOf(seeds.dst[i]);
      if (s != h->edge_types[e].src || d != h->edge_types[e].dst)
        throw std::invalid_argument(
            "LinkLoader: seed edge " + std::to_string(i) + " (" + std::to_string(seeds.src[i]) +
            " -> " + std::to_string(seeds.dst[i]) + ") joins " + h->node_types[s] + " -> " +
            h->node_types[d] + ", not the edge type " + h->EdgeTypeName(e));
    }
  } else if (options.link_edge_type >= 0 &&
             (h == nullptr || options.link_edge_type >= h->num_edge_types())) {
    throw std::invalid_argument("LinkLoader: link_edge_type " +
                                std::to_string(options.link_edge_type) +
                                " names no edge type of the dataset");
  }
  if (options.negative.temporal != sampler::TemporalNegatives::kNone &&
      options.negative.mode != sampler::NegativeMode::kNone) {
    if (options.input_time.size() != seeds.src.size())
      throw std::invalid_argument(
          std::string("LinkLoader: temporal negatives (") +
          sampler::TemporalNegativesName(options.negative.temporal) +
          ") need one time per seed edge (edge_label_time / input_time), got " +
          std::to_string(options.input_time.size()) + " for " + std::to_string(seeds.src.size()) +
          " seed edges");
    seeds.history =
        std::make_shared<const sampler::EdgeHistory>(seeds.src, seeds.dst, options.input_time);
  }
  if (!seeds.label.empty()) {
    if (options.negative.mode == sampler::NegativeMode::kTriplet)
      throw std::invalid_argument(
          "LinkLoader: edge labels cannot be used with triplet negative sampling");
    auto min = std::min_element(seeds.label.begin(), seeds.label.end());
    if (*min < 0)
      throw std::invalid_argument("LinkLoader: edge label " + std::to_string(*min) +
                                  " of seed edge " + std::to_string(min - seeds.label.begin()) +
                                  " is negative (labels are classes >= 0)");
    if (options.negative.mode == sampler::NegativeMode::kBinary && *min == 0)
      for (int64_t& l : seeds.label) ++l;  // 0 is the negatives' label
  }
  return std::make_shared<const LinkSeeds>(std::move(seeds));
}

}  // namespace

LinkBatchLoader::LinkBatchLoader(std::shared_ptr<Source> source, LinkSeeds seeds,
                                 LoaderOptions options)
    : BatchLoader(source, {}, options, CheckLinks(source.get(), std::move(seeds), options)) {}

Status SampleBatch(const Source& source, Session* session, const BatchSeeds& seeds,
                   uint64_t request_seed, LoaderOptions options, Batch* out) {
  if (session == nullptr) return Status::InvalidArgument("SampleBatch: no session");
  if (options.gpu_cache)
    return Status::NotSupported("SampleBatch: batches for a caller's seeds are built on the CPU");
  const bool link = seeds.links != nullptr;
  const size_t count = link ? seeds.links->src.size() : seeds.nodes.size();
  if (count == 0) return Status::InvalidArgument("SampleBatch: the batch has no seeds");
  options.input_time = seeds.times;
  if (link && options.negative.temporal != sampler::TemporalNegatives::kNone &&
      options.negative.mode != sampler::NegativeMode::kNone)
    return Status::InvalidArgument(
        std::string("SampleBatch: temporal negatives (") +
        sampler::TemporalNegativesName(options.negative.temporal) +
        ") draw from the whole seed-edge stream's history, which one batch does not hold: use a "
        "LinkLoader over every seed edge");
  std::shared_ptr<const LinkSeeds> links;
  try {
    CheckSampling(source, options, count, link);
    if (link) {
      links = CheckLinks(&source, *seeds.links, options);
    } else {
      IdRangeCheck check;
      check.what = "seed";
      FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds.nodes, 0, source.num_nodes(), check));
    }
  } catch (const std::invalid_argument& e) {
    return Status::InvalidArgument(e.what());
  }
  std::vector<int64_t> positions(count);
  std::iota(positions.begin(), positions.end(), int64_t{0});
  std::vector<int64_t> nodes, times;
  try {
    if (link) {
      FANOUT_RETURN_IF_ERROR(LinkSeedNodes(source, options, *links, session, positions,
                                           request_seed, &nodes, &times, out));
      return SampleAndFetch(source, options, session, nullptr, nodes, times, request_seed, out);
    }
    out->input_id = Array::Empty(DType::kInt64, {static_cast<int64_t>(count)});
    std::iota(out->input_id.ptr<int64_t>(), out->input_id.ptr<int64_t>() + count, int64_t{0});
    return SampleAndFetch(source, options, session, nullptr, seeds.nodes, seeds.times, request_seed,
                          out);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("building batch tensors: ") + e.what());
  }
}

namespace {

// Rows `rows` of a contiguous host array (its first dimension), keeping
// `cols` of each row's elements (all: -1).
Array GatherRows(const Array& a, const std::vector<int64_t>& rows, int64_t cols = -1) {
  std::vector<int64_t> shape = a.shape();
  const int64_t row_elems = a.numel() / std::max<int64_t>(1, shape[0]);
  const int64_t keep = cols < 0 ? row_elems : cols;
  shape[0] = static_cast<int64_t>(rows.size());
  if (cols >= 0) shape[1] = cols;
  Array out = Array::Empty(a.dtype(), shape);
  const int64_t elem = DTypeSize(a.dtype());
  const char* src = a.ptr<const char>();
  char* dst = out.ptr<char>();
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(dst + static_cast<int64_t>(i) * keep * elem, src + rows[i] * row_elems * elem,
                static_cast<size_t>(keep * elem));
  return out;
}

}  // namespace

HeteroArrays SplitByType(const Batch& b, const sampler::HeteroSchema& schema) {
  if (!b.node_type.defined() || !b.edge_type.defined())
    throw std::invalid_argument(
        "SplitByType: the batch is not heterogeneous (no node_type/edge_type)");
  if (b.x.defined() && b.x.device() >= 0)
    throw std::invalid_argument("SplitByType: x is device memory; split host batches");
  const int T = schema.num_node_types(), R = schema.num_edge_types();
  const int64_t n = b.n_id.size(0);
  HeteroArrays out;
  const int64_t* nt = b.node_type.ptr<int64_t>();
  out.type_index = Array::Empty(DType::kInt64, {n});
  int64_t* ti = out.type_index.ptr<int64_t>();
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(T));
  for (int64_t i = 0; i < n; ++i) {
    if (nt[i] < 0 || nt[i] >= T)
      throw std::invalid_argument("SplitByType: node type " + std::to_string(nt[i]) +
                                  " out of range");
    ti[i] = static_cast<int64_t>(members[nt[i]].size());
    members[nt[i]].push_back(i);
  }
  out.batch_size.assign(T, 0);
  for (int64_t i = 0; i < b.batch_size; ++i) out.batch_size[nt[i]]++;
  for (int t = 0; t < T; ++t) {
    const std::vector<int64_t>& index = members[t];
    out.index.push_back(Int64Array(index));
    out.n_id.push_back(GatherRows(b.n_id, index));
    const int64_t d = schema.feature_dims[t];
    out.x.push_back(b.x.defined() && d > 0 ? GatherRows(b.x, index, d) : Array());
    out.y.push_back(b.y.defined() ? GatherRows(b.y, index) : Array());
    out.original_id.push_back(b.original_id.defined() ? GatherRows(b.original_id, index) : Array());
    out.batch.push_back(b.batch.defined() ? GatherRows(b.batch, index) : Array());
  }
  const int64_t e_all = b.edge_index.size(1);
  const int64_t* et = b.edge_type.ptr<int64_t>();
  const int64_t* row = b.edge_index.ptr<int64_t>();
  const int64_t* col = row + e_all;
  std::vector<std::vector<int64_t>> edges(static_cast<size_t>(R));
  for (int64_t e = 0; e < e_all; ++e) {
    if (et[e] < 0 || et[e] >= R)
      throw std::invalid_argument("SplitByType: edge type " + std::to_string(et[e]) +
                                  " out of range");
    edges[et[e]].push_back(e);
  }
  for (int r = 0; r < R; ++r) {
    const std::vector<int64_t>& sel = edges[r];
    const int64_t k = static_cast<int64_t>(sel.size());
    Array ei = Array::Empty(DType::kInt64, {2, k});
    int64_t* o = ei.ptr<int64_t>();
    for (int64_t i = 0; i < k; ++i) {
      o[i] = ti[row[sel[i]]];
      o[k + i] = ti[col[sel[i]]];
    }
    out.edge_index.push_back(std::move(ei));
    out.edge_id.push_back(b.edge_id.defined() ? GatherRows(b.edge_id, sel) : Array());
  }
  return out;
}

LoaderStats BatchLoader::stats() const {
  LoaderStats s;
  const BufferPool::Stats pool = pool_->stats();
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    s = stats_;
    s.buffer_reuses = pool.reused;
    s.buffer_allocations = pool.allocated;
    // The workers' paths, merged: one entry per partition, replica and path.
    for (const auto& paths : worker_paths_)
      for (const PartitionPath& pp : paths) {
        auto same = std::find_if(s.paths.begin(), s.paths.end(), [&](const PartitionPath& q) {
          return q.partition == pp.partition && q.replica == pp.replica && q.path == pp.path &&
                 q.sampling == pp.sampling;
        });
        if (same == s.paths.end())
          s.paths.push_back(pp);
        else
          same->sessions += pp.sessions;
      }
    std::stable_sort(
        s.paths.begin(), s.paths.end(),
        [](const PartitionPath& a, const PartitionPath& b) { return a.partition < b.partition; });
  }
  s.servers = source_->Health();
  return s;
}

}  // namespace fanout::client
