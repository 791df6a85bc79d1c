#include "tests/platformctl/dlq_fixture.h"

#include <nats/nats.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/dead_letter.h"
#include "common/nats_async.h"

namespace dlqtest {
namespace {

std::string& Outputs() {
  static std::string all;
  return all;
}

}  // namespace

std::string Payload(const Seed& s) {
  if (!s.raw_payload.empty()) return s.raw_payload;
  if (!s.web) return "otlp-batch " + s.marker + " tenant " + s.key;
  std::string website = s.website.empty() ? s.key : s.website;
  return R"({"id":"ev-)" + std::to_string(s.origin_seq) + R"(","website":")" + website +
         R"(","visitor":")" + s.visitor +
         R"(","accepted_at":1764427800123,"ip":"203.0.113.7","user_agent":"t","type":"event",)" +
         R"("payload":{"hostname":"h","url":"/)" + s.marker + R"(","title":"t"}})";
}

common::OutMessage DeadLetter(const Seed& s) {
  if (s.legacy) {
    namespace dl = common::dead_letter;
    common::OutMessage m;
    m.subject = (s.web ? "dlq.web." : "dlq.api.") + s.key;
    m.data = Payload(s);
    m.msg_id = s.msg_id;
    m.headers = {
        {dl::kReason, s.reason},
        {dl::kSubject, s.subject_header.empty() ? (s.web ? "web.events." : "api.metrics.") + s.key
                                                : s.subject_header},
        {dl::kStream, s.web ? "WEB_EVENTS" : "API_METRICS"},
        {dl::kStreamSeq, std::to_string(s.origin_seq)}};
    return m;
  }
  common::dead_letter::Origin o;
  o.subject = (s.web ? "web.events." : "api.metrics.") + s.key;
  o.stream = s.web ? "WEB_EVENTS" : "API_METRICS";
  o.stream_seq = s.origin_seq;
  o.payload = Payload(s);
  if (!s.msg_id.empty()) o.headers.emplace_back("Nats-Msg-Id", s.msg_id);
  if (!s.web) o.headers.emplace_back("Content-Type", "application/json");
  common::OutMessage m = common::dead_letter::Build(o, s.reason, "status 400 reply excerpt");
  if (!s.subject_header.empty()) {
    for (auto& [k, v] : m.headers) {
      if (k == common::dead_letter::kSubject) v = s.subject_header;
    }
  }
  return m;
}

void PublishAll(common::NatsClient& client, const std::vector<common::OutMessage>& messages) {
  std::atomic<uint64_t> ok{0}, bad{0};
  auto pub = common::AsyncPublisher::Create(
      client, [&](uint64_t, const common::Status& s) { (s.ok() ? ok : bad).fetch_add(1); }, 512);
  REQUIRE(pub.ok());
  for (size_t i = 0; i < messages.size(); ++i) {
    auto st = (*pub)->Publish(messages[i], i);
    REQUIRE(st.ok());
  }
  bool done = testsupport::WaitFor([&] { return ok + bad == messages.size(); }, 60'000);
  REQUIRE(done);
  REQUIRE(bad == 0);
}

std::vector<Held> ReadAll(common::NatsClient& client, const std::string& stream) {
  // A message get per sequence, from the stream's first to its last: no consumer, so nothing
  // is delivered twice or late on a loaded machine (a pull consumer read 2,128 messages of a
  // stream holding 1,732 in a fresh-clone run). Erased sequences answer "not found".
  jsStreamInfo* si = nullptr;
  REQUIRE(js_GetStreamInfo(&si, client.js(), stream.c_str(), nullptr, nullptr) == NATS_OK);
  const uint64_t n = si->State.Msgs;
  const uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
  jsStreamInfo_Destroy(si);
  std::vector<Held> out;
  if (n == 0) return out;
  out.reserve(n);
  auto header = [](natsMsg* m, const char* name) {
    const char* v = nullptr;
    return natsMsgHeader_Get(m, name, &v) == NATS_OK && v != nullptr ? std::string(v)
                                                                     : std::string();
  };
  for (uint64_t seq = first; seq <= last; ++seq) {
    natsMsg* m = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetMsg(&m, client.js(), stream.c_str(), seq, nullptr, &jerr);
    if (s == NATS_NOT_FOUND) continue;
    INFO("message get of " << stream << " seq " << seq << ": " << natsStatus_GetText(s));
    REQUIRE(s == NATS_OK);
    Held h;
    h.seq = seq;
    h.subject = natsMsg_GetSubject(m);
    h.msg_id = header(m, "Nats-Msg-Id");
    h.replay_header = header(m, common::dead_letter::kReplay);
    h.data.assign(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
    natsMsg_Destroy(m);
    out.push_back(std::move(h));
  }
  REQUIRE(out.size() == n);
  return out;
}

uint64_t Count(common::NatsClient& client, const std::string& stream) {
  jsStreamInfo* si = nullptr;
  REQUIRE(js_GetStreamInfo(&si, client.js(), stream.c_str(), nullptr, nullptr) == NATS_OK);
  uint64_t n = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  return n;
}

CtlRun Ctl(const testsupport::TestStack& stack, const std::string& args, const std::string& env) {
  std::string err_path = stack.dir() + "/ctl.stderr";
  CtlRun r;
  r.out = testsupport::Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + env + " " +
                                   testsupport::BinaryDir() + "/platformctl/platformctl " + args +
                                   " </dev/null 2>" + err_path,
                               &r.rc);
  r.err = testsupport::ReadFile(err_path);
  Outputs() += r.out + r.err;
  return r;
}

const std::string& AllOutput() { return Outputs(); }

void Init(const testsupport::TestStack& stack) {
  auto r = Ctl(stack, "init");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
}

void SeedWeb(common::NatsClient& client, int n, const std::string& tag) {
  std::vector<common::OutMessage> msgs;
  for (int i = 1; i <= n; ++i) {
    Seed s;
    s.key = "site-" + std::to_string(i % 4);
    s.visitor = "v" + std::to_string(i % 7);
    s.reason = "umami failed this event 4 times while its health checks passed";
    s.origin_seq = static_cast<uint64_t>(i);
    s.msg_id = tag + "-" + std::to_string(i);
    msgs.push_back(DeadLetter(s));
  }
  PublishAll(client, msgs);
}

nlohmann::json TaskOf(const std::string& list_json, const std::string& name) {
  const nlohmann::json all = nlohmann::json::parse(list_json, nullptr, false);
  if (all.is_object() && all.contains("tasks")) {
    for (const auto& t : all["tasks"]) {
      if (t["name"] == name) return t;
    }
  }
  return nlohmann::json{{"replayed", 0}, {"runner_gone", false}, {"state", "absent"}};
}

}  // namespace dlqtest
