// train-graphsage: GraphSAGE trained through Fanout sampling servers (or on a
// local dataset folder), reporting loss and validation/test accuracy per epoch.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "client/cluster.h"
#include "client/examples/graphsage.h"
#include "common/version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "train-graphsage: 2-layer GraphSAGE (mean) trained through Fanout.\n"
      "Give --cluster (servers) or --dataset (a fanout-partition folder loaded in process)."};
  app.set_version_flag("--version", fanout::VersionLine("train-graphsage"));
  std::string cluster_file, dataset;
  fanout::examples::TrainOptions o;
  int threads = 0;
  auto* c = app.add_option(
      "--cluster", cluster_file,
      "Cluster file: {\"partitions\": [{\"partition\": 0, \"replicas\": [\"host:port\"]}]}");
  auto* d =
      app.add_option("--dataset", dataset, "Train on a local dataset folder instead of servers");
  c->excludes(d);
  app.add_option("--epochs", o.epochs, "Epochs")->default_val(30)->check(CLI::Range(1, 100000));
  app.add_option("--hidden", o.hidden, "Hidden units")
      ->default_val(64)
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--lr", o.lr, "Adam learning rate")->default_val(0.01);
  app.add_option("--weight-decay", o.weight_decay, "Adam weight decay")->default_val(5e-4);
  app.add_option("--dropout", o.dropout, "Dropout between the layers")->default_val(0.5);
  app.add_option("--fanouts", o.fanouts, "Training fanouts per hop (evaluation uses all neighbors)")
      ->delimiter(',')
      ->default_str("10,10");
  app.add_option("--batch-size", o.batch_size, "Seeds per training batch")
      ->default_val(64)
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--seed", o.seed, "Seed for model init, dropout, shuffling and sampling")
      ->default_val(0);
  app.add_option("--workers", o.num_workers, "Background sampling threads")
      ->default_val(2)
      ->check(CLI::Range(1, 64));
  app.add_option("--torch-threads", threads, "Threads for torch ops (0 = torch's default)")
      ->default_val(0);
  std::string dump;
  app.add_option("--dump-batches", dump,
                 "Write every training batch's epoch, n_id and edge_index to this file (JSON "
                 "lines; for comparing "
                 "other loaders with this one)");
  fanout::rpc::RpcOptions ro;
  app.add_option("--connect-timeout-ms", ro.connect_timeout_ms,
                 "With --cluster: TCP connect deadline per server")
      ->default_val(ro.connect_timeout_ms)
      ->check(CLI::Range(1, 3600000));
  app.add_option(
         "--call-timeout-ms", ro.call_timeout_ms,
         "With --cluster: deadline of each call; a server that misses it is failed over from")
      ->default_val(ro.call_timeout_ms)
      ->check(CLI::Range(1, 3600000));
  app.add_option("--health-check-ms", ro.health_check_ms,
                 "With --cluster: ping each replica this often (partitions with several replicas); "
                 "a replica that "
                 "fails it is given up on at once by data-plane requests waiting on it (0 = no "
                 "health checks)")
      ->default_val(ro.health_check_ms)
      ->check(CLI::Range(0, 3600000));
  std::string local_sampling = "auto";
  app.add_option("--local-sampling", local_sampling,
                 "With --cluster: sample partitions whose server shares this host here, on its "
                 "mapped export (auto), "
                 "or over RPC (off)")
      ->check(CLI::IsMember({"auto", "off"}));
  CLI11_PARSE(app, argc, argv);
  ro.local_sampling = local_sampling == "auto";
  std::FILE* dump_file = nullptr;
  if (!dump.empty()) {
    dump_file = std::fopen(dump.c_str(), "w");
    if (dump_file == nullptr) {
      std::fprintf(stderr, "train-graphsage: cannot write %s: %s\n", dump.c_str(),
                   std::strerror(errno));
      return 1;
    }
    o.on_batch = [dump_file](int epoch, const fanout::client::MiniBatch& b) {
      auto ints = [](const at::Tensor& t) {
        at::Tensor c = t.contiguous();
        const int64_t* p = c.data_ptr<int64_t>();
        return std::vector<int64_t>(p, p + c.numel());
      };
      nlohmann::json j = {{"epoch", epoch},
                          {"n_id", ints(b.n_id)},
                          {"edge_index", {ints(b.edge_index[0]), ints(b.edge_index[1])}}};
      std::fprintf(dump_file, "%s\n", j.dump().c_str());
    };
  }
  if (cluster_file.empty() == dataset.empty()) {
    std::fprintf(stderr, "train-graphsage: give exactly one of --cluster or --dataset\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (threads > 0) torch::set_num_threads(threads);

  std::shared_ptr<fanout::client::Source> source;
  std::shared_ptr<fanout::client::Cluster> the_cluster;
  fanout::Status st;
  if (!cluster_file.empty()) {
    fanout::client::ClusterSpec spec;
    st = fanout::client::ReadClusterFile(cluster_file, &spec);
    std::shared_ptr<fanout::client::Cluster> cluster;
    if (st.ok()) st = fanout::client::Cluster::Connect(spec, ro, &cluster);
    source = cluster;
    the_cluster = cluster;
  } else {
    std::shared_ptr<fanout::client::LocalSource> local;
    st = fanout::client::LocalSource::Open(dataset, &local);
    source = local;
  }
  if (!st.ok()) {
    std::fprintf(stderr, "train-graphsage: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("training GraphSAGE on %s: %lld nodes, %lld features, %lld classes\n",
              source->description().c_str(), static_cast<long long>(source->num_nodes()),
              static_cast<long long>(source->feature_dim()),
              static_cast<long long>(source->num_classes()));
  try {
    auto result =
        fanout::examples::TrainGraphSage(source, o, [](const fanout::examples::EpochReport& r) {
          const auto& t = r.train_stats;
          std::printf(
              "epoch %3d  loss %.4f  val_acc %.3f  test_acc %.3f  (%.2f s; %.1f batches/s, %.1f k "
              "sampled edges/s, "
              "%.1f MB of features received, replies ucx %.1f MB + thrift %.1f MB, read here from "
              "co-located servers %.1f MB, %.3f s waiting on the network, all since start)\n",
              r.epoch, r.loss, r.val_acc, r.test_acc, r.seconds, t.batches_per_s(),
              t.sampled_edges_per_s() / 1e3, t.feature_bytes / 1e6, t.ucx_bytes / 1e6,
              t.thrift_bytes / 1e6, t.local_bytes / 1e6, t.network_wait_s);
        });
    // Replicas that failed a request or a health check, or took over from one.
    if (the_cluster)
      for (const auto& h : the_cluster->Health())
        if (h.failures > 0 || h.failovers_to > 0 || h.checks_failed > 0)
          std::printf(
              "partition %d replica %s: %s, %lld failed requests, %lld failovers to it, %lld of "
              "%lld health "
              "checks failed%s%s\n",
              h.partition, h.address.c_str(), h.healthy ? "healthy" : "unhealthy",
              static_cast<long long>(h.failures), static_cast<long long>(h.failovers_to),
              static_cast<long long>(h.checks_failed), static_cast<long long>(h.checks),
              h.last_error.empty() ? "" : "; last error: ", h.last_error.c_str());
    std::printf("test_accuracy=%.3f\n", result.test_acc);
    if (dump_file != nullptr && std::fclose(dump_file) != 0) {
      std::fprintf(stderr, "train-graphsage: writing %s failed\n", dump.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train-graphsage: %s\n", e.what());
    return 1;
  }
  return 0;
}
