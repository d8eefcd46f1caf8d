#include "client/examples/graphsage.h"

#include <torch/torch.h>

#include <chrono>
#include <stdexcept>

namespace fanout::examples {
namespace {

// PyG's SAGEConv with mean aggregation: lin_l(mean_{j in N(i)} x_j) + lin_r(x_i).
struct SAGEConvImpl : torch::nn::Module {
  SAGEConvImpl(int64_t in, int64_t out)
      : lin_l(register_module("lin_l", torch::nn::Linear(in, out))),
        lin_r(register_module("lin_r",
                              torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& edge_index) {
    torch::Tensor src = edge_index[0], dst = edge_index[1];
    torch::Tensor agg = torch::zeros_like(x).index_add_(0, dst, x.index_select(0, src));
    torch::Tensor deg = torch::zeros({x.size(0)}, x.options())
                            .index_add_(0, dst, torch::ones({dst.size(0)}, x.options()));
    agg = agg / deg.clamp_min(1).unsqueeze(1);
    return lin_l(agg) + lin_r(x);
  }
  torch::nn::Linear lin_l, lin_r;
};
TORCH_MODULE(SAGEConv);

struct GraphSageImpl : torch::nn::Module {
  GraphSageImpl(int64_t in, int64_t hidden, int64_t classes, double dropout)
      : conv1(register_module("conv1", SAGEConv(in, hidden))),
        conv2(register_module("conv2", SAGEConv(hidden, classes))),
        p(dropout) {}
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& edge_index) {
    x = torch::relu(conv1(x, edge_index));
    x = torch::dropout(x, p, is_training());
    return torch::log_softmax(conv2(x, edge_index), 1);
  }
  SAGEConv conv1, conv2;
  double p;
};
TORCH_MODULE(GraphSage);

torch::Tensor Prepare(const client::MiniBatch& b, bool normalize) {
  if (!normalize) return b.x;
  return b.x / b.x.sum(1, true).clamp_min(1);
}

std::vector<int64_t> Split(client::Source& source, int split) {
  std::unique_ptr<client::Session> s;
  Status st = source.NewSession(&s);
  if (!st.ok()) throw std::runtime_error(st.ToString());
  std::vector<int64_t> out;
  st = s->SplitNodes(split, &out);
  if (!st.ok()) throw std::runtime_error(st.ToString());
  return out;
}

double Accuracy(GraphSage& model, std::shared_ptr<client::Source> source,
                const std::vector<int64_t>& nodes, const TrainOptions& o) {
  if (nodes.empty()) return -1;
  client::LoaderOptions lo;
  lo.batch_size = 1024;
  lo.fanouts = std::vector<int64_t>(o.fanouts.size(), -1);
  lo.shuffle = false;
  lo.rank = 0;
  lo.world_size = 1;
  lo.num_workers = o.num_workers;
  client::NodeLoader loader(source, nodes, lo);
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0, total = 0;
  client::MiniBatch b;
  while (loader.Next(&b)) {
    torch::Tensor out =
        model->forward(Prepare(b, o.normalize_features), b.edge_index).narrow(0, 0, b.batch_size);
    torch::Tensor y = b.y.narrow(0, 0, b.batch_size);
    torch::Tensor known = y.ge(0);
    correct += out.argmax(1).eq(y).logical_and(known).sum().item<int64_t>();
    total += known.sum().item<int64_t>();
  }
  return total ? static_cast<double>(correct) / total : -1;
}

}  // namespace

TrainResult TrainGraphSage(std::shared_ptr<client::Source> source, const TrainOptions& o,
                           const std::function<void(const EpochReport&)>& on_epoch) {
  std::vector<int64_t> train = Split(*source, 1), val = Split(*source, 2), test = Split(*source, 3);
  if (train.empty()) throw std::runtime_error("the dataset has no training nodes (no train split)");
  if (source->num_classes() < 2) throw std::runtime_error("the dataset has no class labels");
  torch::manual_seed(o.seed);
  GraphSage model(source->feature_dim(), o.hidden, source->num_classes(), o.dropout);
  torch::optim::Adam opt(model->parameters(),
                         torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  client::LoaderOptions lo;
  lo.batch_size = o.batch_size;
  lo.fanouts = o.fanouts;
  lo.seed = o.seed;
  lo.num_workers = o.num_workers;
  lo.rank = 0;
  lo.world_size = 1;
  client::NodeLoader loader(source, train, lo);
  TrainResult result;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    model->train();
    double loss_sum = 0;
    int steps = 0;
    client::MiniBatch b;
    while (loader.Next(&b)) {
      if (o.on_batch) o.on_batch(epoch, b);
      opt.zero_grad();
      torch::Tensor out =
          model->forward(Prepare(b, o.normalize_features), b.edge_index).narrow(0, 0, b.batch_size);
      torch::Tensor loss = torch::nll_loss(out, b.y.narrow(0, 0, b.batch_size));
      loss.backward();
      opt.step();
      double l = loss.item<double>();
      result.losses.push_back(l);
      loss_sum += l;
      ++steps;
    }
    EpochReport r;
    r.epoch = epoch;
    r.loss = steps ? loss_sum / steps : 0;
    r.train_stats = loader.stats();
    if (o.evaluate_every_epoch || epoch == o.epochs) {
      r.val_acc = Accuracy(model, source, val, o);
      r.test_acc = Accuracy(model, source, test, o);
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    result.epochs.push_back(r);
    if (on_epoch) on_epoch(r);
  }
  result.test_acc = result.epochs.back().test_acc;
  return result;
}

}  // namespace fanout::examples
