// libFuzzer target: bytes as they would arrive on a server connection,
// through the framed transport and the binary protocol into the request
// handler (Cora, 1 partition, loaded once).
#include <thrift/TApplicationException.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "datasets/formats.h"
#include "datasets/partition_store.h"
#include "datasets/partitioner.h"
#include "gen-cpp/Fanout.h"
#include "rpc/framed_transport.h"
#include "server/handler.h"
#include "server/service.h"

namespace {

fanout::server::ServerState* g_state = nullptr;

void Die(const fanout::Status& st) {
  std::fprintf(stderr, "fuzz_rpc_request: %s\n", st.ToString().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace fanout;
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("fanout-fuzz-" + std::to_string(getpid())))
          .string();
  datasets::RawDataset ds;
  datasets::LoadOptions lo;
  lo.quiet = true;
  std::vector<std::string> notes;
  Status st = datasets::LoadDataset(
      "planetoid", std::string(FANOUT_SOURCE_DIR) + "/datasets/data/planetoid/cora", lo, &ds,
      &notes);
  if (!st.ok()) Die(st);
  datasets::PartitionOptions po;
  po.num_parts = 1;
  po.method = datasets::PartitionMethod::kRange;
  po.quiet = true;
  std::vector<int32_t> part;
  if (!(st = datasets::ComputePartition(ds, po, &part, &notes)).ok()) Die(st);
  datasets::WriteOptions wo;
  wo.quiet = true;
  if (!(st = datasets::WritePartitionedDataset(ds, part, 1, wo, dir, nullptr)).ok()) Die(st);
  auto d = std::make_shared<datasets::PartitionData>();
  if (!(st = datasets::OpenPartition(dir, 0, {}, d.get())).ok()) Die(st);
  std::filesystem::remove_all(dir);
  g_state = new server::ServerState();
  g_state->options.max_ids_per_request = 4096;  // bounded work per input
  g_state->options.max_fanout = 64;
  g_state->data = d;
  g_state->view = d->View();
  g_state->graph = d->Graph();
  g_state->pool = std::make_unique<ThreadPool>(0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using apache::thrift::protocol::TBinaryProtocol;
  using apache::thrift::transport::TMemoryBuffer;
  auto config = fanout::rpc::MakeThriftConfig(1 << 20);
  auto in_mem =
      std::make_shared<TMemoryBuffer>(const_cast<uint8_t*>(data), static_cast<uint32_t>(size));
  auto in = std::make_shared<fanout::rpc::ResettingFramedTransport>(in_mem, config);
  auto out_mem = std::make_shared<TMemoryBuffer>();
  auto out = std::make_shared<fanout::rpc::ResettingFramedTransport>(out_mem, config);
  auto iprot = fanout::rpc::FrameBoundedProtocolFactory().getProtocol(in);  // as the server reads
  auto oprot = std::make_shared<TBinaryProtocol>(out);
  fanout::server::HandlerFactory handlers(g_state);
  auto processor = std::make_shared<fanout::rpc::gen::FanoutProcessorFactory>(
      std::shared_ptr<fanout::server::HandlerFactory>(&handlers, [](auto*) {}));
  apache::thrift::TConnectionInfo info;
  info.input = iprot;
  info.output = oprot;
  auto proc = processor->getProcessor(info);
  // As TConnectedClient does: requests until the input ends or breaks.
  try {
    for (int i = 0; i < 64 && proc->process(iprot, oprot, nullptr); ++i) {
    }
  } catch (const apache::thrift::TException&) {
    // A broken frame or message ends the connection; nothing else may escape.
  }
  return 0;
}
