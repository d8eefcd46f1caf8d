#include "client/loader.h"

#include <torch/torch.h>

#include <stdexcept>

namespace fanout::client {

namespace {

at::ScalarType ScalarTypeOf(DType t) {
  switch (t) {
    case DType::kInt64:
      return torch::kLong;
    case DType::kFloat32:
      return torch::kFloat;
    case DType::kFloat16:
      return torch::kHalf;
    case DType::kBFloat16:
      return torch::kBFloat16;
  }
  return torch::kByte;
}

DType DTypeOf(at::ScalarType t) {
  switch (t) {
    case torch::kLong:
      return DType::kInt64;
    case torch::kFloat:
      return DType::kFloat32;
    case torch::kHalf:
      return DType::kFloat16;
    case torch::kBFloat16:
      return DType::kBFloat16;
    default:
      throw std::invalid_argument(std::string("FromTensor: dtype ") + c10::toString(t) +
                                  " (int64, float32, float16 or bfloat16)");
  }
}

std::vector<at::Tensor> ToTensors(const std::vector<Array>& v) {
  std::vector<at::Tensor> out;
  out.reserve(v.size());
  for (const Array& a : v) out.push_back(ToTensor(a));
  return out;
}

}  // namespace

at::Tensor ToTensor(const Array& a) {
  if (!a.defined()) return at::Tensor();
  auto* keep = new std::shared_ptr<void>(a.owner());
  auto options = torch::TensorOptions().dtype(ScalarTypeOf(a.dtype()));
  if (a.device() >= 0) options = options.device(torch::kCUDA, a.device());
  const std::vector<int64_t> strides = a.contiguous() ? std::vector<int64_t>() : a.strides();
  if (strides.empty())
    return torch::from_blob(
        a.data(), a.shape(), [keep](void*) { delete keep; }, options);
  return torch::from_blob(
      a.data(), a.shape(), strides, [keep](void*) { delete keep; }, options);
}

Array FromTensor(const at::Tensor& t) {
  if (!t.defined()) return Array();
  at::Tensor c = t.contiguous();
  auto owner = std::make_shared<at::Tensor>(c);
  return Array::Borrow(owner, c.data_ptr(), DTypeOf(c.scalar_type()), c.sizes().vec(),
                       c.is_cuda() ? static_cast<int>(c.get_device()) : -1);
}

MiniBatch ToMiniBatch(Batch&& b) {
  MiniBatch m;
  m.n_id = ToTensor(b.n_id);
  m.x = ToTensor(b.x);
  m.y = ToTensor(b.y);
  m.edge_index = ToTensor(b.edge_index);
  m.hop_edge_index = ToTensors(b.hop_edge_index);  // views of edge_index's memory
  m.edge_id = ToTensor(b.edge_id);
  m.edge_weight = ToTensor(b.edge_weight);
  m.original_id = ToTensor(b.original_id);
  m.num_sampled_nodes = std::move(b.num_sampled_nodes);
  m.num_sampled_edges = std::move(b.num_sampled_edges);
  m.batch_size = b.batch_size;
  m.epoch = b.epoch;
  m.index = b.index;
  m.batch = ToTensor(b.batch);
  m.seed_time = ToTensor(b.seed_time);
  m.node_type = ToTensor(b.node_type);
  m.edge_type = ToTensor(b.edge_type);
  m.input_id = ToTensor(b.input_id);
  m.edge_label_index = ToTensor(b.edge_label_index);
  m.edge_label = ToTensor(b.edge_label);
  m.src_index = ToTensor(b.src_index);
  m.dst_pos_index = ToTensor(b.dst_pos_index);
  m.dst_neg_index = ToTensor(b.dst_neg_index);
  return m;
}

NodeLoader::NodeLoader(std::shared_ptr<Source> source, std::vector<int64_t> seeds,
                       LoaderOptions options)
    : core_(
          std::make_unique<BatchLoader>(std::move(source), std::move(seeds), std::move(options))) {}

NodeLoader::NodeLoader(std::unique_ptr<BatchLoader> core) : core_(std::move(core)) {}

NodeLoader::~NodeLoader() = default;

bool NodeLoader::Next(MiniBatch* out) {
  Batch b;
  if (!core_->Next(&b)) return false;
  *out = ToMiniBatch(std::move(b));
  return true;
}

LinkLoader::LinkLoader(std::shared_ptr<Source> source, LinkSeeds seeds, LoaderOptions options)
    : NodeLoader(std::make_unique<LinkBatchLoader>(std::move(source), std::move(seeds),
                                                   std::move(options))) {}

HeteroBatch SplitByType(const MiniBatch& m, const sampler::HeteroSchema& schema) {
  Batch b;
  b.n_id = FromTensor(m.n_id);
  b.x = FromTensor(m.x.defined() && m.x.is_cuda() ? m.x.cpu() : m.x);
  b.y = FromTensor(m.y);
  b.edge_index = FromTensor(m.edge_index);
  b.edge_id = FromTensor(m.edge_id);
  b.original_id = FromTensor(m.original_id);
  b.batch = FromTensor(m.batch);
  b.node_type = FromTensor(m.node_type);
  b.edge_type = FromTensor(m.edge_type);
  b.batch_size = m.batch_size;
  HeteroArrays h = SplitByType(b, schema);
  HeteroBatch out;
  out.n_id = ToTensors(h.n_id);
  out.x = ToTensors(h.x);
  out.y = ToTensors(h.y);
  out.index = ToTensors(h.index);
  out.original_id = ToTensors(h.original_id);
  out.batch = ToTensors(h.batch);
  out.batch_size = std::move(h.batch_size);
  out.edge_index = ToTensors(h.edge_index);
  out.edge_id = ToTensors(h.edge_id);
  out.type_index = ToTensor(h.type_index);
  return out;
}

Status SampleBatch(const Source& source, Session* session, const BatchSeeds& seeds,
                   uint64_t request_seed, LoaderOptions options, MiniBatch* out) {
  Batch b;
  FANOUT_RETURN_IF_ERROR(SampleBatch(source, session, seeds, request_seed, std::move(options), &b));
  *out = ToMiniBatch(std::move(b));
  return Status::OK();
}

}  // namespace fanout::client
