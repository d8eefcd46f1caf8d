// TLS (server certificates, mutual TLS) and the shared auth token, on the RPC
// port and the admin endpoint: what is refused, with which error, counted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "rpc/data_plane.h"
#include "tests/server/server_fixture.h"
#include "tests/server/test_certs.h"

namespace fanout::server {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::ServerTest;

class SecurityTest : public ServerTest {
 protected:
  static void SetUpTestSuite() {
    dir_ = new datasets::testing::TempDir();
    ok_ = testing::MakeTestCerts(dir_->path(), &certs_);
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!ok_) GTEST_FAIL() << "openssl could not make the test certificates in " << certs_.dir;
  }
  // A client of server 0 with these TLS options and token; its first ping.
  Status PingWith(const rpc::TlsOptions& tls, const std::string& token = "") {
    rpc::RpcOptions ro;
    ro.tls = tls;
    ro.auth_token = token;
    ro.connect_timeout_ms = ro.call_timeout_ms = 5000;
    std::unique_ptr<rpc::RpcClient> c;
    Status st = rpc::RpcClient::Connect("127.0.0.1", servers_[0]->port(), ro, &c);
    if (!st.ok()) return st;
    std::string pong;
    st = c->Ping("hi", &pong);
    if (st.ok() && pong != "hi") return Status::Internal("wrong pong " + pong);
    return st;
  }
  nlohmann::json Security() { return nlohmann::json::parse(servers_[0]->StatsJson())["security"]; }
  // The server counts a failed handshake on its connection's thread, which
  // may finish after the client has given up: wait (bounded) for `n`.
  nlohmann::json SecurityOnceTlsFailuresReach(int64_t n) {
    nlohmann::json s = Security();
    for (int i = 0; i < 1500 && s["tls_failures"].get<int64_t>() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      s = Security();
    }
    return s;
  }
  static datasets::testing::TempDir* dir_;
  static testing::TestCerts certs_;
  static bool ok_;
};
datasets::testing::TempDir* SecurityTest::dir_ = nullptr;
testing::TestCerts SecurityTest::certs_;
bool SecurityTest::ok_ = false;

TEST_F(SecurityTest, TlsServesClientsThatTrustItsCaAndRefusesOthers) {
  ServerOptions o;
  o.tls_cert = certs_.server;
  o.tls_key = certs_.server_key;
  StartServers(1, o);
  ASSERT_TRUE(PingWith({certs_.ca, "", ""}).ok()) << PingWith({certs_.ca, "", ""}).ToString();
  // Large replies go through TLS too (not the plain socket's zero-copy path).
  {
    rpc::RpcOptions ro;
    ro.tls = {certs_.ca, "", ""};
    std::unique_ptr<rpc::RpcClient> tls_client;
    ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", servers_[0]->port(), ro, &tls_client).ok());
    std::vector<int64_t> ids(3000);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7) % 2708);
    std::string rows;
    Status st = tls_client->Features(ids, &rows);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(rows.size(), ids.size() * 1433 * 4);
    const auto& x = whole_.parts[0]->features;
    EXPECT_EQ(0, std::memcmp(rows.data() + 5 * 1433 * 4, x.data() + ids[5] * 1433 * 4, 1433 * 4));
  }
  // A client that trusts another CA: refused, saying why.
  Status st = PingWith({certs_.other_ca, "", ""});
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("certificate verify failed"));
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:" + std::to_string(servers_[0]->port())));
  // A plain-TCP client: no answer it could mistake for one.
  st = PingWith({});
  EXPECT_FALSE(st.ok());
  EXPECT_GE(SecurityOnceTlsFailuresReach(2)["tls_failures"].get<int64_t>(), 2);
  EXPECT_TRUE(Security()["tls"].get<bool>());
}

TEST_F(SecurityTest, AnExpiredServerCertificateIsRefused) {
  ServerOptions o;
  o.tls_cert = certs_.expired;
  o.tls_key = certs_.expired_key;
  StartServers(1, o);
  Status st = PingWith({certs_.ca, "", ""});
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("expired"));
}

TEST_F(SecurityTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  ServerOptions o;
  o.tls_cert = certs_.server;
  o.tls_key = certs_.server_key;
  o.tls_ca = certs_.ca;
  StartServers(1, o);
  Status st = PingWith({certs_.ca, "", ""});  // no client certificate
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.code(), AnyOf(Status::Code::kUnauthenticated, Status::Code::kUnavailable))
      << st.ToString();
  st = PingWith({certs_.ca, certs_.other_client, certs_.other_client_key});  // from another CA
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.code(), AnyOf(Status::Code::kUnauthenticated, Status::Code::kUnavailable))
      << st.ToString();
  st = PingWith({certs_.ca, certs_.client, certs_.client_key});
  EXPECT_TRUE(st.ok()) << st.ToString();
  const nlohmann::json s = SecurityOnceTlsFailuresReach(2);
  EXPECT_EQ(s["tls_failures"].get<int64_t>(), 2) << s.dump();
  EXPECT_FALSE(s["last_tls_failure"].get<std::string>().empty());
  EXPECT_TRUE(s["mutual_tls"].get<bool>());
}

TEST_F(SecurityTest, BadTlsFilesFailTheStartNamingTheFile) {
  ServerOptions o;
  o.dataset_dir = testing::CoraDir(1);
  o.tls_cert = certs_.ca_key;  // a key where a certificate belongs
  o.tls_key = certs_.server_key;
  PartitionServer s(o);
  Status st = s.Start();
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("--tls-cert " + certs_.ca_key));
}

TEST_F(SecurityTest, TheAuthTokenIsRequiredOnEveryConnectionAndOnTheAdminPages) {
  ServerOptions o;
  o.auth_token = "correct-horse-battery-staple";
  o.admin_port = 0;
  StartServers(1, o);
  Status st = PingWith({});
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("--auth-token-file"));
  st = PingWith({}, "wrong-token-wrong-token");
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated) << st.ToString();
  EXPECT_THAT(st.message(), HasSubstr("wrong auth token"));
  st = PingWith({}, o.auth_token);
  EXPECT_TRUE(st.ok()) << st.ToString();
  // The token is given once per connection; later calls need nothing more.
  {
    rpc::RpcOptions ro;
    ro.auth_token = o.auth_token;
    std::unique_ptr<rpc::RpcClient> c;
    ASSERT_TRUE(rpc::RpcClient::Connect("127.0.0.1", servers_[0]->port(), ro, &c).ok());
    rpc::RemotePartitionInfo info;
    ASSERT_TRUE(c->Info(&info).ok());
    EXPECT_EQ(info.data_ticket.size(), rpc::kDataPlaneTicketBytes);  // for the data plane
  }
  httplib::Client http("127.0.0.1", servers_[0]->admin_port());
  auto r = http.Get("/stats");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_THAT(r->body, HasSubstr("Authorization: Bearer"));
  EXPECT_EQ(http.Get("/")->status, 401);
  EXPECT_EQ(http.Get("/stats?token=" + o.auth_token)->status, 200);
  EXPECT_EQ(http.Get("/stats", {{"Authorization", "Bearer " + o.auth_token}})->status, 200);
  EXPECT_EQ(http.Get("/metrics")->status, 200);
  EXPECT_EQ(http.Get("/healthz")->status, 200);
  const nlohmann::json s = Security();
  EXPECT_EQ(s["auth_refused"].get<int64_t>(), 2) << s.dump();
  EXPECT_EQ(s["admin_refused"].get<int64_t>(), 2) << s.dump();
}

}  // namespace
}  // namespace fanout::server
