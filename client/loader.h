// The LibTorch layer of the client: NodeLoader and LinkLoader yielding
// MiniBatch (torch tensors), over client/batch_loader.h's BatchLoader, whose
// Arrays they wrap without copying (a tensor's deleter keeps the Array's
// memory alive). For C++ programs that train with LibTorch; the Python
// package uses the core directly (no LibTorch, any PyTorch).
//
// Thread safety: as BatchLoader (one consumer thread calls Next()).
#ifndef FANOUT_CLIENT_LOADER_H_
#define FANOUT_CLIENT_LOADER_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "client/batch_loader.h"

namespace fanout::client {

// A Batch as tensors (see Batch for each field; undefined Arrays are
// undefined tensors).
struct MiniBatch {
  at::Tensor n_id, x, y, edge_index;
  std::vector<at::Tensor> hop_edge_index;
  at::Tensor edge_id, edge_weight, original_id;
  std::vector<int64_t> num_sampled_nodes, num_sampled_edges;
  int64_t batch_size = 0;
  int64_t epoch = 0, index = 0;
  at::Tensor batch, seed_time;
  at::Tensor node_type, edge_type;
  at::Tensor input_id;
  at::Tensor edge_label_index, edge_label;
  at::Tensor src_index, dst_pos_index, dst_neg_index;
};

// An Array as a tensor sharing its memory (host or CUDA); undefined stays
// undefined.
at::Tensor ToTensor(const Array& a);
// A tensor's memory as an Array (the Array keeps the tensor alive).
Array FromTensor(const at::Tensor& t);
MiniBatch ToMiniBatch(Batch&& b);

class NodeLoader {
 public:
  // Throws std::invalid_argument on bad options (batch size, fanouts, rank).
  NodeLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds, LoaderOptions options);
  virtual ~NodeLoader();
  NodeLoader(const NodeLoader&) = delete;
  NodeLoader& operator=(const NodeLoader&) = delete;

  void SetEpoch(int64_t epoch) { core_->SetEpoch(epoch); }
  // The next batch of the current epoch, as BatchLoader::Next.
  bool Next(MiniBatch* out);
  int64_t num_batches() const { return core_->num_batches(); }
  std::vector<int64_t> EpochSeeds(int64_t epoch) const { return core_->EpochSeeds(epoch); }
  int rank() const { return core_->rank(); }
  int world_size() const { return core_->world_size(); }
  LoaderStats stats() const { return core_->stats(); }
  const LoaderOptions& options() const { return core_->options(); }
  BatchLoader& core() { return *core_; }

 protected:
  explicit NodeLoader(std::unique_ptr<BatchLoader> core);

 private:
  std::unique_ptr<BatchLoader> core_;
};

// LinkLoader: as LinkBatchLoader, yielding tensors.
class LinkLoader : public NodeLoader {
 public:
  LinkLoader(std::shared_ptr<Source> source, LinkSeeds seeds, LoaderOptions options);
};

// A heterogeneous batch by type, as tensors (see HeteroArrays).
struct HeteroBatch {
  std::vector<at::Tensor> n_id, x, y, index, original_id, batch;  // per node type
  std::vector<int64_t> batch_size;                                // per node type
  std::vector<at::Tensor> edge_index, edge_id;                    // per edge type
  at::Tensor type_index;
};
// Splits `batch` by `schema`'s types (SplitByType of the core). Throws
// std::invalid_argument when the batch is not heterogeneous.
HeteroBatch SplitByType(const MiniBatch& batch, const sampler::HeteroSchema& schema);

// SampleBatch of the core, as tensors.
Status SampleBatch(const Source& source, Session* session, const BatchSeeds& seeds,
                   uint64_t request_seed, LoaderOptions options, MiniBatch* out);

}  // namespace fanout::client

#endif  // FANOUT_CLIENT_LOADER_H_
