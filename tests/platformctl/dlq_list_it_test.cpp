// platformctl dlq list against a real nats-server: every selection returns exactly the expected
// DLQ sequences, --json and --summary parse, and no output carries a byte of any payload.
#include <nats/nats.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <set>

#include <nlohmann/json.hpp>

#include "common/timefmt.h"
#include "tests/platformctl/dlq_fixture.h"

using dlqtest::Ctl;
using dlqtest::Seed;
using testsupport::TestStack;

namespace {

constexpr int kN = 1000;
const char* const kReasons[] = {
    "umami failed this event 4 times while its health checks passed",
    "not valid JSON",
    "no usable visitor key",
    "more than 64 events of this visitor were held behind an event umami keeps failing",
};

std::string KeyOf(int i) { return "site-" + std::to_string(i % 5); }
int ReasonOf(int i) { return (i / 3) % 4; }

std::vector<uint64_t> Seqs(const nlohmann::json& doc) {
  std::vector<uint64_t> out;
  for (const auto& m : doc["messages"]) out.push_back(m["seq"].get<uint64_t>());
  return out;
}

std::vector<uint64_t> Expected(const std::function<bool(int)>& pred) {
  std::vector<uint64_t> out;
  for (int i = 1; i <= kN; ++i) {
    if (pred(i)) out.push_back(static_cast<uint64_t>(i));
  }
  return out;
}

std::vector<uint64_t> ListSeqs(const TestStack& stack, const std::string& selection) {
  auto r = Ctl(stack, "dlq list --queue web --json " + selection);
  INFO(selection << "\n" << r.out << r.err);
  REQUIRE(r.rc == 0);
  return Seqs(nlohmann::json::parse(r.out));
}

}  // namespace

TEST_CASE("dlq list selects exactly and never shows a payload", "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);

  // Two batches, so that a time bound splits them at seq 500/501.
  std::vector<common::OutMessage> first, second;
  for (int i = 1; i <= kN; ++i) {
    dlqtest::Seed s;
    s.key = KeyOf(i);
    s.visitor = "v" + std::to_string(i % 7);
    s.reason = kReasons[ReasonOf(i)];
    s.origin_seq = static_cast<uint64_t>(i);
    s.msg_id = "ev-" + std::to_string(i);
    (i <= kN / 2 ? first : second).push_back(dlqtest::DeadLetter(s));
  }
  // The split is a time to the millisecond (what the CLI prints and reads) strictly between the
  // two batches' stored times, which the server takes from the same clock: every message of the
  // first is stored before it was acknowledged, so a split in a later millisecond than the acks
  // is after all of them; the second is published in a millisecond after the split's.
  dlqtest::PublishAll(*client, first);
  constexpr int64_t kMs = 1'000'000;
  const int64_t acked_ms = common::NowUnixNs() / kMs;
  REQUIRE(testsupport::WaitFor([&] { return common::NowUnixNs() / kMs > acked_ms; }, 1000));
  const int64_t split_ms = common::NowUnixNs() / kMs;
  const std::string split = common::FormatRfc3339(split_ms * kMs);
  REQUIRE(testsupport::WaitFor([&] { return common::NowUnixNs() / kMs > split_ms; }, 1000));
  dlqtest::PublishAll(*client, second);
  // DLQ sequence i holds origin i (published in order over one connection).
  auto held = dlqtest::ReadAll(*client, "WEB_DLQ");
  REQUIRE(held.size() == kN);
  for (int i = 1; i <= kN; ++i) {
    REQUIRE(held[i - 1].seq == static_cast<uint64_t>(i));
    REQUIRE(held[i - 1].msg_id == "dlq.WEB_EVENTS." + std::to_string(i));
  }

  CHECK(ListSeqs(stack, "") == Expected([](int) { return true; }));
  CHECK(ListSeqs(stack, "--all") == Expected([](int) { return true; }));
  CHECK(ListSeqs(stack, "--key site-2") == Expected([](int i) { return i % 5 == 2; }));
  CHECK(ListSeqs(stack, "--reason 'HEALTH CHECKS passed'") ==
        Expected([](int i) { return ReasonOf(i) == 0; }));
  CHECK(ListSeqs(stack, "--from 100 --to 250") ==
        Expected([](int i) { return i >= 100 && i <= 250; }));
  CHECK(ListSeqs(stack, "--key site-1 --reason visitor --from 300") == Expected([](int i) {
          return i % 5 == 1 && (ReasonOf(i) == 2 || ReasonOf(i) == 3) && i >= 300;
        }));
  CHECK(ListSeqs(stack, "--from " + split) == Expected([](int i) { return i > kN / 2; }));
  CHECK(ListSeqs(stack, "--to " + split + " --key site-4") ==
        Expected([](int i) { return i <= kN / 2 && i % 5 == 4; }));
  CHECK(ListSeqs(stack, "--from " + split + " --to 700 --reason 'not valid'") ==
        Expected([](int i) { return i > kN / 2 && i <= 700 && ReasonOf(i) == 1; }));
  CHECK(ListSeqs(stack, "--key site-9").empty());
  CHECK(ListSeqs(stack, "--from 1001").empty());

  // The JSON fields of docs/contract.md §9, from the Sa-Dlq-* headers.
  auto r = Ctl(stack, "dlq list --queue web --json --from 42 --to 42", "LOG_LEVEL=trace");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["messages"].size() == 1);
  const auto& m = doc["messages"][0];
  CHECK(m["seq"] == 42);
  CHECK(m["key"] == KeyOf(42));
  CHECK(m["stream"] == "WEB_EVENTS");
  CHECK(m["stream_seq"] == 42);
  CHECK(m["subject"] == "web.events." + KeyOf(42));
  CHECK(m["reason"] == kReasons[ReasonOf(42)]);
  dlqtest::Seed s42;
  s42.key = KeyOf(42);
  s42.visitor = "v" + std::to_string(42 % 7);
  s42.origin_seq = 42;
  CHECK(m["size"] == dlqtest::Payload(s42).size());
  CHECK(common::FormatRfc3339(m["time_unix_ns"].get<int64_t>()) == m["time"]);
  CHECK(m["time"].get<std::string>() < split);

  // The text form: a header line, one line per message, a count.
  r = Ctl(stack, "dlq list --queue web --key site-3 --to 20");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::StartsWith("SEQ"));
  CHECK_THAT(r.out, Catch::Contains("WEB_EVENTS#13"));
  CHECK_THAT(r.out, Catch::Contains("web.events.site-3"));
  CHECK_THAT(r.out, Catch::Contains("4 messages in WEB_DLQ selected"));

  // --summary: counts per reason and per key.
  r = Ctl(stack, "dlq list --queue web --summary --json");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  doc = nlohmann::json::parse(r.out);
  CHECK(doc["count"] == kN);
  CHECK(doc["first_seq"] == 1);
  CHECK(doc["last_seq"] == kN);
  REQUIRE(doc["by_reason"].size() == 4);
  for (const auto& e : doc["by_reason"]) {
    auto want = Expected([&](int i) { return kReasons[ReasonOf(i)] == e["reason"]; }).size();
    CHECK(e["count"] == want);
  }
  REQUIRE(doc["by_key"].size() == 5);
  for (const auto& e : doc["by_key"]) CHECK(e["count"] == kN / 5);
  r = Ctl(stack, "dlq list --queue web --summary --reason visitor");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  auto visitor_reasons = Expected([](int i) { return ReasonOf(i) >= 2; }).size();
  CHECK_THAT(r.out,
             Catch::Contains("WEB_DLQ: " + std::to_string(visitor_reasons) + " messages selected"));
  CHECK_THAT(r.out, Catch::Contains("by reason:"));
  CHECK_THAT(r.out, Catch::Contains("by site (5):"));

  // An empty queue and a missing stream.
  r = Ctl(stack, "dlq list --queue api --json");
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["messages"].empty());

  // A time bound across erased messages: the walk's start, found by sequence, steps over the
  // gap (more than its probe span) and still starts at the first message after the time.
  r = Ctl(stack, "dlq purge --queue web --from 480 --to 540 --yes");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(ListSeqs(stack, "--from " + split) == Expected([](int i) { return i > 540; }));
  CHECK(ListSeqs(stack, "--from " + split + " --key site-2") ==
        Expected([](int i) { return i > 540 && i % 5 == 2; }));
  CHECK(ListSeqs(stack, "--to " + split + " --from 470") ==
        Expected([](int i) { return i >= 470 && i < 480; }));

  // Not one payload byte in anything platformctl printed or logged (the marker is in every
  // payload; the url and ids are payload-only strings too).
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains(dlqtest::kMarker));
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains("203.0.113.7"));
  CHECK_THAT(dlqtest::AllOutput(), !Catch::Contains("accepted_at"));
}

TEST_CASE("dlq commands reject bad usage before touching NATS", "[integration][dlq]") {
  // No server listens here: a usage error must come before any connection (exit 2, not 3).
  int port = testsupport::FreePortRange(1);
  auto run = [&](const std::string& args) {
    int rc = -1;
    std::string out = testsupport::Capture("NATS_URL=nats://127.0.0.1:" + std::to_string(port) +
                                               " " + testsupport::BinaryDir() +
                                               "/platformctl/platformctl " + args + " 2>&1",
                                           &rc);
    return std::make_pair(rc, out);
  };
  for (const char* args :
       {"dlq replay --queue web", "dlq purge --queue api --yes", "dlq list --queue nope",
        "dlq list", "dlq list --queue web --from yesterday", "dlq list --queue web --to 0",
        "dlq list --queue web --from 50 --to 10", "dlq list --queue web --key 'a.b'",
        "dlq list --queue web --key 'site.>'", "dlq replay --queue web --all --rate fast",
        "dlq replay --queue web --all --rate 0", "erase", "erase --visitor v1",
        "erase --site s --tenant t", "erase --site 'a b'", "erase --site s --visitor ''",
        "dlq list --queue web --from 2026-02-30T00:00:00Z"}) {
    auto [rc, out] = run(args);
    INFO(args << "\n" << out);
    CHECK(rc == 2);
  }
  auto [rc, out] = run("dlq replay --queue web");
  CHECK_THAT(out, Catch::Contains("needs a selection"));
  std::tie(rc, out) = run("dlq list --queue web --all");
  CHECK(rc == 3);
  std::tie(rc, out) = run("dlq --help");
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("4 purge without --yes"));
}

TEST_CASE("dlq list, replay and purge read by message gets when no consumer can be had",
          "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  // WEB_DLQ allows one consumer, and one exists: platformctl's own is refused. (The limit cannot
  // be changed in place: the stream is made again with init's settings and it.)
  {
    jsStreamInfo* si = nullptr;
    REQUIRE(js_GetStreamInfo(&si, client->js(), "WEB_DLQ", nullptr, nullptr) == NATS_OK);
    jsStreamConfig c = *si->Config;
    c.MaxConsumers = 1;
    REQUIRE(js_DeleteStream(client->js(), "WEB_DLQ", nullptr, nullptr) == NATS_OK);
    jsStreamInfo* up = nullptr;
    REQUIRE(js_AddStream(&up, client->js(), &c, nullptr, nullptr) == NATS_OK);
    jsStreamInfo_Destroy(up);
    jsStreamInfo_Destroy(si);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "squatter";
    cc.AckPolicy = js_AckExplicit;
    jsConsumerInfo* ci = nullptr;
    REQUIRE(js_AddConsumer(&ci, client->js(), "WEB_DLQ", &cc, nullptr, nullptr) == NATS_OK);
    jsConsumerInfo_Destroy(ci);
  }
  std::vector<common::OutMessage> msgs;
  for (int i = 1; i <= 300; ++i) {
    Seed s;
    s.key = i % 3 ? "site-g" : "site-h";
    s.visitor = "v";
    s.reason = i % 2 ? "umami failed" : "no usable visitor key";
    s.origin_seq = static_cast<uint64_t>(i);
    s.msg_id = "ev-" + std::to_string(i);
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(*client, msgs);
  auto r = Ctl(stack, "dlq list --queue web --summary --json");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["count"] == 300);
  r = Ctl(stack, "dlq list --queue web --key site-h --json");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["messages"].size() == 100);
  for (size_t i = 0; i < 100; ++i) CHECK(doc["messages"][i]["seq"] == 3 * (i + 1));
  r = Ctl(stack, "dlq replay --queue web --key site-h --reason umami");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("replayed: 50"));
  r = Ctl(stack, "dlq purge --queue web --key site-g --from 100 --yes");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("erased: 134"));
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 300 - 50 - 134);
}
