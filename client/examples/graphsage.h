// GraphSAGE (mean aggregation, 2 layers) trained with NodeLoader batches:
// the example that shows Fanout end to end, also used by the tests.
#ifndef FANOUT_CLIENT_EXAMPLES_GRAPHSAGE_H_
#define FANOUT_CLIENT_EXAMPLES_GRAPHSAGE_H_

#include <functional>
#include <memory>
#include <vector>

#include "client/loader.h"
#include "client/source.h"

namespace fanout::examples {

struct TrainOptions {
  int epochs = 30;
  int64_t hidden = 64;
  double lr = 0.01;
  double weight_decay = 5e-4;
  double dropout = 0.5;
  std::vector<int64_t> fanouts{10, 10};  // training; evaluation takes all neighbors
  int64_t batch_size = 64;
  uint64_t seed = 0;               // model init, dropout, shuffling and sampling
  bool normalize_features = true;  // divide each row by its sum (bag-of-words features)
  bool evaluate_every_epoch = true;
  int num_workers = 2;
  // Called with every training batch (epoch from 1), before the step.
  std::function<void(int epoch, const client::MiniBatch&)> on_batch;
};

struct EpochReport {
  int epoch = 0;
  double loss = 0, val_acc = -1, test_acc = -1, seconds = 0;
  client::LoaderStats train_stats;
};

struct TrainResult {
  std::vector<double> losses;  // every step, in order
  std::vector<EpochReport> epochs;
  double test_acc = 0;  // of the final model
};

// Trains on the source's train split, reports validation/test accuracy.
// Throws std::runtime_error on source errors.
TrainResult TrainGraphSage(std::shared_ptr<client::Source> source, const TrainOptions& options,
                           const std::function<void(const EpochReport&)>& on_epoch = nullptr);

}  // namespace fanout::examples

#endif  // FANOUT_CLIENT_EXAMPLES_GRAPHSAGE_H_
