#include "storage/block_reader.h"

#include <liburing.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "storage/io_gate.h"

namespace fanout::storage {

struct BlockReader::Ring {
  io_uring ring{};
  bool fixed = false;  // buffers registered
  ~Ring() { io_uring_queue_exit(&ring); }
};

namespace {
Status CheckArgs(int queue_depth, int64_t max_block_bytes) {
  if (queue_depth < 1 || queue_depth > 4096)
    return Status::InvalidArgument("queue depth " + std::to_string(queue_depth) +
                                   " is outside [1, 4096]");
  if (max_block_bytes < kFeatureBlockAlign || max_block_bytes % kFeatureBlockAlign != 0 ||
      max_block_bytes > (int64_t{64} << 20))
    return Status::InvalidArgument("block size " + std::to_string(max_block_bytes) +
                                   " is not a multiple of 4096 up to 64 MiB");
  return Status::OK();
}

std::string BlockText(const FeatureFile& f, int64_t b) {
  return f.path() + ": block " + std::to_string(b);
}

// The calling thread's place in the process's IoGate for one Read: an
// online reader is counted as waiting for its whole call; a batch reader
// asks for each read it submits (batch_gate() non-null) and gives each back.
class GateUse {
 public:
  GateUse() {
    const ReadClass c = ThreadReadClass();
    if (c == ReadClass::kNone) return;
    gate_ = &IoGate::Process();
    online_ = c == ReadClass::kOnline;
    if (online_) gate_->OnlineBegin();
  }
  ~GateUse() {
    if (gate_ != nullptr && online_) gate_->OnlineEnd();
  }
  GateUse(const GateUse&) = delete;
  GateUse& operator=(const GateUse&) = delete;
  IoGate* batch_gate() const { return online_ ? nullptr : gate_; }

 private:
  IoGate* gate_ = nullptr;
  bool online_ = false;
};

// One pread's turn for a batch reader (pread mode: one read at a time);
// nothing where `gate` is null.
class GateTurn {
 public:
  explicit GateTurn(IoGate* gate) : gate_(gate) {
    if (gate_ != nullptr && !gate_->BatchTryAcquire()) gate_->BatchWait();
  }
  ~GateTurn() {
    if (gate_ != nullptr) gate_->BatchDone(1);
  }
  GateTurn(const GateTurn&) = delete;
  GateTurn& operator=(const GateTurn&) = delete;

 private:
  IoGate* gate_ = nullptr;
};
}  // namespace

Status BlockReader::CreatePread(int queue_depth, int64_t max_block_bytes,
                                std::unique_ptr<BlockReader>* out) {
  FANOUT_RETURN_IF_ERROR(CheckArgs(queue_depth, max_block_bytes));
  std::unique_ptr<BlockReader> r(new BlockReader());
  r->depth_ = queue_depth;
  r->block_bytes_ = max_block_bytes;
  r->buffers_ = AlignedBuffer(static_cast<size_t>(max_block_bytes));
  *out = std::move(r);
  return Status::OK();
}

Status BlockReader::Create(int queue_depth, int64_t max_block_bytes,
                           std::unique_ptr<BlockReader>* out) {
  FANOUT_RETURN_IF_ERROR(CheckArgs(queue_depth, max_block_bytes));
  const char* off = std::getenv("FANOUT_NO_IO_URING");
  if (off != nullptr && std::strcmp(off, "1") == 0)
    return CreatePread(queue_depth, max_block_bytes, out);
  std::unique_ptr<BlockReader> r(new BlockReader());
  r->depth_ = queue_depth;
  r->block_bytes_ = max_block_bytes;
  auto ring = std::make_unique<Ring>();
  const int rc = io_uring_queue_init(static_cast<unsigned>(queue_depth), &ring->ring, 0);
  if (rc < 0) {
    // ENOSYS (no io_uring), EPERM (a seccomp profile), ENOMEM (locked-memory
    // limit): the same reads, one at a time.
    return CreatePread(queue_depth, max_block_bytes, out);
  }
  r->buffers_ = AlignedBuffer(static_cast<size_t>(queue_depth * max_block_bytes));
  std::vector<iovec> iov(static_cast<size_t>(queue_depth));
  for (int i = 0; i < queue_depth; ++i)
    iov[i] = {r->buffers_.data() + i * max_block_bytes, static_cast<size_t>(max_block_bytes)};
  // Registered once: each read then skips pinning its pages. Optional (a
  // low RLIMIT_MEMLOCK refuses it): plain reads into the same buffers.
  ring->fixed = io_uring_register_buffers(&ring->ring, iov.data(), iov.size()) == 0;
  r->ring_ = std::move(ring);
  *out = std::move(r);
  return Status::OK();
}

BlockReader::~BlockReader() {
  ring_.reset();
  // Reads the kernel may still complete must not land in freed memory.
  if (lost_reads_) (void)buffers_.Leak();
}

Status BlockReader::ReadPread(const FeatureFile& file, const int64_t* blocks, int64_t n,
                              const std::function<void(int64_t, const char*)>& done,
                              IoGate* batch_gate) {
  const FeatureFileGeometry& g = file.geometry();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = blocks[i];
    if (b < 0 || b >= g.num_blocks)
      return Status::InvalidArgument(BlockText(file, b) + " is outside the file");
    GateTurn turn(batch_gate);  // a batch reader's one read counted in the gate while it runs
    int64_t got = 0;
    while (got < g.block_bytes) {
      const ssize_t r = pread(file.fd(), buffers_.data() + got,
                              static_cast<size_t>(g.block_bytes - got), g.BlockOffset(b) + got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::IOError(BlockText(file, b) + ": " + std::strerror(errno));
      if (r == 0) return Status::Corruption(BlockText(file, b) + ": the file ends inside it");
      got += r;
    }
    ++stats_.reads;
    stats_.bytes += g.block_bytes;
    stats_.max_in_flight = std::max<int64_t>(stats_.max_in_flight, 1);
    FANOUT_RETURN_IF_ERROR(file.VerifyBlock(b, buffers_.data()));
    done(i, buffers_.data());
  }
  return Status::OK();
}

Status BlockReader::Read(const FeatureFile& file, const int64_t* blocks, int64_t n,
                         const std::function<void(int64_t, const char*)>& done) {
  const FeatureFileGeometry& g = file.geometry();
  if (g.block_bytes > block_bytes_)
    return Status::InvalidArgument(file.path() + ": blocks of " + std::to_string(g.block_bytes) +
                                   " bytes, this reader's buffers hold " +
                                   std::to_string(block_bytes_));
  if (n <= 0) return Status::OK();
  GateUse use;
  IoGate* const batch_gate = use.batch_gate();
  if (!ring_) return ReadPread(file, blocks, n, done, batch_gate);
  io_uring* ring = &ring_->ring;
  // Buffer slot s holds request slot_req[s] (-1 free); each read carries
  // its slot in user_data.
  std::vector<int64_t> slot_req(static_cast<size_t>(depth_), -1);
  std::vector<int> free_slots;
  free_slots.reserve(static_cast<size_t>(depth_));
  for (int s = depth_ - 1; s >= 0; --s) free_slots.push_back(s);
  int64_t next = 0, in_flight = 0;
  Status first;
  // Partial reads (rare: signals) are finished with pread in place.
  auto finish_short = [&](int slot, int64_t b, int64_t got) -> Status {
    char* buf = buffers_.data() + static_cast<int64_t>(slot) * block_bytes_;
    while (got < g.block_bytes) {
      const ssize_t r = pread(file.fd(), buf + got, static_cast<size_t>(g.block_bytes - got),
                              g.BlockOffset(b) + got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::IOError(BlockText(file, b) + ": " + std::strerror(errno));
      if (r == 0) return Status::Corruption(BlockText(file, b) + ": the file ends inside it");
      got += r;
    }
    return Status::OK();
  };
  while (next < n || in_flight > 0) {
    // Fill the queue (none after an error: only the ones out are waited for).
    int queued = 0;
    while (first.ok() && next < n && !free_slots.empty()) {
      const int64_t b = blocks[next];
      if (b < 0 || b >= g.num_blocks) {
        first = Status::InvalidArgument(BlockText(file, b) + " is outside the file");
        break;
      }
      if (batch_gate != nullptr && !batch_gate->BatchTryAcquire()) {
        // An online read waits: wait for one of ours to complete, or, with
        // none out, for the gate.
        if (in_flight > 0) break;
        batch_gate->BatchWait();
      }
      io_uring_sqe* sqe = io_uring_get_sqe(ring);
      if (sqe == nullptr) {
        if (batch_gate != nullptr) batch_gate->BatchDone(1);
        break;
      }
      const int slot = free_slots.back();
      free_slots.pop_back();
      char* buf = buffers_.data() + static_cast<int64_t>(slot) * block_bytes_;
      if (ring_->fixed)
        io_uring_prep_read_fixed(sqe, file.fd(), buf, static_cast<unsigned>(g.block_bytes),
                                 static_cast<uint64_t>(g.BlockOffset(b)), slot);
      else
        io_uring_prep_read(sqe, file.fd(), buf, static_cast<unsigned>(g.block_bytes),
                           static_cast<uint64_t>(g.BlockOffset(b)));
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
      slot_req[slot] = next++;
      ++queued;
      ++in_flight;
    }
    if (queued > 0) {
      int rc;
      do {
        rc = io_uring_submit(ring);
      } while (rc == -EINTR);
      if (rc < 0) {
        // Nothing of this batch went out: its reads are not in flight.
        in_flight -= queued;
        if (batch_gate != nullptr) batch_gate->BatchDone(queued);
        if (first.ok())
          first = Status::IOError(file.path() + ": io_uring_submit: " + std::strerror(-rc));
      }
      ++stats_.submits;
      stats_.max_in_flight = std::max(stats_.max_in_flight, in_flight);
    }
    if (in_flight == 0) break;
    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(ring, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) {
      if (first.ok())
        first = Status::IOError(file.path() + ": io_uring_wait_cqe: " + std::strerror(-rc));
      lost_reads_ = true;  // the ring is unusable with reads out: their buffers stay allocated
      if (batch_gate != nullptr) batch_gate->BatchDone(in_flight);  // not the gate's to hold
      break;
    }
    const int slot = static_cast<int>(io_uring_cqe_get_data64(cqe));
    const int res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    --in_flight;
    if (batch_gate != nullptr) batch_gate->BatchDone(1);
    if (slot < 0 || slot >= depth_ || slot_req[slot] < 0) continue;  // not ours
    const int64_t i = slot_req[slot];
    const int64_t b = blocks[i];
    slot_req[slot] = -1;
    Status st;
    if (res < 0)
      st = Status::IOError(BlockText(file, b) + ": " + std::strerror(-res));
    else if (res < g.block_bytes)
      st = finish_short(slot, b, res);
    const char* buf = buffers_.data() + static_cast<int64_t>(slot) * block_bytes_;
    if (st.ok()) {
      ++stats_.reads;
      stats_.bytes += g.block_bytes;
      st = file.VerifyBlock(b, buf);
    }
    if (st.ok() && first.ok()) done(i, buf);
    if (!st.ok() && first.ok()) first = st;
    free_slots.push_back(slot);
  }
  return first;
}

}  // namespace fanout::storage
