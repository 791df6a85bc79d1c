// Umami 2.10.0's /api/send behaviours that the replayer relies on (docs/umami.md), recorded
// against a real Umami (the cached build of scripts/umami-build) on a PostgreSQL of the test's
// own, both from TestStack on ports the OS picks. No NATS: the answers are Umami's alone.
//
// One test case, checks in order: the later ones change the database under Umami (read-only,
// stopped), so each step states what it found (INFO) and a failed check does not stop the rest.
#include <httplib.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>

#include "common/base64.h"
#include "tests/support/test_stack.h"

namespace {

using testsupport::TestStack;

const char* const kChrome =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120 Safari/537.36";
const char* const kBot = "Googlebot/2.1 (+http://www.google.com/bot.html)";

std::string Uuid() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  uint64_t a = rng(), b = rng();
  char out[37];
  std::snprintf(out, sizeof out, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return out;
}

// One /api/send body as the tracker sends it.
std::string Payload(const std::string& website, const std::string& url = "/x",
                    const std::string& type = "event",
                    const std::string& data = R"({"plan":"pro"})") {
  nlohmann::json p = {{"website", website},  {"hostname", "example.com"}, {"url", url},
                      {"language", "en-US"}, {"screen", "1920x1080"},     {"title", "t"},
                      {"referrer", ""},      {"name", "signup"}};
  // `data` is raw JSON text: 1e21 must reach Umami as written, not as a double re-printed.
  std::string payload = p.dump();
  payload.insert(payload.size() - 1, ",\"data\":" + data);
  std::string body = "{\"type\":" + nlohmann::json(type).dump() + ",\"payload\":" + payload + "}";
  return body;
}

struct Answer {
  int status = 0;  // 0: no answer
  std::string content_type;
  std::string body;
  std::string Describe() const {
    return "status=" + std::to_string(status) + " type=" + content_type +
           " body=" + body.substr(0, 160);
  }
};

class Umami {
 public:
  explicit Umami(int port) : port_(port) {}
  Answer Post(const std::string& path, const std::string& body, const std::string& ip,
              const std::string& ua, const std::string& cache_token = "") const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(std::chrono::seconds(20));
    c.set_read_timeout(std::chrono::seconds(20));
    httplib::Headers h{{"User-Agent", ua}, {"X-Forwarded-For", ip}};
    if (!cache_token.empty()) h.emplace("x-umami-cache", cache_token);
    return Read(c.Post(path, h, body, "application/json"));
  }
  Answer Send(const std::string& body, const std::string& ip = "203.0.113.7",
              const std::string& ua = kChrome, const std::string& cache_token = "") const {
    return Post("/api/send", body, ip, ua, cache_token);
  }
  Answer Heartbeat() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(std::chrono::seconds(10));
    c.set_read_timeout(std::chrono::seconds(10));
    return Read(c.Get("/api/heartbeat"));
  }

 private:
  static Answer Read(const httplib::Result& r) {
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.content_type = r->get_header_value("Content-Type");
    a.body = r->body;
    return a;
  }
  int port_;
};

// base64url without padding, as a JWT carries it (nullopt for the standard alphabet's '+' and
// '/', and for any character outside both).
std::optional<std::string> Base64UrlDecode(const std::string& in) {
  if (in.find_first_of("+/") != std::string::npos) return std::nullopt;
  return common::DecodeBase64(in);
}

// The claim `field` of a bare JWT ("" when the token is no JWT or has no such string claim).
std::string JwtField(const std::string& token, const std::string& field) {
  size_t a = token.find('.');
  size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos || token.find('.', b + 1) != std::string::npos) return "";
  auto payload = Base64UrlDecode(token.substr(a + 1, b - a - 1));
  if (!payload) return "";
  auto j = nlohmann::json::parse(*payload, nullptr, false);
  if (!j.is_object() || !j.contains(field) || !j[field].is_string()) return "";
  return j[field].get<std::string>();
}

bool IsJwt(const std::string& s) {
  size_t dots = 0;
  for (char ch : s) {
    if (ch == '.')
      ++dots;
    else if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_')
      return false;
  }
  return dots == 2 && s.front() != '.' && s.back() != '.' && s.find("..") == std::string::npos;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("umami 2.10 answers what the replayer relies on", "[umami]") {
  TestStack stack({"pg", "umami"});
  const Umami umami(stack.umami(1).port());
  const auto& pg = stack.pg();
  auto sql = [&](const std::string& q) { return pg.Query("umami", q); };

  const std::string website = Uuid();
  const std::string unknown = Uuid();
  const std::string owner = sql("SELECT user_id FROM \"user\" WHERE username = 'admin'");
  REQUIRE(!owner.empty());
  sql("INSERT INTO website (website_id, name, domain, user_id, created_at) VALUES ('" + website +
      "', 'behaviour test', 'example.com', '" + owner + "', now())");
  auto count = [&](const std::string& table, const std::string& where = "") {
    return std::stol(sql("SELECT count(*) FROM " + table + " WHERE website_id = '" + website + "'" +
                         (where.empty() ? "" : " AND " + where)));
  };
  auto probe = [&] { return umami.Send(Payload(unknown), "198.51.100.77"); };
  const std::string long_url = "/" + std::string(520, 'a');

  // 1. The health probe's answer.
  CHECK(umami.Heartbeat().status == 200);

  // 2. A valid event: 200, a bare JWT, and the rows.
  Answer a = umami.Send(Payload(website));
  INFO("2. valid send: " << a.Describe());
  CHECK(a.status == 200);
  CHECK(a.content_type.rfind("text/plain", 0) == 0);
  CHECK(IsJwt(a.body));
  const std::string token = a.body;
  const std::string session = JwtField(token, "id");
  CHECK(!session.empty());
  CHECK(count("website_event",
              "url_path = '/x' AND event_name = 'signup' AND event_type = 2 "
              "AND session_id = '" +
                  session + "'") == 1);
  CHECK(count("event_data",
              "event_key = 'plan' AND string_value = 'pro' AND data_type = 1 AND "
              "website_event_id = (SELECT event_id FROM website_event WHERE website_id = '" +
                  website + "' AND url_path = '/x')") == 1);
  INFO("session: " << sql("SELECT country, subdivision1, city FROM session WHERE session_id = '" +
                          session + "'"));
  CHECK(count("session", "session_id = '" + session +
                             "' AND country = 'US' AND subdivision1 = 'US-CA' AND "
                             "city = 'San Francisco'") == 1);

  // 3. The cache token keeps the session.
  a = umami.Send(Payload(website, "/y"), "203.0.113.7", kChrome, token);
  INFO("3. send with x-umami-cache: " << a.Describe());
  CHECK(a.status == 200);
  CHECK(JwtField(a.body, "id") == session);
  CHECK(count("session") == 1);
  CHECK(count("website_event", "url_path = '/y' AND session_id = '" + session + "'") == 1);

  // 4. A website Umami does not know: the answer the replayer's collection probe relies on.
  a = probe();
  INFO("4. unknown website: " << a.Describe());
  CHECK(a.status == 403);
  CHECK(Contains(a.body, "Website not found: " + unknown + "."));

  // 5. Validation: a URL over 500 characters.
  a = umami.Send(Payload(website, long_url));
  INFO("5. long url: " << a.Describe());
  CHECK(a.status == 400);

  // 6. A bot: 200 {} and nothing stored.
  long events = count("website_event"), sessions = count("session");
  a = umami.Send(Payload(website, "/bot"), "198.51.100.8", kBot);
  INFO("6. bot: " << a.Describe());
  CHECK(a.status == 200);
  CHECK(a.body == "{}");
  CHECK(count("website_event") == events);
  CHECK(count("session") == sessions);

  // 10. No /api/batch in 2.10 (added in 2.17): 404, nothing stored; the replayer sends singly.
  events = count("website_event");
  a = umami.Post("/api/batch",
                 "[" + Payload(website, "/batch1") + "," + Payload(website, "/batch2") + "]",
                 "203.0.113.7", kChrome);
  INFO("10. /api/batch: " << a.Describe());
  CHECK(a.status == 404);
  CHECK(count("website_event") == events);

  // 9. 2.10's quirks: identify and a 1e21 in the data answer 500; a long URL 400.
  a = umami.Send(Payload(website, "/x", "identify"));
  INFO("9a. identify: " << a.Describe());
  CHECK(a.status == 500);
  a = umami.Send(Payload(website, "/big", "event", R"({"n":1e21})"));
  INFO("9b. 1e21 in data: " << a.Describe());
  CHECK(a.status == 500);
  a = umami.Send(Payload(website, long_url));
  INFO("9c. long url: " << a.Describe());
  CHECK(a.status == 400);

  // 8. A read-only database (the write fault): a known visitor 500, a new one 400 naming it,
  // an unknown website still 403.
  // Umami's pool must reconnect to see the setting: end its connections (PostgreSQL 15 waits up
  // to the timeout, in ms, for each to be gone, and answers false when one is still there).
  auto drop_umami_connections = [&] {
    CHECK(pg.Query("postgres",
                   "SELECT coalesce(bool_and(pg_terminate_backend(pid, 10000)), true) FROM "
                   "pg_stat_activity WHERE datname = 'umami' AND pid <> pg_backend_pid()") == "t");
  };
  pg.Query("postgres", "ALTER DATABASE umami SET default_transaction_read_only = on");
  drop_umami_connections();
  CHECK(umami.Heartbeat().status == 200);
  a = umami.Send(Payload(website, "/ro"));
  INFO("8a. read-only, known visitor: " << a.Describe());
  CHECK(a.status == 500);
  a = umami.Send(Payload(website, "/ro"), "198.51.100.9");
  INFO("8b. read-only, new visitor: " << a.Describe());
  CHECK(a.status == 400);
  CHECK(Contains(a.body, "read-only"));
  a = probe();
  INFO("8c. read-only, unknown website: " << a.Describe());
  CHECK(a.status == 403);
  CHECK(Contains(a.body, "Website not found"));
  pg.Query("postgres", "ALTER DATABASE umami RESET default_transaction_read_only");
  drop_umami_connections();
  a = umami.Send(Payload(website, "/rw"));
  INFO("8d. writable again: " << a.Describe());
  CHECK(a.status == 200);

  // 7. PostgreSQL stopped: the heartbeat still 200, sends 400 "Can't reach database server",
  // a send with a cache token 500; 200 again once it is back.
  stack.Stop("pg");
  CHECK(umami.Heartbeat().status == 200);
  a = probe();
  INFO("7b. pg down, unknown website: " << a.Describe());
  CHECK(a.status == 400);
  CHECK(Contains(a.body, "Can't reach database server"));
  a = umami.Send(Payload(website, "/down"));
  INFO("7c. pg down, known website: " << a.Describe());
  CHECK(a.status == 400);
  CHECK(Contains(a.body, "Can't reach database server"));
  a = umami.Send(Payload(website, "/down-cached"), "203.0.113.7", kChrome, token);
  INFO("7d. pg down, cache token: " << a.Describe());
  CHECK(a.status == 500);
  stack.Start("pg");
  a = umami.Send(Payload(website, "/up-again"));
  INFO("7e. pg back: " << a.Describe());
  CHECK(a.status == 200);
}
