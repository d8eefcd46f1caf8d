#include <cstring>

#include "client/source.h"
#include "common/id_range.h"
#include "datasets/partition_store.h"
#include "sampler/hetero.h"
#include "sampler/negative.h"
#include "sampler/temporal.h"
#include "sampler/walk.h"

namespace fanout::client {

class LocalSession : public Session {
 public:
  explicit LocalSession(const LocalSource* src) : src_(src) {}

  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                const sampler::MultiHopOptions& options, sampler::SampledSubgraph* out) override {
    if (!sampler_ ||
        sampler_->options() != options) {  // options checked once per change, not per batch
      if (!options.edge_type_fanouts.empty()) {
        if (src_->hetero_.empty())
          return Status::InvalidArgument("per-edge-type fanouts need a heterogeneous dataset; " +
                                         src_->dir_ + " has no edge types");
        std::vector<int64_t> per_hop;
        FANOUT_RETURN_IF_ERROR(
            sampler::HeteroHopFanouts(src_->hetero_, options.edge_type_fanouts, &per_hop));
      }
      sampler_ = std::make_unique<sampler::MultiHopSampler>(src_->csr_.View(), options);
      if (!src_->edge_types_.empty()) sampler_->SetEdgeTypes(src_->edge_types_.data());
    }
    return sampler_->Sample(seeds, request_seed, out);
  }

  Status SampleTemporal(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                        uint64_t request_seed, const sampler::MultiHopOptions& options,
                        sampler::SampledSubgraph* out) override {
    if (src_->edge_times_.empty() && src_->csr_.num_edges() > 0)
      return Status::InvalidArgument(
          "dataset " + src_->dir_ +
          " has no edge timestamps: temporal sampling needs fanout-partition --edge-times");
    if (!temporal_ || temporal_->options() != options)
      temporal_ = std::make_unique<sampler::TemporalSampler>(
          src_->csr_.View(), src_->edge_times_.data(), options, src_->time_index_,
          src_->edge_types_.empty() ? nullptr : src_->edge_types_.data());
    return temporal_->Sample(seeds, seed_times, request_seed, out);
  }

  Status Features(ArrayView<const int64_t> ids, float* out) override {
    const int64_t d = src_->feature_dim_;
    FANOUT_RETURN_IF_ERROR(Check(ids));
    if (d == 0) return Status::OK();  // no feature values (and no memory to copy from)
    for (size_t i = 0; i < ids.size(); ++i)
      std::memcpy(out + i * d, src_->features_.data() + ids[i] * d, d * 4);
    return Status::OK();
  }
  Status Labels(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Check(ids));
    for (size_t i = 0; i < ids.size(); ++i)
      out[i] = src_->labels_.empty() ? -1 : src_->labels_[ids[i]];
    return Status::OK();
  }
  Status OriginalIds(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Check(ids));
    for (size_t i = 0; i < ids.size(); ++i) out[i] = src_->original_ids_[ids[i]];
    return Status::OK();
  }

  Status Degrees(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Check(ids));
    for (size_t i = 0; i < ids.size(); ++i)
      out[i] = src_->csr_.indptr[ids[i] + 1] - src_->csr_.indptr[ids[i]];
    return Status::OK();
  }

  Status SplitNodes(int split, std::vector<int64_t>* out) override {
    *out = src_->SplitNodes(split);
    return Status::OK();
  }

  Status WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys, bool weighted,
                  int64_t* next, int edge_type = -1) override {
    sampler::SamplingOptions so;
    so.weighted = weighted;
    so.with_edge_ids = false;
    if (edge_type >= 0 && edge_type >= src_->hetero_.num_edge_types())
      return Status::InvalidArgument("metapath walk step: edge type " + std::to_string(edge_type) +
                                     " is not one of the dataset's " +
                                     std::to_string(src_->hetero_.num_edge_types()));
    FANOUT_RETURN_IF_ERROR(sampler::SampleWalkStep(
        src_->csr_.View(), nodes, keys, so, &step_,
        src_->edge_types_.empty() ? nullptr : src_->edge_types_.data(), edge_type));
    for (size_t i = 0; i < nodes.size(); ++i)
      next[i] = step_.offsets[i + 1] > step_.offsets[i] ? step_.neighbors[step_.offsets[i]] : -1;
    return Status::OK();
  }
  bool StoresIncoming() const override { return src_->incoming_; }

  Status PprPush(const sampler::PprPushRequest& in, sampler::PprPushResult* out) override {
    // The whole graph is one owner: no reply limit.
    return sampler::PprPushRound(src_->csr_.View(), 0, in, sampler::kPprNoReplyLimit, out,
                                 &ppr_map_);
  }

  Status HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst, uint8_t* exists,
                  int edge_type) override {
    if (src.size() != dst.size())
      return Status::InvalidArgument("HasEdges: " + std::to_string(src.size()) + " sources but " +
                                     std::to_string(dst.size()) + " destinations");
    FANOUT_RETURN_IF_ERROR(Check(src));
    FANOUT_RETURN_IF_ERROR(Check(dst));
    if (edge_type >= src_->hetero_.num_edge_types())
      return Status::InvalidArgument("HasEdges: edge type " + std::to_string(edge_type) +
                                     " is outside [0, " +
                                     std::to_string(src_->hetero_.num_edge_types()) + ")");
    const sampler::CsrGraph g = src_->csr_.View();
    const bool in = src_->incoming_;
    const int32_t* types = src_->edge_types_.empty() ? nullptr : src_->edge_types_.data();
    for (size_t i = 0; i < src.size(); ++i)
      exists[i] = in ? sampler::RowHasNeighbor(g, dst[i], src[i], types, edge_type)
                     : sampler::RowHasNeighbor(g, src[i], dst[i], types, edge_type);
    return Status::OK();
  }

 private:
  Status Check(ArrayView<const int64_t> ids) const {
    return CheckIdsInRange(ids, 0, src_->num_nodes(), kNoPosition);
  }
  const LocalSource* src_;
  std::unique_ptr<sampler::MultiHopSampler> sampler_;
  std::unique_ptr<sampler::TemporalSampler> temporal_;
  sampler::OneHopResult step_;      // WalkStep scratch
  sampler::detail::IdMap ppr_map_;  // PprPush scratch
};

Status LocalSource::Open(const std::string& dir, std::shared_ptr<LocalSource>* out) {
  datasets::DatasetMeta meta;
  FANOUT_RETURN_IF_ERROR(datasets::ReadDatasetMeta(dir, &meta));
  auto s = std::shared_ptr<LocalSource>(new LocalSource());
  s->dir_ = dir;
  s->feature_dim_ = meta.feature_dim;
  s->num_classes_ = meta.num_classes;
  s->incoming_ = meta.direction != "out";
  s->hetero_ = meta.hetero;
  s->csr_.indptr.assign(1, 0);
  for (int p = 0; p < meta.num_parts; ++p) {
    datasets::PartitionData d;
    FANOUT_RETURN_IF_ERROR(datasets::OpenPartition(dir, p, {}, &d));
    int64_t base = s->csr_.indptr.back();
    for (size_t i = 1; i < d.indptr.size(); ++i) s->csr_.indptr.push_back(base + d.indptr[i]);
    s->csr_.indices.insert(s->csr_.indices.end(), d.indices.begin(), d.indices.end());
    s->csr_.edge_ids.insert(s->csr_.edge_ids.end(), d.edge_ids.begin(), d.edge_ids.end());
    s->edge_times_.insert(s->edge_times_.end(), d.edge_times.begin(), d.edge_times.end());
    s->edge_types_.insert(s->edge_types_.end(), d.edge_types.begin(), d.edge_types.end());
    s->csr_.weights.insert(s->csr_.weights.end(), d.edge_weights.begin(), d.edge_weights.end());
    for (int64_t r = 0; r < d.num_nodes(); ++r)
      for (int64_t j = 0; j < meta.feature_dim; ++j) s->features_.push_back(d.Feature(r, j));
    s->labels_.insert(s->labels_.end(), d.labels.begin(), d.labels.end());
    s->original_ids_.insert(s->original_ids_.end(), d.original_ids.begin(), d.original_ids.end());
    if (d.split.empty()) d.split.assign(d.num_nodes(), 0);
    s->split_.insert(s->split_.end(), d.split.begin(), d.split.end());
  }
  if (!s->edge_times_.empty())
    s->time_index_ =
        sampler::PrepareTimeOrder(s->csr_.View(), s->edge_times_.data(), &s->time_order_,
                                  s->edge_types_.empty() ? nullptr : s->edge_types_.data());
  *out = std::move(s);
  return Status::OK();
}

Status LocalSource::NewSession(std::unique_ptr<Session>* out) {
  *out = std::make_unique<LocalSession>(this);
  return Status::OK();
}

std::vector<int64_t> LocalSource::SplitNodes(int split) const {
  std::vector<int64_t> v;
  for (size_t i = 0; i < split_.size(); ++i)
    if (split_[i] == split) v.push_back(static_cast<int64_t>(i));
  return v;
}

}  // namespace fanout::client
