#include "storage/block_reader.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "storage/io_gate.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace fanout::storage {

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

// One Read's place in its gate: an online reader is counted as waiting for
// its whole call; a batch reader asks for each read it submits (batch_gate()
// non-null) and gives each back.
class GateUse {
 public:
  explicit GateUse(const ReadOptions& o) {
    if (o.read_class == ReadClass::kNone || o.gate == nullptr) return;
    gate_ = o.gate;
    online_ = o.read_class == ReadClass::kOnline;
    if (online_) gate_->OnlineBegin();
  }
  ~GateUse() {
    if (gate_ != nullptr && online_) gate_->OnlineEnd();
  }
  GateUse(const GateUse&) = delete;
  GateUse& operator=(const GateUse&) = delete;
  IoGate* batch_gate() const { return online_ ? nullptr : gate_; }
  // The gate an online reader reports its reads' latencies to (null: none).
  IoGate* online_gate() const { return online_ ? gate_ : nullptr; }

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
                                std::unique_ptr<BlockReader>* out, FileIo* io) {
  FANOUT_RETURN_IF_ERROR(CheckArgs(queue_depth, max_block_bytes));
  std::unique_ptr<BlockReader> r(new BlockReader());
  r->io_ = io != nullptr ? io : FileIo::Default();
  r->depth_ = queue_depth;
  r->block_bytes_ = max_block_bytes;
  r->buffers_ = AlignedBuffer(static_cast<size_t>(max_block_bytes));
  *out = std::move(r);
  return Status::OK();
}

Status BlockReader::Create(int queue_depth, int64_t max_block_bytes,
                           std::unique_ptr<BlockReader>* out, FileIo* io) {
  FANOUT_RETURN_IF_ERROR(CheckArgs(queue_depth, max_block_bytes));
  const char* off = std::getenv("FANOUT_NO_IO_URING");
  if (off != nullptr && std::strcmp(off, "1") == 0)
    return CreatePread(queue_depth, max_block_bytes, out, io);
  std::unique_ptr<BlockReader> r(new BlockReader());
  r->io_ = io != nullptr ? io : FileIo::Default();
  r->depth_ = queue_depth;
  r->block_bytes_ = max_block_bytes;
  std::unique_ptr<ReadRing> ring;
  if (r->io_->NewRing(static_cast<unsigned>(queue_depth), &ring) < 0) {
    // ENOSYS (no io_uring), EPERM (a seccomp profile), ENOMEM (locked-memory
    // limit): the same reads, one at a time.
    return CreatePread(queue_depth, max_block_bytes, out, io);
  }
  r->buffers_ = AlignedBuffer(static_cast<size_t>(queue_depth * max_block_bytes));
  std::vector<iovec> iov(static_cast<size_t>(queue_depth));
  for (int i = 0; i < queue_depth; ++i)
    iov[i] = {r->buffers_.data() + i * max_block_bytes, static_cast<size_t>(max_block_bytes)};
  // Registered once: each read then skips pinning its pages. Optional (a
  // low RLIMIT_MEMLOCK refuses it): plain reads into the same buffers.
  r->fixed_ = ring->RegisterBuffers(iov.data(), static_cast<unsigned>(iov.size()));
  r->ring_ = std::move(ring);
  *out = std::move(r);
  return Status::OK();
}

BlockReader::~BlockReader() { ring_.reset(); }

Status BlockReader::Retire(Status why, int64_t in_flight, int64_t unsubmitted) {
  // What was queued but never taken goes out now (a transient refusal), so
  // that every read of ours can be waited for before the ring goes.
  for (int tries = 0; unsubmitted > 0 && tries < 3; ++tries) {
    const int rc = ring_->Submit();
    if (rc < 0) break;
    unsubmitted -= rc;
  }
  if (unsubmitted == 0) {
    uint64_t ud = 0;
    int32_t res = 0;
    while (in_flight > 0 && ring_->Wait(timeout_ms_, &ud, &res) == 0) --in_flight;
  }
  ring_.reset();
  retired_ = true;
  if (in_flight > 0) {
    // Reads of ours may still land in these buffers: they are never freed or
    // reused (a bounded, counted leak: this reader's depth x block bytes).
    leaked_bytes_ += static_cast<int64_t>(buffers_.size());
    char* p = buffers_.Leak();
#if defined(__SANITIZE_ADDRESS__)
    __lsan_ignore_object(p);
#else
    (void)p;
#endif
    buffers_ = AlignedBuffer(static_cast<size_t>(block_bytes_));
  }
  return Status::IOError(why.message() + "; this reader's io_uring is retired (pread from now on)");
}

Status BlockReader::ReadPread(const FeatureFile& file, const int64_t* blocks, int64_t n,
                              const std::function<void(int64_t, const char*)>& done,
                              IoGate* batch_gate, IoGate* online_gate) {
  const FeatureFileGeometry& g = file.geometry();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = blocks[i];
    if (b < 0 || b >= g.num_blocks)
      return Status::InvalidArgument(BlockText(file, b) + " is outside the file");
    GateTurn turn(batch_gate);  // a batch reader's one read counted in the gate while it runs
    const int64_t t0 = online_gate != nullptr ? online_gate->Now() : 0;
    FANOUT_RETURN_IF_ERROR(ReadFully(io_, file.fd(), file.direct(), BlockText(file, b),
                                     buffers_.data(), g.block_bytes, g.BlockOffset(b)));
    if (online_gate != nullptr) online_gate->OnlineRead(online_gate->Now() - t0);
    ++stats_.reads;
    stats_.bytes += g.block_bytes;
    stats_.max_in_flight = std::max<int64_t>(stats_.max_in_flight, 1);
    FANOUT_RETURN_IF_ERROR(file.VerifyBlock(b, buffers_.data()));
    done(i, buffers_.data());
  }
  return Status::OK();
}

Status BlockReader::Read(const FeatureFile& file, const int64_t* blocks, int64_t n,
                         const std::function<void(int64_t, const char*)>& done,
                         const ReadOptions& options) {
  const FeatureFileGeometry& g = file.geometry();
  if (g.block_bytes > block_bytes_)
    return Status::InvalidArgument(file.path() + ": blocks of " + std::to_string(g.block_bytes) +
                                   " bytes, this reader's buffers hold " +
                                   std::to_string(block_bytes_));
  if (n <= 0) return Status::OK();
  GateUse use(options);
  IoGate* const batch_gate = use.batch_gate();
  IoGate* const online_gate = use.online_gate();
  if (!ring_) return ReadPread(file, blocks, n, done, batch_gate, online_gate);
  // Buffer slot s holds request slot_req[s] (-1 free); each read carries
  // its slot in user_data. An online reader notes when each was queued
  // (slot_t0) and reports the latency to the gate.
  std::vector<int64_t> slot_req(static_cast<size_t>(depth_), -1);
  std::vector<int64_t> slot_t0(online_gate != nullptr ? static_cast<size_t>(depth_) : 0);
  std::vector<int> free_slots;
  free_slots.reserve(static_cast<size_t>(depth_));
  for (int s = depth_ - 1; s >= 0; --s) free_slots.push_back(s);
  // in_flight: reads queued or out (each holds a slot and, for a batch
  // reader, a turn of the gate); unsubmitted: of those, not yet taken.
  int64_t next = 0, in_flight = 0, unsubmitted = 0;
  Status first;
  // A failure of the ring: the gate's turns given back, the ring retired.
  auto ring_failed = [&](const std::string& what) {
    if (batch_gate != nullptr && in_flight > 0) batch_gate->BatchDone(in_flight);
    Status st = Retire(Status::IOError(file.path() + ": " + what), in_flight, unsubmitted);
    return first.ok() ? st : first;
  };
  while (next < n || in_flight > 0) {
    // Fill the queue (none after an error: only the ones out are waited for).
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
      const int slot = free_slots.back();
      char* buf = buffers_.data() + static_cast<int64_t>(slot) * block_bytes_;
      if (!ring_->QueueRead(file.fd(), buf, static_cast<unsigned>(g.block_bytes),
                            static_cast<uint64_t>(g.BlockOffset(b)), fixed_ ? slot : -1,
                            static_cast<uint64_t>(slot))) {
        if (batch_gate != nullptr) batch_gate->BatchDone(1);
        break;
      }
      free_slots.pop_back();
      if (online_gate != nullptr) slot_t0[slot] = online_gate->Now();
      slot_req[slot] = next++;
      ++unsubmitted;
      ++in_flight;
    }
    // Everything queued is handed over before any wait: a wait with reads
    // still queued would wait for ever.
    for (int zero = 0; unsubmitted > 0;) {
      const int rc = ring_->Submit();
      ++stats_.submits;
      if (rc < 0)
        return ring_failed("io_uring_submit: " + std::string(std::strerror(-rc)) + " with " +
                           std::to_string(unsubmitted) + " reads queued");
      if (rc == 0 && ++zero >= 3)
        return ring_failed("io_uring_submit took none of " + std::to_string(unsubmitted) +
                           " queued reads");
      unsubmitted -= rc;
    }
    stats_.max_in_flight = std::max(stats_.max_in_flight, in_flight);
    if (in_flight == 0) break;
    uint64_t ud = 0;
    int32_t res = 0;
    const int rc = ring_->Wait(timeout_ms_, &ud, &res);
    if (rc == -ETIME)
      return ring_failed(std::to_string(in_flight) + " reads not completed within " +
                         std::to_string(timeout_ms_) + " ms (a stalled device?)");
    if (rc < 0) return ring_failed("io_uring_wait_cqe: " + std::string(std::strerror(-rc)));
    const int64_t slot = static_cast<int64_t>(ud);
    if (slot < 0 || slot >= depth_ || slot_req[slot] < 0)
      return ring_failed("a completion names no read in flight (user data " + std::to_string(ud) +
                         ")");
    --in_flight;
    if (batch_gate != nullptr) batch_gate->BatchDone(1);
    if (online_gate != nullptr) online_gate->OnlineRead(online_gate->Now() - slot_t0[slot]);
    const int64_t i = slot_req[slot];
    const int64_t b = blocks[i];
    slot_req[slot] = -1;
    char* buf = buffers_.data() + slot * block_bytes_;
    Status st;
    if (res < 0)
      st = Status::IOError(BlockText(file, b) + ": " + std::strerror(-res));
    else if (res < g.block_bytes)  // a short read: finished with pread, in place
      st = ReadFully(io_, file.fd(), file.direct(), BlockText(file, b), buf, g.block_bytes,
                     g.BlockOffset(b), res);
    if (st.ok()) {
      ++stats_.reads;
      stats_.bytes += g.block_bytes;
      st = file.VerifyBlock(b, buf);
    }
    if (st.ok() && first.ok()) done(i, buf);
    if (!st.ok() && first.ok()) first = st;
    free_slots.push_back(static_cast<int>(slot));
  }
  return first;
}

}  // namespace fanout::storage
