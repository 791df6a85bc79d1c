#include "tests/support/web_events.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>

#include "common/log.h"
#include "common/nats_stream.h"
#include "tests/support/test_stack.h"

namespace testsupport {

std::string VisitorKey(int v) { return "visitor-" + std::to_string(v); }

std::string VisitorIp(int v) {
  // The documentation ranges the test GeoIP database knows.
  int block = v / 250;
  int host = v % 250 + 1;
  return (block % 2 == 0 ? "203.0.113." : "198.51.100.") + std::to_string(host);
}

std::string VisitorAgent(int v) {
  return "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0." +
         std::to_string(v) + ".0 Safari/537.36";
}

std::string EventJson(const TestEvent& e, int64_t accepted_at_ms) {
  std::string url =
      e.url.empty() ? "/v" + std::to_string(e.visitor) + "/" + std::to_string(e.seq) : e.url;
  std::string ua = e.user_agent.empty() ? VisitorAgent(e.visitor) : e.user_agent;
  return R"({"id":")" + common::JsonEscape(e.id) + R"(","website":")" + e.site +
         R"(","visitor":")" + VisitorKey(e.visitor) + R"(","accepted_at":)" +
         std::to_string(accepted_at_ms) + R"(,"ip":")" + VisitorIp(e.visitor) +
         R"(","user_agent":")" + common::JsonEscape(ua) + R"(","type":")" + e.type +
         R"(","payload":{"hostname":"example.com","url":")" + common::JsonEscape(url) +
         R"(","referrer":"","title":"t","language":"en-US","screen":"1920x1080","name":"e)" +
         std::to_string(e.seq) + R"(","data":)" + e.data_json + "}}";
}

common::Status PublishRaw(common::NatsClient& client, const std::string& subject,
                          const std::string& body, const std::string& msg_id) {
  common::OutMessage m;
  m.subject = subject;
  m.data = body;
  m.msg_id = msg_id;
  auto ack = common::PublishSync(client, m);
  if (!ack) return ack.error();
  return common::Status::Ok();
}

common::OutMessage EventMessage(const TestEvent& e) {
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  common::OutMessage m;
  m.subject = "web.events." + e.site;
  m.data = EventJson(e, now_ms);
  m.msg_id = e.id;
  return m;
}

common::Status PublishEvent(common::NatsClient& client, const TestEvent& e) {
  auto m = EventMessage(e);
  return PublishRaw(client, m.subject, m.data, m.msg_id);
}

std::vector<std::string> Query(const std::string& db_url, const std::string& sql) {
  int rc = 0;
  std::string out =
      Capture("psql -X -q -At -v ON_ERROR_STOP=1 '" + db_url + "' -c \"" + sql + "\" 2>&1", &rc);
  if (rc != 0) throw std::runtime_error("psql failed: " + sql + ": " + out);
  std::vector<std::string> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) rows.push_back(line);
  return rows;
}

int64_t QueryInt(const std::string& db_url, const std::string& sql) {
  auto rows = Query(db_url, sql);
  if (rows.empty()) throw std::runtime_error("no row: " + sql);
  return std::stoll(rows[0]);
}

void AddWebsite(const std::string& db, const std::string& id) {
  Query(db, "INSERT INTO website (website_id, name, domain, created_at) VALUES ('" + id +
                "', 'test', 'example.com', now()) ON CONFLICT DO NOTHING");
}

std::string NewUuid() {
  static std::mt19937_64 gen(std::random_device{}());
  uint64_t a = gen(), b = gen();
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

}  // namespace testsupport
