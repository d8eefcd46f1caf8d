// The tenants file (server/tenants.h): every field, and every mistake named
// with its line.
#include "server/tenants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "server/tenancy.h"
#include "storage/io_gate.h"

namespace fanout::server {
namespace {

using ::testing::HasSubstr;

TEST(TenantTableTest, ParsesEveryFieldAndAddsTheDefault) {
  std::shared_ptr<const TenantTable> t;
  Status st = TenantTable::Parse(
      "# jobs\n"
      "tenant alice token=aaaaaaaaaaaaaaaaaaaa weight=2 class=batch max_inflight_bytes=64M\n"
      "\n"
      "tenant web token=\"wwwwwwwwwwwwwwwwwwww\" class=online max_requests_per_s=500  # queries\n"
      "tenant carol tls_subject=\"CN=carol,O=lab\" weight=0.5 max_feature_bytes_per_s=1G\n",
      "tenants.conf", &t);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(t->tenants().size(), 4u);
  const Tenant& a = t->tenants()[0];
  EXPECT_EQ(a.name, "alice");
  EXPECT_EQ(a.weight, 2);
  EXPECT_FALSE(a.online);
  EXPECT_EQ(a.max_inflight_bytes, 64 << 20);
  EXPECT_EQ(a.line, 2);
  EXPECT_TRUE(t->tenants()[1].online);
  EXPECT_EQ(t->tenants()[1].max_requests_per_s, 500);
  EXPECT_EQ(t->tenants()[2].tls_subject, "CN=carol,O=lab");
  EXPECT_EQ(t->tenants()[2].max_feature_bytes_per_s, double(int64_t{1} << 30));
  EXPECT_EQ(t->tenants()[t->default_index()].name, "default");
  EXPECT_EQ(t->ByToken("aaaaaaaaaaaaaaaaaaaa"), 0);
  EXPECT_EQ(t->ByToken("wwwwwwwwwwwwwwwwwwww"), 1);
  EXPECT_EQ(t->ByToken("nope-nope-nope-nope"), -1);
  EXPECT_EQ(t->ByTlsSubject("CN=carol,O=lab"), 2);
  EXPECT_EQ(t->ByName("web"), 1);
  EXPECT_TRUE(t->has_tokens());
  // A default that refuses requests without credentials.
  ASSERT_TRUE(TenantTable::Parse("tenant default refuse weight=3\n", "f", &t).ok());
  EXPECT_TRUE(t->tenants()[t->default_index()].refuse);
}

TEST(TenantTableTest, LocalIsOptInAndParsed) {
  std::shared_ptr<const TenantTable> t;
  ASSERT_TRUE(TenantTable::Parse("tenant a token=aaaaaaaaaaaaaaaaaaaa local=yes\n"
                                 "tenant b token=bbbbbbbbbbbbbbbbbbbb\n",
                                 "f", &t)
                  .ok());
  EXPECT_TRUE(t->tenants()[0].local);
  EXPECT_FALSE(t->tenants()[1].local);
  Status st = TenantTable::Parse("tenant a token=aaaaaaaaaaaaaaaaaaaa local=maybe\n", "f", &t);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("line 1"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("local"), std::string::npos) << st.ToString();
}

TEST(TenantTableTest, EveryMistakeIsNamedWithItsLine) {
  const std::pair<const char*, const char*> bad[] = {
      {"tenant a token=short\n", "line 1: tenant 'a': a token of at least 16"},
      {"\ntenant a weight=2\n", "line 2: tenant 'a' has no token"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa\ntenant b token=aaaaaaaaaaaaaaaaaa\n",
       "line 2: two tenants with one token"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa\ntenant a token=bbbbbbbbbbbbbbbbbb\n",
       "line 2: tenant 'a' is named twice"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa weight=-1\n", "line 1: weight must be a number in (0"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa class=gold\n", "line 1: class must be batch or online"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa colour=red\n", "line 1: unknown key 'colour'"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa max_inflight_bytes=lots\n",
       "line 1: max_inflight_bytes:"},
      {"tenant a token=\"aaaaaaaaaaaaaaaaaa\n", "line 1: an unterminated quote"},
      {"user a\n", "line 1: expected 'tenant NAME"},
      {"tenant default token=aaaaaaaaaaaaaaaaaa\n", "line 1: the default tenant is the one"},
      {"tenant a token=aaaaaaaaaaaaaaaaaa refuse\n", "line 1: only the default tenant"},
      {"tenant a/b token=aaaaaaaaaaaaaaaaaa\n", "line 1: tenant name 'a/b'"},
      {"tenant a token_file=/nonexistent/token\n", "line 1: token_file:"},
  };
  for (const auto& [text, says] : bad) {
    std::shared_ptr<const TenantTable> t;
    Status st = TenantTable::Parse(text, "tenants.conf", &t);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << text;
    EXPECT_THAT(st.message(), HasSubstr(std::string("tenants.conf ") + says)) << text;
  }
  std::shared_ptr<const TenantTable> t;
  EXPECT_EQ(TenantTable::Load("/nonexistent/tenants.conf", &t).code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace fanout::server

// Tenancy (server/tenancy.h): credentials to ids, quotas refused at once
// naming the tenant and the quota, in-flight bytes given back when done,
// ids kept by name across a reload.
namespace fanout::server {
namespace {

std::shared_ptr<const TenantTable> Table(const std::string& text) {
  std::shared_ptr<const TenantTable> t;
  Status st = TenantTable::Parse(text, "tenants.conf", &t);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return t;
}

TEST(TenancyTest, QuotasRefuseAtOnceNamingTheTenantAndTheQuota) {
  Tenancy tenancy(Table("tenant a token=aaaaaaaaaaaaaaaaaaaa max_inflight_bytes=1000\n"
                        "tenant b token=bbbbbbbbbbbbbbbbbbbb max_feature_bytes_per_s=100\n"
                        "tenant c token=cccccccccccccccccccc max_requests_per_s=2\n"
                        "tenant d token=dddddddddddddddddddd class=online max_requests_per_s=1\n"),
                  true, SchedulerOptions{}, true);
  const int a = tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa"),
            b = tenancy.ByToken("bbbbbbbbbbbbbbbbbbbb"),
            c = tenancy.ByToken("cccccccccccccccccccc");
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_GE(c, 0);
  EXPECT_EQ(tenancy.ByToken("nobody-has-this-token"), -1);
  EXPECT_EQ(tenancy.Name(a), "a");
  // In-flight bytes: 600 held, 600 more refused, given back when done.
  Tenancy::Admission first, second, third;
  ASSERT_TRUE(tenancy.Admit(a, 600, 0, &first).ok());
  Status st = tenancy.Admit(a, 600, 0, &second);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("tenant 'a'"));
  EXPECT_THAT(st.message(), HasSubstr("max_inflight_bytes"));
  EXPECT_GT(second.retry_after_s, 0);  // when it could pass: said, and held on Thrift
  EXPECT_TRUE(second.hold_refusal);    // a batch tenant's
  EXPECT_THAT(st.message(), HasSubstr("could pass in"));
  tenancy.Done(&first, true, 600, 0, 0, 0);
  ASSERT_TRUE(tenancy.Admit(a, 600, 0, &third).ok());
  tenancy.Done(&third, true, 600, 0, 0, 0);
  // Feature bytes per second: a request larger than the bucket passes when
  // it is full (debt), the next one is refused.
  Tenancy::Admission big, next;
  ASSERT_TRUE(tenancy.Admit(b, 10, 500, &big).ok());
  tenancy.Done(&big, true, 10, 0, 1, 500);
  st = tenancy.Admit(b, 10, 50, &next);
  EXPECT_THAT(st.message(), HasSubstr("max_feature_bytes_per_s"));
  // The bucket is in debt by 400 of 100 bytes/s: 50 more bytes in 4.5 s.
  EXPECT_GT(next.retry_after_s, 4.0);
  EXPECT_LE(next.retry_after_s, 4.5);
  // Requests per second: two pass, the third in the same second does not.
  Tenancy::Admission r1, r2, r3;
  ASSERT_TRUE(tenancy.Admit(c, 1, 0, &r1).ok());
  ASSERT_TRUE(tenancy.Admit(c, 1, 0, &r2).ok());
  st = tenancy.Admit(c, 1, 0, &r3);
  EXPECT_THAT(st.message(), HasSubstr("max_requests_per_s"));
  EXPECT_GT(r3.retry_after_s, 0);  // one request's worth at 2/s: at most 0.5 s
  EXPECT_LE(r3.retry_after_s, 0.5);
  tenancy.Done(&r1, true, 1, 0, 0, 0);
  tenancy.Done(&r2, true, 1, 0, 0, 0);
  // An online tenant's refusal is said at once, never held (its client waits
  // with a query's deadline).
  const int d = tenancy.ByToken("dddddddddddddddddddd");
  Tenancy::Admission q1, q2;
  ASSERT_TRUE(tenancy.Admit(d, 1, 0, &q1).ok());
  tenancy.Done(&q1, true, 1, 0, 0, 0);
  st = tenancy.Admit(d, 1, 0, &q2);
  EXPECT_EQ(st.code(), Status::Code::kResourceExhausted);
  EXPECT_GT(q2.retry_after_s, 0);
  EXPECT_FALSE(q2.hold_refusal);
  const nlohmann::json j = tenancy.StatsJson();
  int64_t refused = 0;
  for (const auto& t : j["tenants"]) refused += t["refused_quota"].get<int64_t>();
  EXPECT_EQ(refused, 4);
}

// With online tenants, a thread running batch work runs at nice 5 (and, with
// online_io_first, its reads are of the device gate's batch class,
// storage/io_gate.h); running online work, at nice 0 (and of class online).
// Where this process cannot lower a nice value back (no CAP_SYS_NICE,
// RLIMIT_NICE 0), nice stays as it was: checked by the same probe.
TEST(TenancyTest, BatchWorkRunsBelowOnlineWorkOnTheCpuAndTheDevice) {
  SchedulerOptions so;
  so.online_io_first = true;
  Tenancy tenancy(Table("tenant bulk token=aaaaaaaaaaaaaaaaaaaa\n"
                        "tenant query token=bbbbbbbbbbbbbbbbbbbb class=online\n"),
                  true, so, true);
  const int bulk = tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa"),
            query = tenancy.ByToken("bbbbbbbbbbbbbbbbbbbb");
  auto tid = [] { return static_cast<pid_t>(syscall(SYS_gettid)); };
  bool can_undo = false;
  std::thread([&] {
    can_undo =
        setpriority(PRIO_PROCESS, tid(), 10) == 0 && setpriority(PRIO_PROCESS, tid(), 0) == 0;
    Tenancy::Admission a;
    ASSERT_TRUE(tenancy.Admit(bulk, 100, 0, &a).ok());
    // Where the nice cannot be undone the server nices nothing (checked below, then skipped).
    EXPECT_EQ(getpriority(PRIO_PROCESS, tid()), can_undo ? 5 : 0);
    EXPECT_EQ(a.read_class, storage::ReadClass::kBatch);
    tenancy.Done(&a, true, 100, 0, 0, 0);
    ASSERT_TRUE(tenancy.Admit(query, 100, 0, &a).ok());
    EXPECT_EQ(getpriority(PRIO_PROCESS, tid()), 0);
    EXPECT_EQ(a.read_class, storage::ReadClass::kOnline);
    tenancy.Done(&a, true, 100, 0, 0, 0);
    // A reload that removes the online tenant: batch work is ordered no more
    // (the class travels with each request, nothing stays behind on the thread).
    ASSERT_TRUE(tenancy.Reload(Table("tenant bulk token=aaaaaaaaaaaaaaaaaaaa\n")).ok());
    ASSERT_TRUE(tenancy.Admit(bulk, 100, 0, &a).ok());
    EXPECT_EQ(a.read_class, storage::ReadClass::kNone);
    tenancy.Done(&a, true, 100, 0, 0, 0);
  }).join();
  // Without online tenants nothing changes: there is nothing to put first.
  Tenancy plain(Table("tenant bulk token=aaaaaaaaaaaaaaaaaaaa\n"), true, so, true);
  std::thread([&] {
    Tenancy::Admission a;
    ASSERT_TRUE(plain.Admit(plain.ByToken("aaaaaaaaaaaaaaaaaaaa"), 100, 0, &a).ok());
    EXPECT_EQ(getpriority(PRIO_PROCESS, tid()), 0);
    EXPECT_EQ(a.read_class, storage::ReadClass::kNone);
    plain.Done(&a, true, 100, 0, 0, 0);
  }).join();
  if (!can_undo)
    GTEST_SKIP() << "this process may not lower a thread's nice again (no CAP_SYS_NICE, "
                    "RLIMIT_NICE below 20): batch work was not niced, so the CPU half of this "
                    "test did not run (the device classes above did)";
}

TEST(TenancyTest, AReloadKeepsIdsByNameAndGivesNewNamesTheirOwnTickets) {
  Tenancy tenancy(Table("tenant a token=aaaaaaaaaaaaaaaaaaaa\n"), true, SchedulerOptions{}, true);
  const int a = tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa");
  ASSERT_TRUE(tenancy
                  .Reload(Table("tenant z token=zzzzzzzzzzzzzzzzzzzz weight=3\n"
                                "tenant a token=aaaaaaaaaaaaaaaaaaaa\n"))
                  .ok());
  EXPECT_EQ(tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa"), a);
  const int z = tenancy.ByToken("zzzzzzzzzzzzzzzzzzzz");
  EXPECT_GE(z, 0);
  EXPECT_NE(z, a);
  EXPECT_NE(tenancy.Ticket(a), tenancy.Ticket(z));
  EXPECT_EQ(tenancy.ByTicket(tenancy.Ticket(z)), z);
}

TEST(TenancyTest, AReloadRevokesARemovedAndARotatedTenantsTicketsAndRefusesTheirRequests) {
  Tenancy tenancy(Table("tenant a token=aaaaaaaaaaaaaaaaaaaa local=yes\n"
                        "tenant b token=bbbbbbbbbbbbbbbbbbbb local=yes\n"
                        "tenant c token=cccccccccccccccccccc\n"),
                  true, SchedulerOptions{}, true);
  const int a = tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa");
  const int b = tenancy.ByToken("bbbbbbbbbbbbbbbbbbbb");
  const int c = tenancy.ByToken("cccccccccccccccccccc");
  const std::string ta = tenancy.Ticket(a), tb = tenancy.Ticket(b), tc = tenancy.Ticket(c);
  EXPECT_TRUE(tenancy.MayMapExport(ta).ok());
  Status no_local = tenancy.MayMapExport(tc);  // c's line has no local=yes
  EXPECT_EQ(no_local.code(), Status::Code::kUnauthenticated);
  EXPECT_NE(no_local.message().find("'c'"), std::string::npos) << no_local.ToString();
  EXPECT_NE(no_local.message().find("local=yes"), std::string::npos) << no_local.ToString();
  const uint64_t g = tenancy.generation();
  // a removed, b's token rotated, c unchanged.
  ASSERT_TRUE(tenancy
                  .Reload(Table("tenant b token=bbbbbbbbbbbbbbbbbbbb-new local=yes\n"
                                "tenant c token=cccccccccccccccccccc\n"))
                  .ok());
  EXPECT_GT(tenancy.generation(), g);
  EXPECT_EQ(tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa"), -1);
  EXPECT_EQ(tenancy.ByToken("bbbbbbbbbbbbbbbbbbbb"), -1);
  EXPECT_EQ(tenancy.ByToken("bbbbbbbbbbbbbbbbbbbb-new"), b);  // same name, same id and counters
  EXPECT_EQ(tenancy.ByTicket(ta), -1);
  EXPECT_EQ(tenancy.ByTicket(tb), -1);
  EXPECT_EQ(tenancy.ByTicket(tc), c);  // unchanged credentials keep their ticket
  EXPECT_NE(tenancy.Ticket(b), tb);
  EXPECT_EQ(tenancy.ByTicket(tenancy.Ticket(b)), b);
  EXPECT_EQ(tenancy.Ticket(a), "");
  EXPECT_EQ(tenancy.MayMapExport(ta).code(), Status::Code::kUnauthenticated);
  EXPECT_EQ(tenancy.MayMapExport(tb).code(), Status::Code::kUnauthenticated);
  EXPECT_TRUE(tenancy.MayMapExport(tenancy.Ticket(b)).ok());
  EXPECT_EQ(tenancy.MayMapExport("").code(), Status::Code::kUnauthenticated);
  // A request still naming the removed tenant's id is refused, never served without quotas.
  Tenancy::Admission adm;
  Status st = tenancy.Admit(a, 100, 0, &adm);
  EXPECT_EQ(st.code(), Status::Code::kUnauthenticated);
  EXPECT_NE(st.message().find("'a'"), std::string::npos) << st.ToString();
  // Added back under the same token: a new ticket, not the old one.
  ASSERT_TRUE(tenancy
                  .Reload(Table("tenant a token=aaaaaaaaaaaaaaaaaaaa\n"
                                "tenant c token=cccccccccccccccccccc\n"))
                  .ok());
  EXPECT_EQ(tenancy.ByToken("aaaaaaaaaaaaaaaaaaaa"), a);
  EXPECT_EQ(tenancy.ByTicket(ta), -1);
  EXPECT_NE(tenancy.Ticket(a), ta);
  Tenancy::Admission ok;
  ASSERT_TRUE(tenancy.Admit(a, 100, 0, &ok).ok());
  tenancy.Done(&ok, true, 100, 0, 0, 0);
}

}  // namespace
}  // namespace fanout::server
