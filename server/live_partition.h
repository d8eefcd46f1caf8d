// A live partition on the server: the update log and the versioned delta
// over the served base (live/), opened and replayed at start, and the one
// write path (apply_updates). See docs/DESIGN.md "Live updates".
#ifndef FANOUT_SERVER_LIVE_PARTITION_H_
#define FANOUT_SERVER_LIVE_PARTITION_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/status.h"
#include "live/update_log.h"
#include "live/versioned_partition.h"
#include "server/live_replication.h"

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
  ~LivePartition();

  // Compaction in the background (ServerOptions::live_compact_*): a thread
  // that folds the delta into a new base when it passes its trigger, and
  // releases the generation before once no read came to it for retain_s.
  struct CompactionPolicy {
    double ratio = 0.1;     // edge changes / base edges (0: off)
    int64_t bytes = 0;      // delta bytes (0: off)
    int64_t max_bytes = 0;  // the new base's arrays at most (0: no bound)
    double retain_s = 10;   // the generation before, after its last read
    double poll_s = 0.2;    // how often the thread looks
    // After a compaction, once the log holds this many bytes, the new base
    // is written to the live folder and the log cut at its version (0:
    // after every compaction; < 0: never).
    int64_t checkpoint_bytes = int64_t{64} << 20;
  };
  void StartCompactor(const CompactionPolicy& policy);
  // Compacts now at the newest committed version (what the thread does when
  // its trigger passes): the thread runs it, at its priority, and this
  // waits for the answer (Aborted while the generation before is kept).
  Status CompactNow(live::CompactionReport* report);

  // One encoded update batch: decoded, checked, logged (durable), applied
  // and published; *version is where it is readable. InvalidArgument naming
  // the operation for a batch the partition refuses (nothing applied). A
  // retry of a batch already applied (live::RetryTable) is logged and
  // answered at its own version with *retry set, and not applied again.
  // On a primary with followers in sync, it returns once they hold the
  // batch durably too (or the wait passed: ReplicaFeed). A follower refuses
  // it (NotSupported naming its primary).
  Status Apply(const std::string& bytes, uint64_t* version, int64_t* operations,
               bool* retry = nullptr);

  // Replicas (server/live_replication.h). Every live partition is a primary
  // unless it follows one: StartFollowing catches up with the primary (the
  // server serves only after) and then follows on a thread.
  struct Replication {
    std::string follow;                     // the primary's HOST:PORT ("": this is a primary)
    std::string token;                      // presented to it
    std::string name;                       // this replica's name there
    std::string tls_ca, tls_cert, tls_key;  // TLS to it (empty ca: plain TCP)
    double catch_up_s = 60;                 // 0: serve what it holds at once, follow from then on
    int wait_ms = 1000;  // a primary's write waits this long for an in-sync follower
    int64_t feed_bytes = int64_t{256} << 20;  // a primary's records kept for followers
  };
  Status StartReplication(const Replication& r);
  // A follower's primary ("" on a primary).
  const std::string& follows() const { return follows_; }
  // fetch_updates on a primary (NotSupported on a follower); never
  // waits: WaitNewerForFollower is the long poll's wait.
  Status FetchForFollower(const std::string& name, uint64_t after, int64_t max_bytes,
                          std::string* records, uint64_t* committed, uint64_t* oldest);
  void WaitNewerForFollower(uint64_t after, int wait_ms) { feed_.WaitNewer(after, wait_ms); }

  const live::VersionedPartition& partition() const { return *vp_; }
  // The version of the base file the open read (0: none; the dataset's base).
  uint64_t opened_base_version() const { return opened_base_version_; }
  // The dataset's base arrays, moved out of the loaded partition (the
  // server's view keeps pointing at them): freed once a compaction replaced
  // them and no read holds them.
  void AdoptBase(std::unique_ptr<live::Generation::Arrays> arrays) {
    vp_->AdoptBase(std::move(arrays));
  }
  // The version a read names (< 0: the newest committed; 0: the base).
  Status ReadVersion(int64_t requested, uint64_t* version) const;
  nlohmann::json StatsJson() const;
  // fanout_live_* gauges and counters for /metrics.
  void Prometheus(PrometheusText* out) const;

 private:
  LivePartition() = default;
  Status RunCompaction(live::CompactionReport* report);
  // Writes the current compacted base to the live folder and cuts the log
  // at its version (the compactor thread, after a compaction).
  Status WriteBase();
  // Record `seq` of the log, in log order (the replay, a write under the
  // log's order lock, a follower's append): told from a retry by the retry
  // table, heard, and applied unless a retry. False for a retry.
  bool ApplyInOrder(uint64_t seq, const live::UpdateBatch& b);
  // A batch heard from writer `writer` (its `writer_seq`) at `seq`, applied
  // or a retry: kept until a base file at or above `seq` folds it into
  // base_retries_ (as RetryTable::Admit folded it into retries_).
  void NoteHeard(uint64_t seq, uint64_t writer, uint64_t writer_seq);
  // A follower's: the primary's records appended in order, each at the
  // version the primary gave it.
  Status ApplyReplicated(const std::vector<FeedRecord>& records);
  std::unique_ptr<live::VersionedPartition> vp_;
  std::unique_ptr<live::UpdateLog> log_;
  ReplicaFeed feed_;                        // a primary's records for its followers
  std::string follows_;                     // set before serving, then read-only
  std::unique_ptr<FollowerLink> follower_;  // a follower's link to its primary
  live::LogReplayReport opened_;
  live::RetryTable retries_;  // under the log's order lock (Append's callback) or the replay
  // The retry table at the version of the next base file: a base file must
  // hold the table as it was at its own version (the log's records above it
  // are replayed through it), not as it is when the file is written.
  struct Heard {
    uint64_t seq, writer, writer_seq;
  };
  std::mutex heard_mu_;
  std::deque<Heard> heard_;        // GUARDED_BY(heard_mu_): above base_retries_' version
  live::RetryTable base_retries_;  // GUARDED_BY(heard_mu_)
  std::string base_path_;
  uint64_t opened_base_version_ = 0;
  // Base files written (GUARDED_BY(compactor_mu_)).
  int64_t base_writes_ = 0;
  uint64_t base_file_version_ = 0;
  int64_t base_file_bytes_ = 0;
  double base_write_s_ = 0;
  std::string base_write_error_;
  std::atomic<int64_t> batches_{0}, operations_{0}, refused_{0}, update_bytes_{0}, retried_{0};
  // The compactor thread.
  CompactionPolicy policy_;
  std::thread compactor_;
  mutable std::mutex compactor_mu_;
  std::condition_variable compactor_cv_;
  bool stopping_ = false;                   // GUARDED_BY(compactor_mu_)
  uint64_t asked_ = 0, done_ = 0;           // GUARDED_BY(compactor_mu_): CompactNow's asks
  Status asked_status_;                     // GUARDED_BY(compactor_mu_): the last asked run's
  live::CompactionReport asked_report_;     // GUARDED_BY(compactor_mu_)
  std::string last_compaction_error_;       // GUARDED_BY(compactor_mu_)
  live::CompactionReport last_compaction_;  // GUARDED_BY(compactor_mu_)
  int64_t base_edges_ = 0;                  // the dataset's base edges in this partition
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_LIVE_PARTITION_H_
