// The end-to-end benchmarks' usual set-up: partitions 0 and 1 of a
// two-partition dataset, each in its own fanout-server process, and a Cluster
// connected to both. Header-only: bench_util does not link the client.
#ifndef FANOUT_BENCH_TWO_SERVERS_H_
#define FANOUT_BENCH_TWO_SERVERS_H_

#include <memory>
#include <string>

#include "bench/bench_util.h"
#include "client/cluster.h"

namespace fanout::bench {

struct TwoServers {
  ServerProcess s0, s1;
  // Stops both server processes (drop any Cluster on them first).
  void Stop() {
    StopServerProcess(&s0);
    StopServerProcess(&s1);
  }
};

// Connects *cluster to the two servers. local_sampling false: every hop is
// asked of the servers, even where their exports could be sampled here.
inline Status ConnectTwoServers(const TwoServers& servers, bool local_sampling,
                                std::shared_ptr<client::Cluster>* cluster) {
  client::ClusterSpec spec;
  spec.replicas = {{servers.s0.rpc}, {servers.s1.rpc}};
  if (!local_sampling) {
    spec.has_local_sampling = true;
    spec.local_sampling = false;
  }
  return client::Cluster::Connect(spec, {}, cluster);
}

// Starts the two servers of `dir` (exits if one does not start) and connects
// *cluster to them; the servers are left running whether or not the connect
// succeeds (the caller stops them).
inline Status StartTwoServers(const std::string& dir, TwoServers* servers,
                              std::shared_ptr<client::Cluster>* cluster) {
  servers->s0 = StartServerProcess(dir, 0, false);
  servers->s1 = StartServerProcess(dir, 1, false);
  return ConnectTwoServers(*servers, true, cluster);
}

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_TWO_SERVERS_H_
