// libpq's messages scrubbed of the connection string's password (common/pg_error.h), and the
// real connection path (PgConn::Connect, no server needed) giving none of it away.
#include <catch2/catch.hpp>
#include <string>

#include "common/pg_conn.h"
#include "common/pg_error.h"

using common::pg::ConninfoSecrets;
using common::pg::ScrubSecrets;
using common::pg::UnparsableConninfo;

namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("the secrets of a URL are its password raw and decoded and the whole URL", "[pg]") {
  const std::string url = "postgresql://user:p%20w@db.example:5432/metrics";
  auto s = ConninfoSecrets(url, "p w");
  CHECK(Has(s, "p w"));
  CHECK(Has(s, "p%20w"));
  CHECK(Has(s, url));
  CHECK(s.front() == url);  // longest first
  CHECK_FALSE(Has(s, "user"));
  CHECK_FALSE(Has(s, ""));
}

TEST_CASE("a URL without a password has no secrets", "[pg]") {
  CHECK(ConninfoSecrets("postgresql://user@127.0.0.1:5432/metrics", "").empty());
  CHECK(ConninfoSecrets("postgresql://127.0.0.1:5432/metrics", "").empty());
  CHECK(ConninfoSecrets("metrics", "").empty());
}

TEST_CASE("a raw '@' in a URL's password: the whole password and its pieces are secrets", "[pg]") {
  auto s = ConninfoSecrets("postgresql://user:pa@ss@127.0.0.1/db", "pa");
  CHECK(Has(s, "pa@ss"));
  CHECK(Has(s, "pa"));
  CHECK(Has(s, "ss"));
  // libpq would take "ss@127.0.0.1" as the host name and say so.
  CHECK(ScrubSecrets(R"(could not translate host name "ss@127.0.0.1")", s) ==
        R"(could not translate host name "***@127.0.0.1")");
}

TEST_CASE("key/value and query passwords are secrets as written, quoted or not", "[pg]") {
  auto kv = ConninfoSecrets("host=db password = 'sec ret' user=x", "sec ret");
  CHECK(Has(kv, "'sec ret'"));
  CHECK(Has(kv, "sec ret"));
  auto plain = ConninfoSecrets("host=db password=s3cr%et user=x", "s3cr%et");
  CHECK(Has(plain, "s3cr%et"));
  auto query = ConninfoSecrets("postgresql://db/m?password=s%21x&sslmode=require", "s!x");
  CHECK(Has(query, "s%21x"));
  CHECK(Has(query, "s!x"));
}

TEST_CASE("scrubbing replaces every occurrence, longest secret first", "[pg]") {
  std::vector<std::string> s = {"abcdef", "abc"};
  CHECK(ScrubSecrets("x abcdef y abc z abcabc", s) == "x *** y *** z ******");
  CHECK(ScrubSecrets("nothing here", s) == "nothing here");
  CHECK(ScrubSecrets("", s).empty());
  CHECK(ScrubSecrets("a*b", {"*"}) == "a***b");  // a secret inside its own mask stops
}

TEST_CASE("an unparsable connection string is reported without the value libpq quotes", "[pg]") {
  const std::string url = "postgresql://user:pa%ZZss@127.0.0.1:1/db";
  auto secrets = ConninfoSecrets(url, "");
  std::string m = UnparsableConninfo("invalid percent-encoded token: \"pa%ZZss\"\n", secrets);
  CHECK(m == "DATABASE_URL cannot be parsed: invalid percent-encoded token: \"***\"");
  // What libpq looked for stays; the URI it quotes goes.
  m = UnparsableConninfo(
      "end of string reached when looking for matching \"]\" in IPv6 host address in URI: "
      "\"postgresql://user:pw@[::1/db\"",
      ConninfoSecrets("postgresql://user:pw@[::1/db", ""));
  CHECK(m ==
        "DATABASE_URL cannot be parsed: end of string reached when looking for matching \"]\" "
        "in IPv6 host address in URI: \"***\"");
  // An unquoted echo of the password is scrubbed too.
  CHECK(UnparsableConninfo("bad value pa%ZZss here", secrets) ==
        "DATABASE_URL cannot be parsed: bad value *** here");
}

TEST_CASE("PgConn::Connect with a password libpq cannot decode says so without the password",
          "[pg]") {
  common::pg::PgConn::Options o;
  o.connect_timeout = std::chrono::seconds(2);
  auto c = common::pg::PgConn::Connect("postgresql://user:pa%ZZss@127.0.0.1:1/db", o);
  REQUIRE_FALSE(c.ok());
  const std::string& m = c.error().message;
  CHECK(m.rfind("DATABASE_URL cannot be parsed: ", 0) == 0);
  CHECK(m.find("ZZ") == std::string::npos);
  CHECK(m.find("pa%") == std::string::npos);
  CHECK(m.find("127.0.0.1") == std::string::npos);
}

TEST_CASE("PgConn::Connect to a closed port reports the failure without the password", "[pg]") {
  common::pg::PgConn::Options o;
  o.connect_timeout = std::chrono::seconds(2);
  // Port 1 refuses at once; a '@' and '%' in the password, as an operator might write them.
  for (std::string url : {"postgresql://user:s3cret-pw@127.0.0.1:1/db",
                          "postgresql://user:s3cret%40pw@127.0.0.1:1/db",
                          "host=127.0.0.1 port=1 user=u password='s3cret pw' dbname=db"}) {
    auto c = common::pg::PgConn::Connect(url, o);
    REQUIRE_FALSE(c.ok());
    INFO(c.error().message);
    CHECK(c.error().message.rfind("postgres connect: ", 0) == 0);
    CHECK(c.error().message.find("s3cret") == std::string::npos);
  }
}
