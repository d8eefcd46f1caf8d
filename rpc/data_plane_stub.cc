// The data plane in builds without UCX (FANOUT_WITH_UCX=OFF or libucx-dev
// missing): the same API, every factory NotSupported, so callers fall back
// to Thrift.
#include "rpc/data_plane.h"

namespace fanout::rpc {

namespace {
Status Missing() {
  return Status::NotSupported(
      "this build has no UCX data plane (FANOUT_WITH_UCX=OFF or no libucx-dev)");
}
}  // namespace

bool DataPlaneBuilt() { return false; }

struct DataPlaneServer::Impl {};
DataPlaneServer::DataPlaneServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DataPlaneServer::~DataPlaneServer() = default;
Status DataPlaneServer::Start(const DataPlaneServerOptions&, HandlerFactory,
                              std::unique_ptr<DataPlaneServer>*) {
  return Missing();
}
int DataPlaneServer::port() const { return 0; }
void DataPlaneServer::Stop() {}
DataPlaneServerStats DataPlaneServer::Stats() const { return {}; }

DataPlaneInfo QueryDataPlane() {
  DataPlaneInfo info;
  info.error = Missing().message();
  return info;
}

struct DataPlaneContext::Impl {};
DataPlaneContext::~DataPlaneContext() = default;
Status DataPlaneContext::Create(std::shared_ptr<DataPlaneContext>*) { return Missing(); }

struct DataPlaneChannel::Impl {};
DataPlaneChannel::~DataPlaneChannel() = default;
Status DataPlaneChannel::Create(std::shared_ptr<DataPlaneContext>, const RpcOptions&,
                                std::unique_ptr<DataPlaneChannel>*) {
  return Missing();
}
Status DataPlaneChannel::Connect(const std::string&, int, const std::string&, int*,
                                 const std::string&) {
  return Missing();
}
Status DataPlaneChannel::Post(int, const DataRequest&, const ReplySink&) { return Missing(); }
Status DataPlaneChannel::Wait(int, const std::function<bool()>&) { return Missing(); }
Status DataPlaneChannel::Call(int, const DataRequest&, const ReplySink&) { return Missing(); }
void DataPlaneChannel::Abandon(int) {}
std::string DataPlaneChannel::Transports(int) const { return ""; }

}  // namespace fanout::rpc
