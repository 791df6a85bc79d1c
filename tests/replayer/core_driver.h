// The engine core's test driver: feeds one EngineCore by hand and keeps the commands of the
// last input (engine_core_test.cpp, engine_core_batch_test.cpp).
// Not thread-safe: one test, one driver.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "replayer/engine_core.h"

namespace core_test {

using namespace replayer;
using std::chrono::milliseconds;

inline const char* kSite = "11111111-2222-4333-8444-555555555555";

inline std::string Body(const std::string& id, const std::string& visitor, int64_t accepted_ms,
                        const std::string& extra = "") {
  return std::string(R"({"id":")") + id + R"(","website":")" + kSite + R"(","visitor":")" +
         visitor + R"(","accepted_at":)" + std::to_string(accepted_ms) +
         R"(,"ip":"203.0.113.7","user_agent":"Mozilla/5.0","type":"event","payload":{"url":"/")" +
         extra + "}}";
}

inline const char* kToken = "eyJhbGciOiJIUzI1NiJ9.eyJ2aXNpdElkIjoiMSJ9.c2ln";
inline const char* kToken2 = "eyJhbGciOiJIUzI1NiJ9.eyJ2aXNpdElkIjoiMiJ9.c2ln";

// Drives one core; keeps the commands of the last input.
struct Driver {
  explicit Driver(CoreConfig c = Config()) : core(std::move(c)) {}

  static CoreConfig Config() {
    CoreConfig c;
    c.processes = {"http://umami"};
    c.max_in_flight = 100;
    c.fetch_batch = 10;
    c.batch_max = 0;  // /api/send only, as with Umami 2.10; the batch tests set it
    return c;
  }

  TimePoint now = TimePoint{} + std::chrono::hours(1);
  EngineCore core;
  Output out;
  Ref next_ref = 0;

  void Take() { core.Take(out); }
  template <typename T>
  std::vector<T> All() const {
    std::vector<T> r;
    for (const auto& c : out.commands) {
      if (auto* t = std::get_if<T>(&c)) r.push_back(*t);
    }
    return r;
  }
  template <typename T>
  T One() const {
    auto all = All<T>();
    REQUIRE(all.size() == 1);
    return all[0];
  }
  bool Noted(Note::Kind k) const {
    for (const auto& n : out.notes) {
      if (n.kind == k) return true;
    }
    return false;
  }

  // Start and pass the first health check.
  void Up() {
    core.Start(now);
    Take();
    auto check = One<CheckCmd>();
    Pass(check.check_id);
  }
  void Pass(uint64_t check_id) {
    core.OnCheckAnswer(check_id, CheckPart::kHeartbeat, {200, "", "", 0}, now);
    core.OnCheckAnswer(check_id, CheckPart::kProbe, {403, "Website not found: x.", "", 0}, now);
    Take();
  }
  void Fail(uint64_t check_id) {
    core.OnCheckAnswer(check_id, CheckPart::kHeartbeat, {200, "", "", 0}, now);
    core.OnCheckAnswer(check_id, CheckPart::kProbe, {400, "Can't reach database server", "", 0},
                       now);
    Take();
  }
  Delivery Msg(uint64_t seq, const std::string& body, uint64_t delivered = 1) {
    Delivery d;
    d.ref = ++next_ref;
    d.stream_seq = seq;
    d.num_delivered = delivered;
    d.bytes = static_cast<int64_t>(body.size());
    d.subject = "web.events.s";
    d.parsed = Parse(body, "");
    return d;
  }
  void Fetched(std::vector<Delivery> batch) {
    core.OnFetched(std::move(batch), "", now);
    Take();
  }
  // The visitor's state is unknown: answer its lookup (absent unless a value is given).
  void Visit(const std::string& value = "") {
    auto v = One<VisitLookupCmd>();
    core.OnVisitAnswer(v.lane, value.empty() ? Lookup::kAbsent : Lookup::kFound, value, now);
    Take();
  }
  void Answer(const SendCmd& s, int status, const std::string& body = "") {
    now += milliseconds(1);  // an answer takes time
    core.OnSendAnswer(s.send_id, {status, body, status == 0 ? "timeout" : "", 0.01}, now);
    Take();
  }
  void Later(milliseconds d) {
    now += d;
    core.OnTimer(now);
    Take();
  }
  static std::string Header(const SendCmd& s, const std::string& name) {
    for (const auto& [k, v] : s.headers) {
      if (k == name) return v;
    }
    return "";
  }
};

}  // namespace core_test
