// The storage device's limits for the disk benchmarks, measured in the same
// run: raw io_uring reads at a depth (no Fanout code on the path), and a
// cgroup v1 blkio throttle that makes the same device a slower one (for
// figures on "a device of about N reads/s" beside this machine's own).
#ifndef FANOUT_BENCH_DEVICE_LIMITS_H_
#define FANOUT_BENCH_DEVICE_LIMITS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace fanout::bench {

struct RawRate {
  double per_s = 0;         // reads/s summed over the threads
  double cpu_per_read = 0;  // CPU seconds of this process per read
};

// `threads` threads, each with its own ring of `depth` reads of `block`
// bytes at random aligned offsets of `files` (O_DIRECT, no checksum), for
// `seconds`. Reads/s summed, and the CPU each read cost (submission and
// reaping included).
RawRate RawReads(const std::vector<std::string>& files, int64_t block, int depth, int threads,
                 double seconds);

// A cgroup v1 blkio group limiting reads of the device that holds a path to
// `iops` per second (blkio.throttle.read_iops_device: applies to O_DIRECT
// reads of the processes in it). The processes added are moved back to the
// cgroup this process started in, and the group removed, on destruction.
class BlkioThrottle {
 public:
  // Needs root and cgroup v1's blkio mounted at /sys/fs/cgroup/blkio; the
  // error says which was missing.
  static Status Create(const std::string& path_on_device, int64_t iops,
                       std::unique_ptr<BlkioThrottle>* out);
  ~BlkioThrottle();
  BlkioThrottle(const BlkioThrottle&) = delete;
  BlkioThrottle& operator=(const BlkioThrottle&) = delete;

  // Moves a process (every thread of it) into the group.
  Status Add(pid_t pid);
  // Moves the processes added back where they were.
  void RemoveAll();
  const std::string& device() const { return device_; }  // "MAJ:MIN" of the whole disk
  int64_t iops() const { return iops_; }

 private:
  BlkioThrottle() = default;
  std::string dir_, home_, device_;
  int64_t iops_ = 0;
  std::vector<pid_t> added_;
};

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_DEVICE_LIMITS_H_
