// The tenants file (server/tenants.h): every field, and every mistake named
// with its line.
#include "server/tenants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
