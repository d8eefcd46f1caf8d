// UpdateLog: a partition's write-ahead log of graph updates (live graphs,
// docs/DESIGN.md "Live updates").
//
// An update batch is durable before it is acknowledged: Append returns once
// its record is written and fdatasync'd. Appends from many threads share one
// write and one sync (group commit: the first waiting writer becomes the
// leader, takes every record queued behind it, writes them with one pwrite
// and syncs once; the others wait for the leader's verdict), so a sync's cost
// is spread over every batch that arrived while the previous one ran.
//
// File layout (little-endian):
//   header  = "FNUPDLOG" u32 version u32 reserved u64 base_seq   (24 bytes)
//   record  = u32 magic "FNUR" u32 payload_bytes u64 seq u32 crc u32 reserved
//             payload                                               (24 + n bytes)
// Records carry consecutive sequence numbers from base_seq + 1; crc is
// CRC-32C over (payload_bytes, seq, payload). base_seq is the version a
// compaction folded into the base (records at or below it are not in the
// file).
//
// Open replays every record in order. Its end is judged as a crash leaves it:
//  - a torn tail (a header or payload cut short by the end of the file, zero
//    bytes where a record would start, or a final record whose checksum does
//    not match and after which nothing follows) is what a crash in the middle
//    of a write leaves; no record in it was acknowledged (acknowledgement
//    follows the sync). It is cut (the file truncated to the last whole
//    record) and said in the report.
//  - damage anywhere before the tail (a bad magic, checksum or sequence with
//    records after it, a record over the size limit) is refused: Corruption
//    naming the file, offset and sequence, and nothing past the last good
//    record is applied. A damaged final record cannot be told from a torn
//    write; it is cut and said (its batch, if it had been acknowledged, is
//    lost: the report and the server's /stats show the cut).
//
// Thread safety: Append, Stats and the accessors from any thread.
#ifndef FANOUT_LIVE_UPDATE_LOG_H_
#define FANOUT_LIVE_UPDATE_LOG_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fanout::live {

inline constexpr int64_t kLogHeaderBytes = 24;
inline constexpr int64_t kRecordHeaderBytes = 24;

struct UpdateLogOptions {
  // The largest record accepted (on append and on replay).
  int64_t max_record_bytes = int64_t{64} << 20;
  // Makes written bytes durable: fdatasync by default; tests inject failures.
  // Returns 0 or an errno value.
  std::function<int(int fd)> sync;
  // The base sequence of a new file (a log created after compaction).
  uint64_t base_seq = 0;
};

struct LogReplayReport {
  int64_t records = 0;      // replayed
  uint64_t base_seq = 0;    // the file's base
  uint64_t last_seq = 0;    // the last replayed record's (base_seq when none)
  int64_t bytes = 0;        // the file's size after any cut
  int64_t torn_bytes = 0;   // bytes cut from a torn tail
  std::string torn_reason;  // what the tail looked like ("" when nothing was cut)
  bool created = false;     // the file did not exist
};

struct UpdateLogStats {
  int64_t appends = 0;    // records made durable since open
  int64_t syncs = 0;      // group commits (one write and one sync each)
  int64_t bytes = 0;      // the file's size
  uint64_t last_seq = 0;  // the newest durable record's
  int64_t max_group = 0;  // the most records one sync made durable
};

class UpdateLog {
 public:
  using Replay = std::function<Status(uint64_t seq, std::string_view payload)>;

  // Opens `path` (created with its folder entry synced when missing), calls
  // `replay` on every record in order (an error from it stops the open and is
  // returned), cuts a torn tail and refuses damage (see above).
  static Status Open(const std::string& path, UpdateLogOptions options, const Replay& replay,
                     LogReplayReport* report, std::unique_ptr<UpdateLog>* out);
  ~UpdateLog();
  UpdateLog(const UpdateLog&) = delete;
  UpdateLog& operator=(const UpdateLog&) = delete;

  // Appends `payload` as the next record and returns once it is durable,
  // with its sequence number in *seq. `apply` (may be empty) runs under the
  // log's order lock once the record's sequence is assigned and before the
  // next record's is, so that whoever applies records in memory does so in
  // log order; it runs before the record is durable (the caller publishes
  // the version only after Append returns). After a failed write or sync
  // every later Append fails (IOError naming the file): what reached the disk
  // is decided by the next Open.
  Status Append(std::string_view payload, uint64_t* seq,
                const std::function<void(uint64_t seq)>& apply = {});
  // Appends `payloads` as consecutive records (one group commit where no
  // other writer is in between; `apply` runs for each, in order, as above)
  // and returns once the last is durable, its sequence number in *last_seq.
  // A follower replica applies its primary's records this way.
  Status AppendMany(const std::vector<std::string_view>& payloads, uint64_t* last_seq,
                    const std::function<void(uint64_t seq, size_t i)>& apply = {});

  // Drops every record at or below `keep_after` (a version a base file on
  // disk holds, LivePartition): the records above it are copied to
  // `path`.tmp behind a header whose base is `keep_after`, synced, and
  // renamed over the log (its folder synced), so a crash at any point leaves
  // the old log or the new one, each whole. Appends go on while the bulk is
  // copied and wait only while the records written meanwhile are, and the
  // rename. InvalidArgument where `keep_after` is above the newest durable
  // record. Not concurrent with itself.
  Status DropThrough(uint64_t keep_after);

  const std::string& path() const { return path_; }
  UpdateLogStats Stats() const;
  // The version the file starts after (its header's base).
  uint64_t base_seq() const;

 private:
  struct Pending {
    uint64_t seq = 0;
    std::string bytes;  // the whole record
    bool done = false;
    Status status;
  };
  UpdateLog(std::string path, int fd, UpdateLogOptions options, uint64_t base_seq,
            uint64_t last_seq, int64_t size);
  // The leader's write and sync of `group` (records in sequence order).
  Status WriteGroup(const std::deque<std::shared_ptr<Pending>>& group);

  const std::string path_;
  int fd_;  // the leader's to write; replaced by DropThrough while it is the leader
  const UpdateLogOptions options_;
  std::mutex drop_mu_;  // one DropThrough at a time
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Pending>> queue_;  // GUARDED_BY(mu_): assigned, not yet written
  bool leader_active_ = false;                  // GUARDED_BY(mu_)
  Status failed_;                               // GUARDED_BY(mu_): sticky after a failed write
  uint64_t next_seq_ = 0;                       // GUARDED_BY(mu_): the last assigned
  int64_t size_ = 0;                            // GUARDED_BY(mu_): bytes written (leader's)
  uint64_t base_seq_ = 0;                       // GUARDED_BY(mu_): the header's base
  UpdateLogStats stats_;                        // GUARDED_BY(mu_)
};

// fsync of the folder holding `path` (a new or renamed file's entry made durable).
Status SyncFolderOf(const std::string& path);
// IOError "<what> <path>: <strerror(err)>", for the live folder's files.
Status Errno(const std::string& what, const std::string& path, int err);

// One record's bytes (header and payload): for tests that build damaged logs.
std::string EncodeLogRecord(uint64_t seq, std::string_view payload);

}  // namespace fanout::live

#endif  // FANOUT_LIVE_UPDATE_LOG_H_
