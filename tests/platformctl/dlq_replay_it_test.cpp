// platformctl dlq replay against a real nats-server: selected messages go back to their origin
// subject with the new id and header, their DLQ copies are erased, the rest is untouched; a
// foreign origin subject is skipped and kept; the run stops at the last sequence it saw at start;
// --rate paces; Ctrl-C stops between messages; an earlier run's publish is "already there".
#include <nats/nats.h>
#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/dead_letter.h"
#include "tests/platformctl/dlq_fixture.h"

using dlqtest::Ctl;
using dlqtest::Held;
using dlqtest::Seed;
using testsupport::TestStack;

namespace {

Seed WebSeed(const std::string& site, int i, const std::string& reason = "umami failed") {
  Seed s;
  s.key = site;
  s.visitor = "v" + std::to_string(i % 3);
  s.reason = reason;
  s.origin_seq = static_cast<uint64_t>(i);
  s.msg_id = "ev-" + std::to_string(i);
  return s;
}

std::map<uint64_t, Held> BySeq(const std::vector<Held>& v) {
  std::map<uint64_t, Held> m;
  for (const auto& h : v) m[h.seq] = h;
  return m;
}

testsupport::ChildProcess StartCtl(const TestStack& stack, const std::vector<std::string>& args,
                                   const std::string& log) {
  std::vector<std::string> argv{testsupport::BinaryDir() + "/platformctl/platformctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testsupport::ChildProcess(argv, {{"NATS_URL", stack.Env("NATS_URL")}}, log);
}

}  // namespace

TEST_CASE("dlq replay puts the selection back and keeps the rest", "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);

  // seq 1..40: site-a (odd) and site-b (even); seq 41: site-a with a foreign origin subject;
  // seq 42..43: api messages of tenant t1.
  std::vector<Seed> seeds;
  for (int i = 1; i <= 40; ++i) seeds.push_back(WebSeed(i % 2 ? "site-a" : "site-b", i));
  Seed foreign = WebSeed("site-a", 41);
  foreign.subject_header = "web.other.site-a";
  seeds.push_back(foreign);
  for (int i = 42; i <= 43; ++i) {
    Seed s;
    s.web = false;
    s.key = "t1";
    s.reason = "cannot decode";
    s.origin_seq = static_cast<uint64_t>(i);
    s.msg_id = "batch-" + std::to_string(i);
    seeds.push_back(s);
  }
  std::vector<common::OutMessage> msgs;
  for (const auto& s : seeds) msgs.push_back(dlqtest::DeadLetter(s));
  dlqtest::PublishAll(*client, msgs);
  auto before = BySeq(dlqtest::ReadAll(*client, "WEB_DLQ"));
  REQUIRE(before.size() == 41);

  auto r = Ctl(stack, "dlq replay --queue web --key site-a --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);  // the foreign one was skipped
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["replayed"] == 20);
  CHECK(doc["already_there"] == 0);
  CHECK(doc["skipped"] == 1);
  CHECK(doc["failed"] == 0);
  CHECK(doc["end_seq"] == 41);
  REQUIRE(doc["skipped_reasons"].size() == 1);
  CHECK(doc["skipped_reasons"][0]["seqs"] == std::vector<int>{41});
  CHECK_THAT(doc["skipped_reasons"][0]["why"].get<std::string>(),
             Catch::Contains("'web.other.site-a' is not on WEB_EVENTS"));

  // Origin: exactly the 20 site-a messages, payload unchanged, new id and header.
  auto origin = dlqtest::ReadAll(*client, "WEB_EVENTS");
  REQUIRE(origin.size() == 20);
  size_t n = 0;
  for (int i = 1; i <= 40; i += 2) {
    const Held& h = origin[n++];
    std::string dlq_seq = std::to_string(i);  // DLQ seq i holds origin i
    CHECK(h.subject == "web.events.site-a");
    CHECK(h.msg_id == "ev-" + std::to_string(i) + ".replay.WEB_DLQ." + dlq_seq);
    CHECK(h.replay_header == "WEB_DLQ." + dlq_seq);
    CHECK(h.data == dlqtest::Payload(WebSeed("site-a", i)));
  }
  // DLQ: the site-b ones and the foreign one, untouched.
  auto after = BySeq(dlqtest::ReadAll(*client, "WEB_DLQ"));
  REQUIRE(after.size() == 21);
  for (const auto& [seq, h] : after) {
    CHECK((seq % 2 == 0 || seq == 41));
    CHECK(h.data == before[seq].data);
    CHECK(h.msg_id == before[seq].msg_id);
  }
  CHECK(dlqtest::Count(*client, "API_DLQ") == 2);

  // The api queue: the origin's Content-Type travels with the replay.
  r = Ctl(stack, "dlq replay --queue api --all");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("replayed: 2"));
  CHECK(dlqtest::Count(*client, "API_DLQ") == 0);
  auto api = dlqtest::ReadAll(*client, "API_METRICS");
  REQUIRE(api.size() == 2);
  CHECK(api[0].msg_id == "batch-42.replay.API_DLQ.1");
  natsMsg* raw = nullptr;
  REQUIRE(js_GetMsg(&raw, client->js(), "API_METRICS", api[0].seq, nullptr, nullptr) == NATS_OK);
  const char* ct = nullptr;
  CHECK(natsMsgHeader_Get(raw, "Content-Type", &ct) == NATS_OK);
  CHECK(std::string(ct ? ct : "") == "application/json");
  const char* reason = nullptr;
  CHECK(natsMsgHeader_Get(raw, common::dead_letter::kReason, &reason) == NATS_NOT_FOUND);
  natsMsg_Destroy(raw);

  // A crash between an earlier run's publish and its erase: the copy is on the origin already.
  // The rerun's publish is deduplicated by the stream and reported as already there.
  Seed again = WebSeed("site-b", 2);
  common::OutMessage earlier;
  earlier.subject = "web.events.site-b";
  earlier.data = dlqtest::Payload(again);
  earlier.msg_id = "ev-2.replay.WEB_DLQ.2";
  auto ack = common::PublishSync(*client, earlier);
  REQUIRE(ack.ok());
  REQUIRE_FALSE(ack->duplicate);
  r = Ctl(stack, "dlq replay --queue web --key site-b --to 4");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("replayed: 1\nalready there from an earlier run: 1\n"));
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 22);  // 20 + the earlier one + seq 4
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 19);

  // Nothing selected: nothing to do, exit 0.
  r = Ctl(stack, "dlq replay --queue web --key site-z");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("replayed: 0"));

  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains(dlqtest::kMarker));
}

TEST_CASE("dlq replay stops at the last sequence of its start, paces, and stops on Ctrl-C",
          "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  std::vector<common::OutMessage> msgs;
  for (int i = 1; i <= 60; ++i) msgs.push_back(dlqtest::DeadLetter(WebSeed("site-c", i)));
  dlqtest::PublishAll(*client, msgs);

  // 60 messages at 25/s take about 2.4 s; 10 more arrive meanwhile and must stay.
  std::string log = stack.dir() + "/replay.log";
  auto start = std::chrono::steady_clock::now();
  {
    auto child =
        StartCtl(stack, {"dlq", "replay", "--queue", "web", "--all", "--rate", "25/s"}, log);
    REQUIRE(testsupport::WaitFor([&] { return dlqtest::Count(*client, "WEB_EVENTS") >= 5; }, 5000));
    std::vector<common::OutMessage> late;
    for (int i = 61; i <= 70; ++i) late.push_back(dlqtest::DeadLetter(WebSeed("site-c", i)));
    dlqtest::PublishAll(*client, late);
    CHECK(child.Wait(20'000) == 0);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("replay of 60 at 25/s took " << seconds << " s");
  CHECK(seconds >= 2.3);
  CHECK(seconds < 8);
  auto dlq = dlqtest::ReadAll(*client, "WEB_DLQ");
  REQUIRE(dlq.size() == 10);
  for (size_t i = 0; i < dlq.size(); ++i) CHECK(dlq[i].seq == 61 + i);
  auto origin = dlqtest::ReadAll(*client, "WEB_EVENTS");
  REQUIRE(origin.size() == 60);
  for (const auto& h : origin) {
    int i = std::stoi(h.msg_id.substr(3));  // "ev-<i>...": DLQ seq i held origin i
    CHECK(i <= 60);
    CHECK(h.msg_id == "ev-" + std::to_string(i) + ".replay.WEB_DLQ." + std::to_string(i));
  }

  // Ctrl-C: the run stops between messages; every message is either replayed and erased, or
  // untouched in the DLQ.
  {
    auto child = StartCtl(stack, {"dlq", "replay", "--queue", "web", "--all", "--rate", "10"}, log);
    REQUIRE(
        testsupport::WaitFor([&] { return dlqtest::Count(*client, "WEB_EVENTS") >= 63; }, 5000));
    child.Signal(SIGINT);
    CHECK(child.Wait(5000) == 1);
  }
  uint64_t events = dlqtest::Count(*client, "WEB_EVENTS");
  uint64_t left = dlqtest::Count(*client, "WEB_DLQ");
  CHECK(events > 60);
  CHECK(left > 0);
  CHECK(events - 60 + left == 10);
  std::string out = testsupport::Capture("cat " + log);
  CHECK_THAT(out, Catch::Contains("stopped early: interrupted"));
  CHECK_THAT(out, Catch::Contains("replay partly done: exit code 1"));

  // On a terminal a progress line shows; piped, it does not.
  auto r = Ctl(stack, "dlq replay --queue web --all --rate 20");
  CHECK(r.rc == 0);
  CHECK_THAT(r.err, !Catch::Contains("looked at"));
  msgs.clear();
  for (int i = 71; i <= 80; ++i) msgs.push_back(dlqtest::DeadLetter(WebSeed("site-c", i)));
  dlqtest::PublishAll(*client, msgs);
  int rc = -1;
  std::string tty = testsupport::Capture(
      "script -qec \"NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
          "/platformctl/platformctl dlq replay --queue web --all --rate 20\" /dev/null",
      &rc);
  INFO(tty);
  CHECK(rc == 0);
  CHECK_THAT(tty, Catch::Contains("\rreplay WEB_DLQ: "));
  CHECK_THAT(tty, Catch::Contains("looked at"));
  CHECK_THAT(tty, Catch::Contains("replayed: 10"));
}

TEST_CASE("dlq replay keeps the original id of both dead-letter shapes side by side",
          "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  auto web = [](int i, const std::string& msg_id, bool legacy) {
    Seed s = WebSeed("site-m", i);  // payload id "ev-<i>"
    s.msg_id = msg_id;
    s.legacy = legacy;
    return s;
  };
  std::vector<Seed> seeds = {
      web(101, "orig-101", false),  // 1: ours, Sa-Dlq-Msg-Id
      web(102, "orig-102", true),   // 2: the previous system's: its Nats-Msg-Id is the origin's
      web(103, "", false),          // 3: ours, the origin had no id: the event id
      web(104, "", true),           // 4: previous shape without an id: the event id
      web(105, "", false),          // 5: ours, no id anywhere (not JSON): skipped and kept
      web(106, ".replay.WEB_DLQ.9", false),  // 6: an earlier version's id-less replay: event id
      web(107, "orig-107", true),            // 7: previous shape again, after ours
  };
  seeds[4].raw_payload = std::string("not json ") + dlqtest::kMarker;
  for (int i = 1; i <= 4; ++i) {
    Seed s;
    s.web = false;
    s.key = "t1";
    s.reason = "cannot decode";
    s.origin_seq = static_cast<uint64_t>(200 + i);
    s.legacy = i % 2 == 0;  // 2 and 4: the previous shape
    s.msg_id = i <= 2 ? "batch-" + std::to_string(i) : (i == 3 ? "" : "batch-4");
    seeds.push_back(s);  // api 1: ours; 2: previous; 3: ours without id (skipped); 4: previous
  }
  std::vector<common::OutMessage> msgs;
  for (const auto& s : seeds) msgs.push_back(dlqtest::DeadLetter(s));
  dlqtest::PublishAll(*client, msgs);
  REQUIRE(dlqtest::Count(*client, "WEB_DLQ") == 7);
  REQUIRE(dlqtest::Count(*client, "API_DLQ") == 4);

  auto r = Ctl(stack, "dlq replay --queue web --all --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);  // one skipped
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["replayed"] == 6);
  CHECK(doc["skipped"] == 1);
  REQUIRE(doc["skipped_reasons"].size() == 1);
  CHECK(doc["skipped_reasons"][0]["seqs"] == std::vector<int>{5});
  CHECK_THAT(doc["skipped_reasons"][0]["why"].get<std::string>(),
             Catch::Contains("no original message id"));
  std::map<std::string, std::string> ids;  // replay header -> message id
  for (const auto& h : dlqtest::ReadAll(*client, "WEB_EVENTS")) ids[h.replay_header] = h.msg_id;
  CHECK(ids == std::map<std::string, std::string>{
                   {"WEB_DLQ.1", "orig-101.replay.WEB_DLQ.1"},
                   {"WEB_DLQ.2", "orig-102.replay.WEB_DLQ.2"},
                   {"WEB_DLQ.3", "ev-103.replay.WEB_DLQ.3"},
                   {"WEB_DLQ.4", "ev-104.replay.WEB_DLQ.4"},
                   {"WEB_DLQ.6", "ev-106.replay.WEB_DLQ.6"},
                   {"WEB_DLQ.7", "orig-107.replay.WEB_DLQ.7"},
               });
  auto left = dlqtest::ReadAll(*client, "WEB_DLQ");
  REQUIRE(left.size() == 1);
  CHECK(left[0].seq == 5);

  r = Ctl(stack, "dlq replay --queue api --all --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  doc = nlohmann::json::parse(r.out);
  CHECK(doc["replayed"] == 3);
  CHECK(doc["skipped"] == 1);
  CHECK(doc["skipped_reasons"][0]["seqs"] == std::vector<int>{3});
  CHECK_THAT(doc["skipped_reasons"][0]["why"].get<std::string>(),
             Catch::Contains("no original batch id"));
  std::vector<std::string> api_ids;
  for (const auto& h : dlqtest::ReadAll(*client, "API_METRICS")) api_ids.push_back(h.msg_id);
  CHECK(api_ids == std::vector<std::string>{"batch-1.replay.API_DLQ.1", "batch-2.replay.API_DLQ.2",
                                            "batch-4.replay.API_DLQ.4"});
  for (const auto& id : api_ids) CHECK(id.rfind(".replay.", 0) != 0);
  for (const auto& [h, id] : ids) CHECK(id.rfind(".replay.", 0) != 0);
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains(dlqtest::kMarker));
}
