// A live partition on the server: the update log and the versioned delta
// over the served base (live/), opened and replayed at start, and the one
// write path (apply_updates). See docs/DESIGN.md "Live updates".
#ifndef FANOUT_SERVER_LIVE_PARTITION_H_
#define FANOUT_SERVER_LIVE_PARTITION_H_

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "live/update_log.h"
#include "live/versioned_partition.h"

namespace fanout::server {

struct ServerState;
class PrometheusText;

class LivePartition {
 public:
  // Opens `dir`/part-<k>.updates.log (the folder made if missing), replays
  // it over the served base (a batch the partition refuses on replay is
  // Corruption naming its record), and publishes what it holds. `report`
  // says what the open found (records replayed, a torn tail cut).
  static Status Open(const std::string& dir, const ServerState& state,
                     std::unique_ptr<LivePartition>* out, live::LogReplayReport* report);

  // One encoded update batch: decoded, checked, logged (durable), applied
  // and published; *version is where it is readable. InvalidArgument naming
  // the operation for a batch the partition refuses (nothing applied). A
  // retry of a batch already applied (live::RetryTable) is logged and
  // answered at its own version with *retry set, and not applied again.
  Status Apply(const std::string& bytes, uint64_t* version, int64_t* operations,
               bool* retry = nullptr);

  const live::VersionedPartition& partition() const { return *vp_; }
  // The version a read names (< 0: the newest committed; 0: the base).
  Status ReadVersion(int64_t requested, uint64_t* version) const;
  nlohmann::json StatsJson() const;
  // fanout_live_* gauges and counters for /metrics.
  void Prometheus(PrometheusText* out) const;

 private:
  LivePartition() = default;
  std::unique_ptr<live::VersionedPartition> vp_;
  std::unique_ptr<live::UpdateLog> log_;
  live::LogReplayReport opened_;
  live::RetryTable retries_;  // under the log's order lock (Append's callback) or the replay
  std::atomic<int64_t> batches_{0}, operations_{0}, refused_{0}, update_bytes_{0}, retried_{0};
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_LIVE_PARTITION_H_
