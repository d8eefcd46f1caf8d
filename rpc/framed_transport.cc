#include "rpc/framed_transport.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <thrift/TApplicationException.h>
#include <thrift/TOutput.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSSLSocket.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>
#include <mutex>

namespace fanout::rpc {

std::shared_ptr<apache::thrift::TConfiguration> MakeThriftConfig(int64_t max_frame_bytes) {
  int limit = static_cast<int>(std::min<int64_t>(max_frame_bytes, std::numeric_limits<int>::max()));
  // Message and frame limits are the same: a message is one frame.
  return std::make_shared<apache::thrift::TConfiguration>(limit, limit);
}

ResettingFramedTransport::ResettingFramedTransport(
    std::shared_ptr<apache::thrift::transport::TTransport> inner,
    std::shared_ptr<apache::thrift::TConfiguration> config,
    std::unique_ptr<ConnectionGuard::Connection> conn)
    : TFramedTransport(inner, std::move(config)), conn_(std::move(conn)) {
  // An empty read buffer that is not null: Thrift's inline read path adds
  // lengths to its pointers, which is undefined on null (UBSan, fuzzing).
  rBuf_.reset(new uint8_t[kZeroCopyBytes]);
  rBufSize_ = kZeroCopyBytes;
  setReadBuffer(rBuf_.get(), 0);
  // Zero-copy sends write to the socket itself: never under TLS.
  if (dynamic_cast<apache::thrift::transport::TSocket*>(inner.get()) != nullptr &&
      dynamic_cast<apache::thrift::transport::TSSLSocket*>(inner.get()) == nullptr)
    fd_ = -2;  // resolved at flush
  header_ = wBuf_.get();
}

void ResettingFramedTransport::Seal() {
  uint8_t* begin = wBuf_.get() + sealed_;
  if (wBase_ > begin) pieces_.push_back({begin, static_cast<size_t>(wBase_ - begin)});
  sealed_ = static_cast<size_t>(wBase_ - wBuf_.get());
}

void ResettingFramedTransport::writeSlow(const uint8_t* buf, uint32_t len) {
  if (fd_ == -1) {
    TFramedTransport::writeSlow(buf, len);
    return;
  }
  if (len >= kZeroCopyBytes) {  // keep by reference
    Seal();
    pieces_.push_back({buf, len});
    return;
  }
  // A small write that does not fit: continue in a new buffer, keeping the
  // old one (pieces_ may point into it) until the frame is sent.
  Seal();
  uint32_t size = std::max<uint32_t>(wBufSize_ * 2, len + 1024);
  auto old = std::make_shared<boost::scoped_array<uint8_t>>();
  old->swap(wBuf_);
  retired_.push_back(std::move(old));
  wBuf_.reset(new uint8_t[size]);
  wBufSize_ = size;
  setWriteBuffer(wBuf_.get(), wBufSize_);
  sealed_ = 0;
  std::memcpy(wBase_, buf, len);
  wBase_ += len;
}

void ResettingFramedTransport::ResetWrite() {
  pieces_.clear();
  retired_.clear();
  sealed_ = 0;
  setWriteBuffer(wBuf_.get(), wBufSize_);
  header_ = wBuf_.get();
  int32_t pad = 0;
  write(reinterpret_cast<const uint8_t*>(&pad), sizeof pad);  // the size slot of the next frame
}

void ResettingFramedTransport::flush() {
  // A server's reply is counted in the request-memory budget while it goes
  // out (recorded, not waited for: it exists already), so that new request
  // frames wait while replies to slow clients hold memory.
  BudgetHold reply;
  if (conn_ && !conn_->refused()) {
    size_t bytes = static_cast<size_t>(wBase_ - wBuf_.get()) - sealed_;
    for (const Piece& p : pieces_) bytes += p.len;
    if (bytes > static_cast<size_t>(kMaxControlFrameBytes)) {
      MemoryBudget* budget = conn_->guard()->budget().get();
      budget->Force(static_cast<int64_t>(bytes));
      reply = BudgetHold(budget, static_cast<int64_t>(bytes));
    }
  }
  if (pieces_.empty()) {  // nothing went by reference: the ordinary path
    TFramedTransport::flush();
    header_ = wBuf_.get();
    return;
  }
  if (fd_ == -2)
    fd_ = static_cast<apache::thrift::transport::TSocket*>(transport_.get())->getSocketFD();
  Seal();
  size_t total = 0;
  for (const Piece& p : pieces_) total += p.len;
  uint32_t body = static_cast<uint32_t>(total - sizeof(uint32_t));
  uint32_t be = htonl(body);
  std::memcpy(header_, &be, sizeof be);
  std::vector<iovec> iov(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i)
    iov[i] = {const_cast<uint8_t*>(pieces_[i].data), pieces_[i].len};
  size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ResetWrite();
      if (err == EAGAIN || err == EWOULDBLOCK)
        throw apache::thrift::transport::TTransportException(
            apache::thrift::transport::TTransportException::TIMED_OUT, "send timed out");
      throw apache::thrift::transport::TTransportException(
          apache::thrift::transport::TTransportException::NOT_OPEN,
          std::string("send failed: ") + std::strerror(err));
    }
    size_t left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  ResetWrite();
}

void ResettingFramedTransport::close() {
  if (conn_) conn_->Close();  // before the socket closes: its descriptor may be reused
  TFramedTransport::close();
}

uint32_t ResettingFramedTransport::ReadSome(uint8_t* buf, uint32_t len, bool in_frame) {
  using apache::thrift::transport::TTransportException;
  // A frame must arrive whole by its deadline, however steadily it trickles in.
  if (in_frame && conn_ && !conn_->KeepWaiting(true))
    throw TTransportException(TTransportException::TIMED_OUT, "frame deadline passed");
  for (;;) {
    try {
      return transport_->read(buf, len);
    } catch (const apache::thrift::transport::TSSLException& e) {
      if (conn_) conn_->NoteTlsFailure(e.what());
      throw;
    } catch (const TTransportException& e) {
      if (!conn_ || e.getType() != TTransportException::TIMED_OUT || !conn_->KeepWaiting(in_frame))
        throw;
    }
  }
}

void ResettingFramedTransport::ReadAll(uint8_t* buf, uint32_t len) {
  uint32_t got = 0;
  while (got < len) {
    uint32_t n = ReadSome(buf + got, len - got, true);
    if (n == 0)
      throw apache::thrift::transport::TTransportException(
          apache::thrift::transport::TTransportException::END_OF_FILE,
          "No more data to read inside a frame.");
    got += n;
  }
}

void ResettingFramedTransport::Refuse(uint32_t frame_bytes) {
  using apache::thrift::transport::TMemoryBuffer;
  using apache::thrift::transport::TTransportException;
  // The request's name and sequence id, from its first bytes, so the client
  // matches the refusal to its call.
  std::vector<uint8_t> head(std::min<uint32_t>(frame_bytes, 4096));
  try {
    ReadAll(head.data(), static_cast<uint32_t>(head.size()));
    auto in = std::make_shared<TMemoryBuffer>(head.data(), static_cast<uint32_t>(head.size()));
    // Strings no longer than what was read, strict (versioned) messages only.
    apache::thrift::protocol::TBinaryProtocol iprot(in, static_cast<int32_t>(head.size()), 0, true,
                                                    true);
    std::string name;
    apache::thrift::protocol::TMessageType type;
    int32_t seqid = 0;
    iprot.readMessageBegin(name, type, seqid);
    auto out = std::make_shared<TMemoryBuffer>();
    apache::thrift::protocol::TBinaryProtocol oprot(out);
    oprot.writeMessageBegin(name, apache::thrift::protocol::T_EXCEPTION, seqid);
    apache::thrift::TApplicationException(apache::thrift::TApplicationException::INTERNAL_ERROR,
                                          conn_->why_refused())
        .write(&oprot);
    oprot.writeMessageEnd();
    uint8_t* body = nullptr;
    uint32_t body_len = 0;
    out->getBuffer(&body, &body_len);
    uint32_t be = htonl(body_len);
    transport_->write(reinterpret_cast<const uint8_t*>(&be), sizeof be);
    transport_->write(body, body_len);
    transport_->flush();
  } catch (...) {
    // A client that sends nothing usable is closed without an answer.
  }
  throw TTransportException(TTransportException::END_OF_FILE,
                            "connection refused at the connection limit");
}

void ResettingFramedTransport::FillBuffer() {
  if (rBufSize_ < kZeroCopyBytes) {
    rBuf_.reset(new uint8_t[kZeroCopyBytes]);
    rBufSize_ = kZeroCopyBytes;
  }
  uint32_t n = std::min(frame_left_, kZeroCopyBytes);
  ReadAll(rBuf_.get(), n);
  frame_left_ -= n;
  setReadBuffer(rBuf_.get(), n);
}

bool ResettingFramedTransport::readFrame() {
  resetConsumedMessageSize();  // the budget is per message, not per connection
  using apache::thrift::transport::TTransportException;
  if (conn_) conn_->Idle();
  uint8_t size_buf[4];
  uint32_t got = 0;
  while (got < sizeof size_buf) {
    uint32_t n = ReadSome(size_buf + got, sizeof size_buf - got, got > 0);
    if (n == 0) {
      if (got == 0) return false;  // clean end of stream between frames
      throw TTransportException(TTransportException::END_OF_FILE,
                                "No more data to read after partial frame header.");
    }
    if (got == 0 && conn_) conn_->Begin(0);  // a frame began: its deadline runs
    got += n;
  }
  int32_t sz;
  std::memcpy(&sz, size_buf, 4);
  sz = static_cast<int32_t>(ntohl(static_cast<uint32_t>(sz)));
  if (sz < 0) throw TTransportException("Frame size has negative value");
  if (static_cast<uint32_t>(sz) > maxFrameSize_)
    throw TTransportException(TTransportException::CORRUPTED_DATA, "MaxFrameSize reached");
  // Containers cannot declare more elements than the frame can hold.
  resetConsumedMessageSize(sz);
  if (conn_) {
    if (conn_->refused()) Refuse(static_cast<uint32_t>(sz));
    if (!conn_->Begin(sz))
      throw TTransportException(TTransportException::TIMED_OUT,
                                "request memory budget full (--max-inflight-mib)");
  }
  frame_left_ = static_cast<uint32_t>(sz);
  FillBuffer();
  return true;
}

uint32_t ResettingFramedTransport::readSlow(uint8_t* buf, uint32_t len) {
  uint32_t have = static_cast<uint32_t>(rBound_ - rBase_);
  if (have == 0 && frame_left_ == 0) {
    if (!readFrame()) return 0;
    have = static_cast<uint32_t>(rBound_ - rBase_);
  }
  if (have > 0) {
    uint32_t n = std::min(have, len);
    std::memcpy(buf, rBase_, n);
    rBase_ += n;
    return n;
  }
  // The buffer is drained but the frame goes on.
  if (len >= kZeroCopyBytes / 2) {  // large: straight from the socket into the caller's memory
    uint32_t n = ReadSome(buf, std::min(len, frame_left_), true);
    if (n == 0)
      throw apache::thrift::transport::TTransportException(
          apache::thrift::transport::TTransportException::END_OF_FILE,
          "No more data to read inside a frame.");
    frame_left_ -= n;
    return n;
  }
  FillBuffer();
  uint32_t n = std::min(static_cast<uint32_t>(rBound_ - rBase_), len);
  std::memcpy(buf, rBase_, n);
  rBase_ += n;
  return n;
}

void ResettingFramedTransport::ReadScatter(const iovec* segments, size_t count) {
  using apache::thrift::transport::TTransportException;
  size_t i = 0, off = 0;  // the next byte goes to segments[i] at off
  auto advance = [&](size_t n) {
    while (n > 0 && i < count) {
      const size_t take = std::min(n, segments[i].iov_len - off);
      off += take;
      n -= take;
      if (off == segments[i].iov_len) ++i, off = 0;
    }
    while (i < count && segments[i].iov_len == 0) ++i;
  };
  advance(0);
  // What the frame buffer holds first.
  while (i < count && rBase_ < rBound_) {
    const size_t n = std::min(static_cast<size_t>(rBound_ - rBase_), segments[i].iov_len - off);
    std::memcpy(static_cast<uint8_t*>(segments[i].iov_base) + off, rBase_, n);
    rBase_ += n;
    advance(n);
  }
  if (fd_ == -2)
    fd_ = static_cast<apache::thrift::transport::TSocket*>(transport_.get())->getSocketFD();
  const bool plain = fd_ >= 0 && conn_ == nullptr;  // a server's reads keep their deadline logic
  std::vector<iovec> window;
  while (i < count) {
    if (frame_left_ == 0)
      throw TTransportException(TTransportException::END_OF_FILE,
                                "No more data to read inside a frame.");
    size_t got = 0;
    if (plain) {
      // Up to IOV_MAX pieces, no further than the frame goes.
      window.clear();
      size_t budget = frame_left_;
      for (size_t k = i, o = off; k < count && window.size() < IOV_MAX && budget > 0; ++k, o = 0) {
        const size_t len = std::min(segments[k].iov_len - o, budget);
        window.push_back({static_cast<uint8_t*>(segments[k].iov_base) + o, len});
        budget -= len;
      }
      const ssize_t n = readv(fd_, window.data(), static_cast<int>(window.size()));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
          throw TTransportException(TTransportException::TIMED_OUT, "recv timed out");
        throw TTransportException(TTransportException::NOT_OPEN,
                                  std::string("recv failed: ") + std::strerror(errno));
      }
      got = static_cast<size_t>(n);
    } else {
      const uint32_t want =
          static_cast<uint32_t>(std::min<size_t>(segments[i].iov_len - off, frame_left_));
      got = ReadSome(static_cast<uint8_t*>(segments[i].iov_base) + off, want, true);
    }
    if (got == 0)
      throw TTransportException(TTransportException::END_OF_FILE,
                                "No more data to read inside a frame.");
    frame_left_ -= static_cast<uint32_t>(got);
    advance(got);
  }
}

uint32_t ResettingFramedTransport::readEnd() {
  // Skip whatever the protocol left of the frame, so the next frame starts aligned.
  uint8_t sink[4096];
  while (frame_left_ > 0) {
    uint32_t n = ReadSome(sink, std::min<uint32_t>(frame_left_, sizeof sink), true);
    if (n == 0) break;
    frame_left_ -= n;
  }
  return TFramedTransport::readEnd();
}

namespace {
class FrameBoundedProtocol
    : public apache::thrift::protocol::TBinaryProtocolT<apache::thrift::transport::TTransport> {
 public:
  // Strict reads: every message starts with the version (Thrift's clients
  // send it; the unversioned form begins with a name length).
  FrameBoundedProtocol(std::shared_ptr<apache::thrift::transport::TTransport> trans,
                       ResettingFramedTransport* framed)
      : TBinaryProtocolT(std::move(trans), 0, 0, /*strict_read=*/true, /*strict_write=*/true),
        framed_(framed) {}
  uint32_t readString_virt(std::string& str) override { return ReadBounded(str); }
  uint32_t readBinary_virt(std::string& str) override {
    if (scatter_ == nullptr) return ReadBounded(str);
    // Armed (ArmBinaryScatter): a field of exactly the segments' size goes to them.
    const iovec* segments = scatter_;
    bool* done = scatter_done_;
    scatter_ = nullptr;
    int32_t size = 0;
    uint32_t n = readI32(size);
    size_t total = 0;
    for (size_t i = 0; i < scatter_count_; ++i) total += segments[i].iov_len;
    // Another size (or more than the frame holds, refused there): the string, as unarmed.
    if (size < 0 || static_cast<size_t>(size) != total ||
        static_cast<uint32_t>(size) > framed_->FrameRemaining())
      return n + ReadSized(str, size);
    str.clear();
    framed_->ReadScatter(segments, scatter_count_);
    *done = true;
    return n + static_cast<uint32_t>(size);
  }
  void Arm(const iovec* segments, size_t count, bool* done) {
    scatter_ = segments;
    scatter_count_ = count;
    scatter_done_ = done;
    *done = false;
  }
  void Disarm() { scatter_ = nullptr; }
  // Unknown fields are skipped through this protocol's own (bounded) reads;
  // TBinaryProtocolT's skip calls its unbounded ones directly.
  uint32_t skip_virt(apache::thrift::protocol::TType type) override {
    return apache::thrift::protocol::skip(*static_cast<apache::thrift::protocol::TProtocol*>(this),
                                          type);
  }
  // Containers: as TBinaryProtocolT's, but their size is checked against the
  // frame in 64 bits (Thrift's own check multiplies in int and overflows).
  uint32_t readListBegin_virt(apache::thrift::protocol::TType& elem, uint32_t& size) override {
    return ReadContainer(&elem, nullptr, &size);
  }
  uint32_t readSetBegin_virt(apache::thrift::protocol::TType& elem, uint32_t& size) override {
    return ReadContainer(&elem, nullptr, &size);
  }
  uint32_t readMapBegin_virt(apache::thrift::protocol::TType& key,
                             apache::thrift::protocol::TType& value, uint32_t& size) override {
    return ReadContainer(&key, &value, &size);
  }
  // As TBinaryProtocolT's (strict), with the method name's length bounded too.
  uint32_t readMessageBegin_virt(std::string& name, apache::thrift::protocol::TMessageType& type,
                                 int32_t& seqid) override {
    using apache::thrift::protocol::TProtocolException;
    int32_t version = 0;
    uint32_t n = readI32(version);
    if (version >= 0 || (version & VERSION_MASK) != VERSION_1)
      throw TProtocolException(TProtocolException::BAD_VERSION,
                               "not a versioned binary-protocol message");
    type = static_cast<apache::thrift::protocol::TMessageType>(version & 0xff);
    n += ReadBounded(name);
    return n + readI32(seqid);
  }

 private:
  uint32_t ReadBounded(std::string& str) {
    int32_t size = 0;
    uint32_t n = readI32(size);
    return n + ReadSized(str, size);
  }
  // A string's body of `size` bytes (its length read already), bounded by its frame.
  uint32_t ReadSized(std::string& str, int32_t size) {
    if (size > 0 && static_cast<uint32_t>(size) > framed_->FrameRemaining())
      throw apache::thrift::protocol::TProtocolException(
          apache::thrift::protocol::TProtocolException::SIZE_LIMIT,
          "a field declares " + std::to_string(size) + " bytes but its frame holds only " +
              std::to_string(framed_->FrameRemaining()));
    return readStringBody(str, size);
  }
  uint32_t ReadContainer(apache::thrift::protocol::TType* first,
                         apache::thrift::protocol::TType* second, uint32_t* size) {
    using apache::thrift::protocol::TProtocolException;
    int8_t a = 0, b = 0;
    int32_t n = 0;
    uint32_t got = readByte(a);
    if (second != nullptr) got += readByte(b);
    got += readI32(n);
    if (n < 0) throw TProtocolException(TProtocolException::NEGATIVE_SIZE);
    *first = static_cast<apache::thrift::protocol::TType>(a);
    if (second != nullptr) *second = static_cast<apache::thrift::protocol::TType>(b);
    const int64_t each =
        getMinSerializedSize(*first) + (second != nullptr ? getMinSerializedSize(*second) : 0);
    if (static_cast<int64_t>(n) * each > static_cast<int64_t>(framed_->FrameRemaining()))
      throw TProtocolException(
          TProtocolException::SIZE_LIMIT,
          "a container declares " + std::to_string(n) + " elements, more than its frame holds");
    *size = static_cast<uint32_t>(n);
    return got;
  }

  ResettingFramedTransport* framed_;
  const iovec* scatter_ = nullptr;  // armed: the next binary field's destination
  size_t scatter_count_ = 0;
  bool* scatter_done_ = nullptr;
};
}  // namespace

std::shared_ptr<apache::thrift::protocol::TProtocol> FrameBoundedProtocolFactory::getProtocol(
    std::shared_ptr<apache::thrift::transport::TTransport> trans) {
  if (auto* framed = dynamic_cast<ResettingFramedTransport*>(trans.get()))
    return std::make_shared<FrameBoundedProtocol>(std::move(trans), framed);
  return std::make_shared<apache::thrift::protocol::TBinaryProtocol>(std::move(trans));
}

bool ArmBinaryScatter(apache::thrift::protocol::TProtocol* protocol, const iovec* segments,
                      size_t count, bool* done) {
  *done = false;
  auto* p = dynamic_cast<FrameBoundedProtocol*>(protocol);
  if (p == nullptr) return false;
  p->Arm(segments, count, done);
  return true;
}

void DisarmBinaryScatter(apache::thrift::protocol::TProtocol* protocol) {
  if (auto* p = dynamic_cast<FrameBoundedProtocol*>(protocol)) p->Disarm();
}

namespace {
void FilteredThriftLog(const char* message) {
  if (std::strstr(message, "THRIFT_EAGAIN (timed out)") != nullptr ||
      std::strstr(message, "THRIFT_POLL (timed out)") != nullptr ||
      // After a failed TLS handshake Thrift also logs each close of it.
      std::strstr(message, "SSL_shutdown:") != nullptr ||
      std::strstr(message, "close failed: SSL_") != nullptr ||
      std::strstr(message, "TSocket::open() error") != nullptr ||
      // A peer that closed while its reply was written (a client that stopped,
      // or one flooding and leaving): a line per connection, nothing to act on,
      // and a way to flood the log.
      std::strstr(message, "Broken pipe") != nullptr ||
      std::strstr(message, "Connection reset by peer") != nullptr)
    return;
  apache::thrift::TOutput::errorTimeWrapper(message);
}
}  // namespace

void FilterThriftLog() {
  static std::once_flag once;
  std::call_once(once, [] { apache::thrift::GlobalOutput.setOutputFunction(FilteredThriftLog); });
}

GuardedFramedTransportFactory::GuardedFramedTransportFactory(int64_t max_frame_bytes,
                                                             std::shared_ptr<ConnectionGuard> guard)
    : config_(MakeThriftConfig(max_frame_bytes)), guard_(std::move(guard)) {
  FilterThriftLog();
}

std::shared_ptr<apache::thrift::transport::TTransport> GuardedFramedTransportFactory::getTransport(
    std::shared_ptr<apache::thrift::transport::TTransport> trans) {
  std::unique_ptr<ConnectionGuard::Connection> conn;
  if (auto* sock = dynamic_cast<apache::thrift::transport::TSocket*>(trans.get())) {
    sock->setRecvTimeout(guard_->tick_ms());
    if (guard_->limits().frame_timeout_ms > 0)
      sock->setSendTimeout(
          static_cast<int>(std::min<int64_t>(guard_->limits().frame_timeout_ms, INT_MAX)));
    conn = guard_->Admit(sock->getSocketFD());
  }
  return std::make_shared<ResettingFramedTransport>(std::move(trans), config_, std::move(conn));
}

}  // namespace fanout::rpc
