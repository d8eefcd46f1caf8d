#include "bench/device_limits.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "storage/feature_file.h"

namespace fanout::bench {
namespace fs = std::filesystem;
namespace {
using Clock = std::chrono::steady_clock;

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

const char kBlkio[] = "/sys/fs/cgroup/blkio";

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << std::flush;
  if (!f) return Status::IOError("writing '" + text + "' to " + path + ": " + std::strerror(errno));
  return Status::OK();
}

// The blkio cgroup this process is in ("/" for the root), from /proc/self/cgroup.
std::string OwnBlkioGroup() {
  std::ifstream f("/proc/self/cgroup");
  for (std::string line; std::getline(f, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::stringstream controllers(line.substr(a + 1, b - a - 1));
    for (std::string c; std::getline(controllers, c, ',');)
      if (c == "blkio") return line.substr(b + 1);
  }
  return "/";
}
}  // namespace

RawRate RawReads(const std::vector<std::string>& files, int64_t block, int depth, int threads,
                 double seconds) {
  std::atomic<int64_t> total{0};
  const double cpu0 = ProcessCpuSeconds();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      const std::string& path = files[t % files.size()];
      const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
      if (fd < 0) return;
      const int64_t blocks = static_cast<int64_t>(fs::file_size(path)) / block - 1;
      io_uring ring;
      if (blocks < 1 || io_uring_queue_init(depth, &ring, 0) < 0) {
        ::close(fd);
        return;
      }
      storage::AlignedBuffer buf(static_cast<size_t>(block * depth));
      std::mt19937_64 rng(t + 1);
      int in_flight = 0;
      int64_t done = 0;
      auto submit = [&](int slot) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        const int64_t b = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(blocks));
        io_uring_prep_read(sqe, fd, buf.data() + slot * block, static_cast<unsigned>(block),
                           static_cast<uint64_t>(b * block));
        io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
        ++in_flight;
      };
      for (int s = 0; s < depth; ++s) submit(s);
      io_uring_submit(&ring);
      const auto t0 = Clock::now();
      while (Since(t0) < seconds) {
        io_uring_cqe* cqe;
        if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
        const int slot = static_cast<int>(io_uring_cqe_get_data64(cqe));
        io_uring_cqe_seen(&ring, cqe);
        --in_flight;
        ++done;
        submit(slot);
        io_uring_submit(&ring);
      }
      while (in_flight > 0) {
        io_uring_cqe* cqe;
        if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
        io_uring_cqe_seen(&ring, cqe);
        --in_flight;
      }
      io_uring_queue_exit(&ring);
      ::close(fd);
      total += done;
    });
  for (auto& t : ts) t.join();
  const double cpu = ProcessCpuSeconds() - cpu0;
  return {static_cast<double>(total) / seconds,
          total > 0 ? cpu / static_cast<double>(total.load()) : 0.0};
}

Status BlkioThrottle::Create(const std::string& path_on_device, int64_t iops,
                             std::unique_ptr<BlkioThrottle>* out) {
  if (iops < 1)
    return Status::InvalidArgument("a throttle of " + std::to_string(iops) + " reads/s");
  if (!fs::exists(std::string(kBlkio) + "/blkio.throttle.read_iops_device"))
    return Status::Unavailable(std::string(kBlkio) +
                               " has no blkio.throttle.read_iops_device (cgroup v1's blkio "
                               "controller is not mounted there)");
  struct stat st {};
  if (::stat(path_on_device.c_str(), &st) != 0)
    return Status::IOError(path_on_device + ": " + std::strerror(errno));
  std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  // A partition is throttled at its disk: /sys/dev/block/M:m/partition
  // exists, and the disk's "dev" is one folder up.
  const std::string sys = "/sys/dev/block/" + dev;
  std::error_code ec;
  if (fs::exists(sys + "/partition", ec)) {
    std::ifstream f(fs::canonical(sys, ec).parent_path() / "dev");
    std::string whole;
    if (f >> whole) dev = whole;
  }
  std::unique_ptr<BlkioThrottle> t(new BlkioThrottle());
  t->device_ = dev;
  t->iops_ = iops;
  t->home_ = std::string(kBlkio) + (OwnBlkioGroup() == "/" ? "" : OwnBlkioGroup());
  t->dir_ = std::string(kBlkio) + "/fanout-bench-" + std::to_string(::getpid());
  if (::mkdir(t->dir_.c_str(), 0755) != 0 && errno != EEXIST)
    return Status::Unavailable("making " + t->dir_ + ": " + std::strerror(errno) +
                               " (throttling the device needs root)");
  Status s =
      WriteFile(t->dir_ + "/blkio.throttle.read_iops_device", dev + " " + std::to_string(iops));
  if (!s.ok()) {
    ::rmdir(t->dir_.c_str());
    return s;
  }
  *out = std::move(t);
  return Status::OK();
}

Status BlkioThrottle::Add(pid_t pid) {
  FANOUT_RETURN_IF_ERROR(WriteFile(dir_ + "/cgroup.procs", std::to_string(pid)));
  added_.push_back(pid);
  return Status::OK();
}

void BlkioThrottle::RemoveAll() {
  for (pid_t p : added_) (void)WriteFile(home_ + "/cgroup.procs", std::to_string(p));
  added_.clear();
}

BlkioThrottle::~BlkioThrottle() {
  RemoveAll();
  // Processes that died inside leave it empty; rmdir fails only while a
  // process is still in it (then the group stays, named by the pid).
  ::rmdir(dir_.c_str());
}

}  // namespace fanout::bench
