// fanout-bench-server: one fanout-server process serving the R-MAT benchmark
// graph (scale 20, out-neighbors, 128-dim float32 features), measured over
// loopback beside what the same machine does without the RPC layer:
//   rpc_sample    one-hop sampling over RPC vs the in-process sampler
//   rpc_features  1024-row feature lookups (512 KiB replies) vs the same
//                 exchange over plain blocking sockets, same client threads
//   tls_features  the same feature lookups from a second server process that
//                 serves RPC over TLS, beside plain TCP to the first
//   churn         16 clients that connect, send a mix of valid and invalid
//                 requests and disconnect, for rounds of --churn-seconds: the
//                 server's resident set after each round (bounded by design)
//   memory        the server's resident set vs the raw size of its arrays
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench_util.h"
#include "bench/plain_server.h"
#include "common/cpu.h"
#include "common/random.h"
#include "datasets/partition_store.h"
#include "rpc/rpc_client.h"
#include "sampler/neighbor_sampler.h"
#include "tests/server/test_certs.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using fanout::Status;

using fanout::bench::PlainServer;
using fanout::bench::ReadAll;
using fanout::bench::WriteAll;

namespace {}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fanout-bench-server: a fanout-server over loopback beside the same work without RPC."};
  int scale = 20, max_threads = 2;
  double seconds = 3;
  std::string work, json_path;
  app.add_option("--scale", scale, "R-MAT scale")->default_val(20)->check(CLI::Range(8, 24));
  app.add_option("--seconds", seconds, "Seconds per case")->default_val(3.0);
  app.add_option("--threads", max_threads, "Client threads: 1..N")->default_val(2);
  app.add_option("--work-dir", work, "Keep the dataset here (default: temporary, removed)");
  app.add_option("--json", json_path, "Write the cases as a JSON array to this file");
  double churn_seconds = 20;
  int churn_rounds = 3;
  app.add_option("--churn-seconds", churn_seconds,
                 "Seconds per round of the churn case (0 = skip it)")
      ->default_val(20.0);
  app.add_option("--churn-rounds", churn_rounds, "Rounds of the churn case")->default_val(3);
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);

  bool own = false;
  work = fanout::bench::WorkDir(work, "fanout-bench-server", &own);
  std::string dir = work + "/rmat" + std::to_string(scale);
  fanout::bench::EnsureRmatDataset(dir, scale, 1, 128);
  auto server = fanout::bench::StartServerProcess(dir, 0, /*admin=*/true);
  std::printf("%s", server.ready_line.c_str());
  std::string host;
  int port = 0;
  if (!fanout::rpc::ParseAddress(server.rpc, &host, &port).ok()) return 1;
  const int admin = server.admin_port;

  // The same partition in this process, for the baselines.
  fanout::datasets::PartitionData d;
  Status st = fanout::datasets::OpenPartition(dir, 0, {}, &d);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  fanout::sampler::CsrGraph g = d.Graph();
  nlohmann::json cases = nlohmann::json::array();
  const int64_t kSampleBatch = 4096, kFanout = 10, kRows = 1024;
  const size_t row_bytes = static_cast<size_t>(d.meta.feature_dim) * 4;

  for (int threads = 1; threads <= max_threads; ++threads) {
    // One-hop sampling: RPC vs in process.
    std::vector<std::unique_ptr<fanout::rpc::RpcClient>> clients(threads);
    for (auto& c : clients)
      if (!fanout::rpc::RpcClient::Connect("127.0.0.1", port, {}, &c).ok()) return 1;
    double rpc_edges = fanout::bench::Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
      thread_local fanout::rpc::SampleReply reply;
      auto ids = fanout::bench::RandomIds(kSampleBatch, d.node_begin, d.node_end, 1000 * t + i);
      fanout::rpc::SampleCall call;
      call.fanout = kFanout;
      call.seed = static_cast<uint64_t>(i);
      if (!clients[t]->Sample(ids, call, &reply).ok()) std::abort();
      return static_cast<int64_t>(reply.Neighbors().size());
    });
    double local_edges = fanout::bench::Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
      thread_local fanout::sampler::HopSampler sampler;
      thread_local fanout::sampler::OneHopResult hop;
      auto ids = fanout::bench::RandomIds(kSampleBatch, d.node_begin, d.node_end, 1000 * t + i);
      fanout::sampler::SamplingOptions so;
      if (!sampler.Sample(g, ids, kFanout, 0, static_cast<uint64_t>(i), so, nullptr, &hop).ok())
        std::abort();
      return static_cast<int64_t>(hop.neighbors.size());
    });
    std::printf(
        "%d client thread(s): one-hop sampling (batch %lld, fanout %lld): RPC %.2f M edges/s, "
        "in-process %.2f M "
        "edges/s, ratio %.3f\n",
        threads, static_cast<long long>(kSampleBatch), static_cast<long long>(kFanout),
        rpc_edges / 1e6, local_edges / 1e6, rpc_edges / local_edges);
    cases.push_back({{"case", "rpc_sample"},
                     {"threads", threads},
                     {"batch", kSampleBatch},
                     {"fanout", kFanout},
                     {"edges_per_s", rpc_edges},
                     {"inprocess_edges_per_s", local_edges},
                     {"ratio", rpc_edges / local_edges}});

    // Feature lookup: RPC vs plain sockets.
    double rpc_bytes = fanout::bench::Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
      thread_local std::string rows;
      auto ids = fanout::bench::RandomIds(kRows, d.node_begin, d.node_end, 7000 * t + i);
      if (!clients[t]->Features(ids, &rows).ok()) std::abort();
      return static_cast<int64_t>(rows.size());
    });
    clients.clear();
    double plain_bytes;
    {
      PlainServer plain(d);
      std::vector<int> fds(threads);
      for (auto& fd : fds) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(plain.port()));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
      plain_bytes = fanout::bench::Measure(threads, seconds, [&](int t, int64_t i) -> int64_t {
        thread_local std::vector<char> buf;
        auto ids = fanout::bench::RandomIds(kRows, d.node_begin, d.node_end, 7000 * t + i);
        uint32_t n = static_cast<uint32_t>(ids.size());
        buf.resize(n * row_bytes);
        if (!WriteAll(fds[t], &n, 4) || !WriteAll(fds[t], ids.data(), n * 8) ||
            !ReadAll(fds[t], buf.data(), buf.size()))
          std::abort();
        return static_cast<int64_t>(buf.size());
      });
      for (int fd : fds) close(fd);
    }
    std::printf(
        "%d client thread(s): feature lookup (%lld rows x %lld float32 = %zu KiB replies): RPC "
        "%.2f GB/s, plain "
        "sockets %.2f GB/s, ratio %.3f\n",
        threads, static_cast<long long>(kRows), static_cast<long long>(d.meta.feature_dim),
        kRows * row_bytes / 1024, rpc_bytes / 1e9, plain_bytes / 1e9, rpc_bytes / plain_bytes);
    cases.push_back({{"case", "rpc_features"},
                     {"threads", threads},
                     {"rows", kRows},
                     {"feature_dim", d.meta.feature_dim},
                     {"bytes_per_s", rpc_bytes},
                     {"plain_socket_bytes_per_s", plain_bytes},
                     {"ratio", rpc_bytes / plain_bytes}});
  }

  // TLS: the same feature lookups from a server serving RPC over TLS (its
  // certificate made here with openssl), beside plain TCP, one thread each.
  {
    fanout::server::testing::TestCerts certs;
    const std::string cert_dir = work + "/certs";
    fs::create_directories(cert_dir);
    if (!fanout::server::testing::MakeTestCerts(cert_dir, &certs)) {
      std::fprintf(stderr, "openssl could not make a certificate: TLS case skipped\n");
    } else {
      auto tls_server = fanout::bench::StartServerProcess(
          dir, 0, /*admin=*/false, {"--tls-cert", certs.server, "--tls-key", certs.server_key});
      fanout::rpc::RpcOptions tro;
      tro.tls.ca = certs.ca;
      std::string tls_host;
      int tls_port = 0;
      std::unique_ptr<fanout::rpc::RpcClient> plain_client, tls_client;
      if (!fanout::rpc::ParseAddress(tls_server.rpc, &tls_host, &tls_port).ok() ||
          !fanout::rpc::RpcClient::Connect("127.0.0.1", port, {}, &plain_client).ok() ||
          !fanout::rpc::RpcClient::Connect("127.0.0.1", tls_port, tro, &tls_client).ok())
        return 1;
      auto lookups = [&](fanout::rpc::RpcClient* c) {
        return fanout::bench::Measure(1, seconds, [&](int, int64_t i) -> int64_t {
          thread_local std::string rows;
          auto ids = fanout::bench::RandomIds(kRows, d.node_begin, d.node_end, 9000 + i);
          Status s = c->Features(ids, &rows);
          if (!s.ok()) {
            std::fprintf(stderr, "%s\n", s.ToString().c_str());
            std::abort();
          }
          return static_cast<int64_t>(rows.size());
        });
      };
      // Alternated, twice each, so that both see the same machine.
      double plain = 0, tls = 0;
      for (int round = 0; round < 2; ++round) {
        plain += lookups(plain_client.get()) / 2;
        tls += lookups(tls_client.get()) / 2;
      }
      std::printf(
          "1 client thread: feature lookup (%lld rows, %zu KiB replies): TLS %.2f GB/s, plain TCP "
          "%.2f GB/s, "
          "ratio %.3f\n",
          static_cast<long long>(kRows), kRows * row_bytes / 1024, tls / 1e9, plain / 1e9,
          tls / plain);
      cases.push_back({{"case", "tls_features"},
                       {"threads", 1},
                       {"rows", kRows},
                       {"bytes_per_s", tls},
                       {"plain_tcp_bytes_per_s", plain},
                       {"ratio", tls / plain}});
      tls_client.reset();
      plain_client.reset();
      fanout::bench::StopServerProcess(&tls_server);
    }
  }

  // Churn: 16 clients connect, send valid and invalid requests, disconnect;
  // the server's RSS after each round.
  httplib::Client admin_http("127.0.0.1", admin);
  auto server_rss = [&]() -> double {
    auto r = admin_http.Get("/stats");
    return r ? nlohmann::json::parse(r->body)["memory"]["rss_bytes"].get<double>() : 0;
  };
  if (churn_seconds > 0) {
    nlohmann::json rounds = nlohmann::json::array();
    const double rss0 = server_rss();
    std::printf(
        "churn: 16 clients, valid and invalid requests, a new connection every 8 requests; server "
        "RSS before: "
        "%.1f MiB\n",
        rss0 / 1048576);
    std::atomic<int64_t> ok{0}, refused{0};
    for (int round = 0; round < churn_rounds; ++round) {
      fanout::bench::Measure(16, churn_seconds, [&](int t, int64_t i) -> int64_t {
        thread_local std::unique_ptr<fanout::rpc::RpcClient> c;
        if (!c || i % 8 == 0) {
          c.reset();
          if (!fanout::rpc::RpcClient::Connect("127.0.0.1", port, {}, &c).ok()) return 0;
        }
        thread_local std::string rows;
        auto ids = fanout::bench::RandomIds(kRows, d.node_begin, d.node_end, 5000 * t + i);
        if (i % 3 == 1)
          ids[ids.size() / 2] = d.node_end + 5;  // out of range: refused, naming the id
        if (i % 10 == 9)
          ids.assign((size_t{1} << 22) + 1, 1);  // one over --max-ids (32 MiB of ids): refused
        Status s = c->Features(ids, &rows);
        ++(s.ok() ? ok : refused);
        if (!s.ok() && s.code() != fanout::Status::Code::kInvalidArgument) c.reset();
        return 1;
      });
      const double rss = server_rss();
      std::printf("churn round %d: server RSS %.1f MiB (%lld answered, %lld refused so far)\n",
                  round + 1, rss / 1048576, static_cast<long long>(ok.load()),
                  static_cast<long long>(refused.load()));
      rounds.push_back(rss);
    }
    cases.push_back({{"case", "churn"},
                     {"clients", 16},
                     {"seconds_per_round", churn_seconds},
                     {"rss_before_bytes", rss0},
                     {"rss_after_round_bytes", rounds},
                     {"answered", ok.load()},
                     {"refused", refused.load()}});
  }

  // Memory, as the server reports it.
  httplib::Client http("127.0.0.1", admin);
  auto res = http.Get("/stats");
  if (res) {
    auto j = nlohmann::json::parse(res->body);
    double rss = j["memory"]["rss_bytes"].get<double>(),
           arrays = j["memory"]["array_bytes"].get<double>();
    std::printf("server memory: RSS %.1f MiB, arrays %.1f MiB, ratio %.3f (bar <= 1.3)\n",
                rss / 1048576, arrays / 1048576, rss / arrays);
    std::printf("server /stats throughput (60 s): %s\n", j["throughput"]["60s"].dump().c_str());
    cases.push_back(
        {{"case", "memory"}, {"rss_bytes", rss}, {"array_bytes", arrays}, {"ratio", rss / arrays}});
  }
  int exit_code = fanout::bench::StopServerProcess(&server);
  if (own) fs::remove_all(work);
  fanout::bench::WriteJson(json_path, cases);
  if (exit_code != 0)
    std::fprintf(stderr, "fanout-server exited with %d after SIGTERM\n", exit_code);
  return exit_code == 0 ? 0 : 1;
}
