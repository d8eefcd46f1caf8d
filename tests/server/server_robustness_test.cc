// Garbage on the wire, broken frames, disconnects, very long connections,
// draining shutdown, and the fanout-server binary as a subprocess.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "gen-cpp/Fanout.h"
#include "rpc/codec.h"
#include "rpc/framed_transport.h"
#include "server/handler.h"
#include "server/ready_record.h"
#include "tests/server/server_fixture.h"

namespace fanout::server {
namespace {

using ::testing::HasSubstr;
using testing::ServerTest;

// Sends raw bytes on a fresh connection; returns true if the server closed
// the connection (or reset it) within `seconds`.
bool SendRawAndExpectClose(int port, const std::string& bytes, bool close_after_send = false,
                           double seconds = 5) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return false;
  }
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  if (close_after_send) {
    close(fd);
    return true;
  }
  timeval tv{static_cast<time_t>(seconds), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  bool closed = false;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      closed = true;
      break;
    }
    if (n < 0) break;  // timeout: still open
  }
  close(fd);
  return closed;
}

std::string Frame(uint32_t declared_size, const std::string& body) {
  uint32_t be = htonl(declared_size);
  return std::string(reinterpret_cast<const char*>(&be), 4) + body;
}

class RobustnessTest : public ServerTest {
 protected:
  void ExpectStillServing() {
    auto client = Connect(0);
    std::string pong;
    Status st = client->Ping("still here", &pong);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(pong, "still here");
  }
};

TEST_F(RobustnessTest, GarbageBytesCloseTheConnectionOnly) {
  StartServers(1);
  EXPECT_TRUE(SendRawAndExpectClose(servers_[0]->port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  ExpectStillServing();
  // A frame of the right size holding garbage instead of a Thrift message.
  EXPECT_TRUE(SendRawAndExpectClose(servers_[0]->port(), Frame(16, std::string(16, '\xee'))));
  ExpectStillServing();
}

TEST_F(RobustnessTest, OversizedAndTruncatedFramesCloseTheConnection) {
  ServerOptions o;
  o.max_frame_bytes = 1 << 20;
  StartServers(1, o);
  EXPECT_TRUE(SendRawAndExpectClose(servers_[0]->port(), Frame(2 << 20, "abc")));  // over the limit
  ExpectStillServing();
  // A frame that promises 1000 bytes and delivers 10, then the client leaves.
  EXPECT_TRUE(SendRawAndExpectClose(servers_[0]->port(), Frame(1000, std::string(10, 'x')), true));
  ExpectStillServing();
  // The client-side view of an oversized request: the server drops it, the
  // client reports the server unavailable, naming it.
  auto client = Connect(0);
  std::vector<int64_t> many(200000, 5);  // 1.6 MB of ids
  std::string rows;
  Status st = client->Features(many, &rows);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(servers_[0]->port())));
  ExpectStillServing();
}

TEST_F(RobustnessTest, ClientThatDisconnectsMidRequestDoesNotHurtOthers) {
  StartServers(1);
  // A valid, large feature request, sent in full; the client leaves without
  // reading the ~46 MB reply.
  std::vector<int64_t> ids(8000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i % 2708);
  auto mem = std::make_shared<apache::thrift::transport::TMemoryBuffer>();
  auto framed = std::make_shared<apache::thrift::transport::TFramedTransport>(mem);
  auto proto = std::make_shared<apache::thrift::protocol::TBinaryProtocol>(framed);
  rpc::gen::FanoutClient writer(proto);
  writer.send_lookup_features(rpc::Pack(ArrayView<const int64_t>(ids)), -1);
  std::string wire = mem->getBufferAsString();
  for (int i = 0; i < 5; ++i)
    SendRawAndExpectClose(servers_[0]->port(), wire, /*close_after_send=*/true);
  ExpectStillServing();
  // The server answered or gave up on each; none is stuck in flight. (Five
  // 46 MB replies take a while under the thread sanitizer: a generous bound,
  // not a timing assertion.)
  for (int i = 0; i < 3000 && servers_[0]->metrics().InFlight() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(servers_[0]->metrics().InFlight(), 0);
}

TEST_F(RobustnessTest, OneConnectionCarriesWellOverAGigabyteEachWay) {
  StartServers(1);
  auto client = Connect(0);
  std::vector<int64_t> big(65536);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int64_t>(i % 2708);
  rpc::SampleCall call;
  call.fanout = 0;  // cheap replies: this half measures request bytes
  rpc::SampleReply reply;
  int64_t request_bytes = 0;
  while (request_bytes < (int64_t{1100} << 20)) {
    Status st = client->Sample(big, call, &reply);
    ASSERT_TRUE(st.ok()) << "after " << (request_bytes >> 20)
                         << " MiB of requests: " << st.ToString();
    request_bytes += static_cast<int64_t>(big.size() * 8);
  }
  std::vector<int64_t> ids(1024);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7) % 2708);
  std::string rows;
  int64_t reply_bytes = 0;
  while (reply_bytes < (int64_t{1100} << 20)) {
    Status st = client->Features(ids, &rows);
    ASSERT_TRUE(st.ok()) << "after " << (reply_bytes >> 20) << " MiB of replies: " << st.ToString();
    reply_bytes += static_cast<int64_t>(rows.size());
  }
  EXPECT_EQ(rows.size(), 1024u * 1433 * 4);
  EXPECT_EQ(servers_[0]->metrics().Requests(kSampleNeighbors, kError), 0);
}

// Serves partition 0 of Cora with the given transport factory and counts the
// request bytes one connection carries before it breaks (stops at `limit`).
int64_t RequestBytesUntilFailure(
    std::shared_ptr<apache::thrift::transport::TTransportFactory> transports, int64_t limit,
    std::string* failure) {
  auto state = std::make_unique<ServerState>();
  auto data = std::make_shared<datasets::PartitionData>();
  EXPECT_TRUE(datasets::OpenPartition(testing::CoraDir(1), 0, {}, data.get()).ok());
  state->data = data;
  state->view = data->View();
  state->graph = data->Graph();
  auto socket = std::make_shared<apache::thrift::transport::TServerSocket>("127.0.0.1", 0);
  auto server = std::make_shared<apache::thrift::server::TThreadedServer>(
      std::make_shared<rpc::gen::FanoutProcessorFactory>(
          std::make_shared<HandlerFactory>(state.get())),
      socket, transports, std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>());
  std::thread serve([&] { server->serve(); });
  while (socket->getPort() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::unique_ptr<rpc::RpcClient> client;
  EXPECT_TRUE(rpc::RpcClient::Connect("127.0.0.1", socket->getPort(), {}, &client).ok());
  std::vector<int64_t> big(65536, 7);
  rpc::SampleCall call;
  call.fanout = 0;
  rpc::SampleReply reply;
  int64_t sent = 0;
  while (sent < limit) {
    Status st = client->Sample(big, call, &reply);
    if (!st.ok()) {
      *failure = st.ToString();
      break;
    }
    sent += static_cast<int64_t>(big.size() * 8);
  }
  client.reset();
  server->stop();
  serve.join();
  return sent;
}

TEST(FramedTransportTest, Thrift017StockTransportDropsLongConnectionsAndOursDoesNot) {
  // The defect ResettingFramedTransport works around: with Thrift 0.17's own
  // TFramedTransport, the server closes a connection after ~100 MB of
  // cumulative requests (the default max message size).
  std::string failure;
  int64_t stock = RequestBytesUntilFailure(
      std::make_shared<apache::thrift::transport::TFramedTransportFactory>(), int64_t{400} << 20,
      &failure);
  EXPECT_LT(stock, int64_t{101} << 20);
  EXPECT_GT(stock, int64_t{90} << 20);
  EXPECT_THAT(failure, HasSubstr("Unavailable"));
  failure.clear();
  int64_t ours = RequestBytesUntilFailure(
      std::make_shared<rpc::ResettingFramedTransportFactory>(int64_t{256} << 20),
      int64_t{400} << 20, &failure);
  EXPECT_EQ(failure, "");
  EXPECT_GE(ours, int64_t{400} << 20);
}

TEST_F(RobustnessTest, StopDrainsRequestsInFlight) {
  StartServers(1);
  bool observed = false;
  for (int attempt = 0; attempt < 20 && !observed; ++attempt) {
    std::vector<int64_t> ids(20000 * (attempt + 1));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i % 2708);
    auto client = Connect(0);
    std::promise<Status> done;
    std::string rows;
    std::thread request([&] { done.set_value(client->Features(ids, &rows)); });
    std::future<Status> result = done.get_future();
    while (servers_[0]->metrics().InFlight() == 0 &&
           result.wait_for(std::chrono::microseconds(50)) != std::future_status::ready) {
    }
    if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      observed = true;
      servers_[0]->Stop();  // returns once the request has been answered
      Status st = result.get();
      EXPECT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(rows.size(), ids.size() * 1433 * 4);
    }
    request.join();
  }
  ASSERT_TRUE(observed) << "no request was ever caught in flight";
  std::unique_ptr<rpc::RpcClient> late;
  Status st = rpc::RpcClient::Connect("127.0.0.1", servers_[0]->port(), {}, &late);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable);
}

TEST(ServerProcessTest, SubprocessServesAndExitsCleanlyOnSigterm) {
  const std::string& dir = testing::CoraDir(2);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(out[0]);
    std::string bin = std::string(FANOUT_BIN_DIR) + "/fanout-server";
    execl(bin.c_str(), bin.c_str(), "--dataset", dir.c_str(), "--partition", "1", "--port", "0",
          "--admin-port", "0", nullptr);
    _exit(127);
  }
  close(out[1]);
  // A failed ASSERT returns early: never leave the child serving behind the test.
  struct Reaper {
    pid_t pid;
    bool reaped = false;
    ~Reaper() {
      if (!reaped) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};
  FILE* f = fdopen(out[0], "r");
  char line[1024] = {0};
  ASSERT_NE(fgets(line, sizeof line, f), nullptr);
  std::string ready(line);
  ASSERT_THAT(ready, HasSubstr("fanout-server ready: dataset cora partition 1/2"));
  EXPECT_THAT(ready, HasSubstr("loaded in"));
  EXPECT_THAT(ready, HasSubstr("RSS"));
  // Then the machine-readable record, the one thing launchers parse.
  ASSERT_NE(fgets(line, sizeof line, f), nullptr);
  ReadyRecord record;
  ASSERT_TRUE(DecodeReadyRecord(line, &record)) << line;
  EXPECT_EQ(record.partition, 1);
  EXPECT_EQ(record.num_parts, 2);
  EXPECT_EQ(record.dataset, "cora");
  EXPECT_EQ(record.host, "127.0.0.1");
  EXPECT_GT(record.admin_port, 0);
  EXPECT_EQ(record.pid, pid);
  int port = record.rpc_port;
  std::unique_ptr<rpc::RpcClient> client;
  ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", port, {}, &client).ok());
  rpc::RemotePartitionInfo info;
  ASSERT_TRUE(client->Info(&info).ok());
  EXPECT_EQ(info.partition, 1);
  client.reset();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  reaper.reaped = true;
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::string rest;
  while (fgets(line, sizeof line, f)) rest += line;
  fclose(f);
  EXPECT_THAT(rest, HasSubstr("SIGTERM received, draining"));
  EXPECT_THAT(rest, HasSubstr("stopped"));
}

}  // namespace

TEST(ReadyRecordTest, RoundTripsAndRefusesEveryOtherLine) {
  ReadyRecord r;
  r.pid = 4242;
  r.dataset = "cora \"quoted\"";
  r.partition = 3;
  r.num_parts = 4;
  r.host = "::1";
  r.rpc_port = 9000;
  r.admin_port = 0;
  r.data_port = 9001;
  r.local_socket = "/run/fanout/x.sock";
  const std::string line = EncodeReadyRecord(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  ReadyRecord back;
  ASSERT_TRUE(DecodeReadyRecord(line + "\n", &back));
  EXPECT_EQ(back.pid, r.pid);
  EXPECT_EQ(back.dataset, r.dataset);
  EXPECT_EQ(back.partition, 3);
  EXPECT_EQ(back.num_parts, 4);
  EXPECT_EQ(back.rpc(), "::1:9000");
  EXPECT_EQ(back.admin_port, 0);
  EXPECT_EQ(back.data_port, 9001);
  EXPECT_EQ(back.local_socket, r.local_socket);
  for (const char* other :
       {"", "fanout-server ready: dataset cora partition 1/2", "[1700000000.1] UCX WARN ...", "{",
        "{\"fanout_server_ready\": 3}", "{\"fanout_server_ready\": {\"pid\": 1}}",
        "{\"something\": {}}", "[1, 2]"})
    EXPECT_FALSE(DecodeReadyRecord(other, &back)) << other;
}
}  // namespace fanout::server
