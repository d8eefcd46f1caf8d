// A framed transport that works around Thrift 0.17's long-connection defect.
//
// Thrift 0.17's TFramedTransport never resets the consumed-message-size budget
// of its TConfiguration (max message size, 100 MB by default): every frame's
// bytes count against one budget for the life of the connection, so after
// about 100 MB of cumulative input the transport throws "MaxMessageSize
// reached" and the connection is dropped (silently, on a server). Upstream
// fixed this in 0.23.0. ResettingFramedTransport resets the budget at each
// frame, so the limit applies per message, as intended.
//
// It also sends large payloads without copying them: a write of 64 KiB or
// more (a packed id array, a block of feature rows) is kept by reference and
// the frame goes out with one sendmsg() over all pieces, instead of first
// being copied into the frame buffer. The referenced bytes must stay valid
// until flush(), which holds for Thrift's generated code (arguments and
// results outlive the flush of their message). Over a transport that is not a
// plain TSocket (a TLS socket included) it behaves like TFramedTransport.
//
// Reads are streamed the same way: only the first 64 KiB of a frame are
// buffered; a larger payload is received straight into the string the
// protocol reads it into, instead of into the frame buffer and then copied.
#ifndef FANOUT_RPC_FRAMED_TRANSPORT_H_
#define FANOUT_RPC_FRAMED_TRANSPORT_H_

#include <sys/uio.h>
#include <thrift/TConfiguration.h>
#include <thrift/protocol/TProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "rpc/connection_guard.h"

namespace fanout::rpc {

// Per-message limits: the largest frame accepted (larger ones close the
// connection before any work) and thus the largest message.
std::shared_ptr<apache::thrift::TConfiguration> MakeThriftConfig(int64_t max_frame_bytes);

class ResettingFramedTransport : public apache::thrift::transport::TFramedTransport {
 public:
  static constexpr uint32_t kZeroCopyBytes = 64 << 10;

  // `conn`: the server's admission of this connection (GuardedFramedTransportFactory);
  // null on clients.
  ResettingFramedTransport(std::shared_ptr<apache::thrift::transport::TTransport> inner,
                           std::shared_ptr<apache::thrift::TConfiguration> config,
                           std::unique_ptr<ConnectionGuard::Connection> conn = nullptr);

  void close() override;
  // The server's admission of this connection (null on clients).
  ConnectionGuard::Connection* connection() const { return conn_.get(); }
  // Bytes of the current frame not yet read (buffered or still on the socket).
  uint32_t FrameRemaining() const { return static_cast<uint32_t>(rBound_ - rBase_) + frame_left_; }

  void flush() override;
  uint32_t readEnd() override;

  // Reads the next bytes of the current frame into `segments`, in order,
  // exactly as many as they hold (a reply's payload straight to its places:
  // a loader's feature rows into their rows of x). What is buffered is copied;
  // the rest is received with readv() on a plain socket, piece by piece
  // otherwise. Throws TTransportException as reads do (END_OF_FILE where the
  // frame or the stream ends first).
  void ReadScatter(const iovec* segments, size_t count);

 protected:
  bool readFrame() override;
  uint32_t readSlow(uint8_t* buf, uint32_t len) override;
  void writeSlow(const uint8_t* buf, uint32_t len) override;

 private:
  struct Piece {
    const uint8_t* data;
    size_t len;
  };
  // Ends the buffered region [wBuf_ + sealed_, wBase_) as a piece.
  void Seal();
  void ResetWrite();

  int fd_ = -1;                // the socket, when the inner transport is a TSocket
  std::vector<Piece> pieces_;  // the frame so far, in order (first piece starts with the size slot)
  std::vector<std::shared_ptr<boost::scoped_array<uint8_t>>>
      retired_;                // earlier buffers pieces_ point into
  uint8_t* header_ = nullptr;  // where the frame size goes
  size_t sealed_ = 0;          // bytes of wBuf_ already in pieces_
  uint32_t frame_left_ = 0;    // bytes of the current frame not yet taken from the socket
  std::unique_ptr<ConnectionGuard::Connection> conn_;
  // Reads up to min(frame_left_, kZeroCopyBytes) more bytes of the frame into rBuf_.
  void FillBuffer();
  // transport_->read, waiting through receive timeouts while conn_ allows
  // (`in_frame`: inside a frame, else between frames).
  uint32_t ReadSome(uint8_t* buf, uint32_t len, bool in_frame);
  void ReadAll(uint8_t* buf, uint32_t len);
  // A refused connection: answers its first request with the refusal.
  [[noreturn]] void Refuse(uint32_t frame_bytes);
};

class ResettingFramedTransportFactory : public apache::thrift::transport::TTransportFactory {
 public:
  explicit ResettingFramedTransportFactory(int64_t max_frame_bytes)
      : config_(MakeThriftConfig(max_frame_bytes)) {}
  std::shared_ptr<apache::thrift::transport::TTransport> getTransport(
      std::shared_ptr<apache::thrift::transport::TTransport> trans) override {
    return std::make_shared<ResettingFramedTransport>(std::move(trans), config_);
  }

 private:
  std::shared_ptr<apache::thrift::TConfiguration> config_;
};

// Thrift logs every receive timeout and every failed connect to stderr; the
// connection guard's ticks are timeouts by design, and a failed connect comes
// back as a Status naming the server (health checks try dead replicas every
// second). Drops those lines, prints the rest as Thrift does. Idempotent.
void FilterThriftLog();

// Arms the next binary field that `protocol` (FrameBoundedProtocolFactory's,
// over a ResettingFramedTransport) reads: if it holds exactly the total of
// `segments`' bytes, they are received straight into the segments
// (ReadScatter) and its string stays empty, and *done is set. Any binary
// field read disarms it, as does DisarmBinaryScatter. False (nothing armed)
// for another protocol.
bool ArmBinaryScatter(apache::thrift::protocol::TProtocol* protocol, const iovec* segments,
                      size_t count, bool* done);
void DisarmBinaryScatter(apache::thrift::protocol::TProtocol* protocol);

// The servers' and the clients' protocol: Thrift's binary protocol, except that a string or
// binary field may not declare more bytes than its frame still holds. Stock
// TBinaryProtocol allocates and zeroes the declared size (up to 2 GiB) before
// reading a byte of it, so a 30-byte frame could cost the server gigabytes
// (found by fuzzing, docs/RELIABILITY.md). Over another transport it is the
// stock protocol.
class FrameBoundedProtocolFactory : public apache::thrift::protocol::TProtocolFactory {
 public:
  std::shared_ptr<apache::thrift::protocol::TProtocol> getProtocol(
      std::shared_ptr<apache::thrift::transport::TTransport> trans) override;
};

// The server's input transports: each accepted socket is admitted by `guard`
// (ConnectionGuard), gets the guard's tick as its receive timeout and the
// frame timeout as its send timeout. Replies go through a plain
// ResettingFramedTransportFactory (the output transport of the same socket).
class GuardedFramedTransportFactory : public apache::thrift::transport::TTransportFactory {
 public:
  GuardedFramedTransportFactory(int64_t max_frame_bytes, std::shared_ptr<ConnectionGuard> guard);
  std::shared_ptr<apache::thrift::transport::TTransport> getTransport(
      std::shared_ptr<apache::thrift::transport::TTransport> trans) override;

 private:
  std::shared_ptr<apache::thrift::TConfiguration> config_;
  std::shared_ptr<ConnectionGuard> guard_;
};

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_FRAMED_TRANSPORT_H_
