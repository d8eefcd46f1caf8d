// A framed transport that works around Thrift 0.17's long-connection defect.
//
// Thrift 0.17's TFramedTransport never resets the consumed-message-size budget
// of its TConfiguration (max message size, 100 MB by default): every frame's
// bytes count against one budget for the life of the connection, so after
// about 100 MB of cumulative input the transport throws "MaxMessageSize
// reached" and the connection is dropped (silently, on a server). Upstream
// fixed this in 0.23.0. ResettingFramedTransport resets the budget at each
// frame, so the limit applies per message, as intended.
#ifndef FANOUT_RPC_FRAMED_TRANSPORT_H_
#define FANOUT_RPC_FRAMED_TRANSPORT_H_

#include <thrift/TConfiguration.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstdint>
#include <memory>

namespace fanout::rpc {

// Per-message limits: the largest frame accepted (larger ones close the
// connection before any work) and thus the largest message.
std::shared_ptr<apache::thrift::TConfiguration> MakeThriftConfig(int64_t max_frame_bytes);

class ResettingFramedTransport : public apache::thrift::transport::TFramedTransport {
 public:
  ResettingFramedTransport(std::shared_ptr<apache::thrift::transport::TTransport> inner,
                           std::shared_ptr<apache::thrift::TConfiguration> config)
      : TFramedTransport(std::move(inner), std::move(config)) {}

 protected:
  bool readFrame() override;
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

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_FRAMED_TRANSPORT_H_
