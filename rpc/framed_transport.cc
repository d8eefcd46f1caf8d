#include "rpc/framed_transport.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>

namespace fanout::rpc {

std::shared_ptr<apache::thrift::TConfiguration> MakeThriftConfig(int64_t max_frame_bytes) {
  int limit = static_cast<int>(std::min<int64_t>(max_frame_bytes, std::numeric_limits<int>::max()));
  // Message and frame limits are the same: a message is one frame.
  return std::make_shared<apache::thrift::TConfiguration>(limit, limit);
}

ResettingFramedTransport::ResettingFramedTransport(std::shared_ptr<apache::thrift::transport::TTransport> inner,
                                                   std::shared_ptr<apache::thrift::TConfiguration> config)
    : TFramedTransport(inner, std::move(config)) {
  if (dynamic_cast<apache::thrift::transport::TSocket*>(inner.get()) != nullptr) fd_ = -2;  // resolved at flush
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
  if (pieces_.empty()) {  // nothing went by reference: the ordinary path
    TFramedTransport::flush();
    header_ = wBuf_.get();
    return;
  }
  if (fd_ == -2) fd_ = static_cast<apache::thrift::transport::TSocket*>(transport_.get())->getSocketFD();
  Seal();
  size_t total = 0;
  for (const Piece& p : pieces_) total += p.len;
  uint32_t body = static_cast<uint32_t>(total - sizeof(uint32_t));
  uint32_t be = htonl(body);
  std::memcpy(header_, &be, sizeof be);
  std::vector<iovec> iov(pieces_.size());
  for (size_t i = 0; i < pieces_.size(); ++i) iov[i] = {const_cast<uint8_t*>(pieces_[i].data), pieces_[i].len};
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
        throw apache::thrift::transport::TTransportException(apache::thrift::transport::TTransportException::TIMED_OUT,
                                                             "send timed out");
      throw apache::thrift::transport::TTransportException(apache::thrift::transport::TTransportException::NOT_OPEN,
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

void ResettingFramedTransport::FillBuffer() {
  if (rBufSize_ < kZeroCopyBytes) {
    rBuf_.reset(new uint8_t[kZeroCopyBytes]);
    rBufSize_ = kZeroCopyBytes;
  }
  uint32_t n = std::min(frame_left_, kZeroCopyBytes);
  transport_->readAll(rBuf_.get(), n);
  frame_left_ -= n;
  setReadBuffer(rBuf_.get(), n);
}

bool ResettingFramedTransport::readFrame() {
  resetConsumedMessageSize();  // the budget is per message, not per connection
  using apache::thrift::transport::TTransportException;
  uint8_t size_buf[4];
  uint32_t got = 0;
  while (got < sizeof size_buf) {
    uint32_t n = transport_->read(size_buf + got, sizeof size_buf - got);
    if (n == 0) {
      if (got == 0) return false;  // clean end of stream between frames
      throw TTransportException(TTransportException::END_OF_FILE, "No more data to read after partial frame header.");
    }
    got += n;
  }
  int32_t sz;
  std::memcpy(&sz, size_buf, 4);
  sz = static_cast<int32_t>(ntohl(static_cast<uint32_t>(sz)));
  if (sz < 0) throw TTransportException("Frame size has negative value");
  if (static_cast<uint32_t>(sz) > maxFrameSize_)
    throw TTransportException(TTransportException::CORRUPTED_DATA, "MaxFrameSize reached");
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
    uint32_t n = transport_->read(buf, std::min(len, frame_left_));
    if (n == 0)
      throw apache::thrift::transport::TTransportException(apache::thrift::transport::TTransportException::END_OF_FILE,
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

uint32_t ResettingFramedTransport::readEnd() {
  // Skip whatever the protocol left of the frame, so the next frame starts aligned.
  uint8_t sink[4096];
  while (frame_left_ > 0) {
    uint32_t n = transport_->read(sink, std::min<uint32_t>(frame_left_, sizeof sink));
    if (n == 0) break;
    frame_left_ -= n;
  }
  return TFramedTransport::readEnd();
}

}  // namespace fanout::rpc
