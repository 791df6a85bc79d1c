// platformctl dlq replay against a real nats-server when an origin subject is no literal
// subject: a cut one (' (truncated)', which holds a space: nats-server would drop the
// connection on its publish) or a wildcard is skipped, kept in the DLQ and reported, and the run
// goes on to the next message, as a plain run and as a redrive task; --to-subject must be one
// literal subject of the origin stream, and a refused one leaves no task behind; a task
// recorded with a refused one is not resumed (nor taken over).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/dead_letter.h"
#include "common/nats_kv.h"
#include "common/topology.h"
#include "platformctl/dlq/task.h"
#include "tests/platformctl/dlq_fixture.h"

using dlqtest::Ctl;
using dlqtest::Seed;
using testsupport::TestStack;

namespace {

constexpr const char* kCut = "web.events.abc (truncated)";

// WEB_DLQ seq 1: site-a; 2: cut origin subject; 3: site-b; 4: wildcard origin subject;
// 5: site-a. Original ids <tag>-<seq>.
void SeedMixed(common::NatsClient& client, const std::string& tag) {
  std::vector<common::OutMessage> msgs;
  const std::vector<std::pair<std::string, std::string>> seeds = {
      {"site-a", ""}, {"abc", kCut}, {"site-b", ""}, {"site-c", "web.events.>"}, {"site-a", ""}};
  uint64_t seq = 0;
  for (const auto& [key, subject] : seeds) {
    Seed s;
    s.key = key;
    s.visitor = "v1";
    s.reason = "umami failed";
    s.origin_seq = ++seq;
    s.msg_id = tag + "-" + std::to_string(seq);
    s.subject_header = subject;
    msgs.push_back(dlqtest::DeadLetter(s));
  }
  dlqtest::PublishAll(client, msgs);
}

std::vector<uint64_t> Seqs(const std::vector<dlqtest::Held>& held) {
  std::vector<uint64_t> out;
  for (const auto& h : held) out.push_back(h.seq);
  return out;
}

}  // namespace

TEST_CASE("dlq replay skips and keeps a cut or wildcard origin subject and goes on",
          "[integration][dlq]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  SeedMixed(*client, "ev");

  auto r = Ctl(stack, "dlq replay --queue web --all --json");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);  // partly done: two kept
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["replayed"] == 3);
  CHECK(doc["skipped"] == 2);
  CHECK(doc["failed"] == 0);
  CHECK(doc["stopped"].is_null());  // the connection held: the run reached its end
  REQUIRE(doc["skipped_reasons"].size() == 2);
  CHECK(doc["skipped_reasons"][0]["why"] ==
        "origin subject is cut (the dead-lettering shortened it; it ends in ' (truncated)'): "
        "'web.events.abc (truncated)'");
  CHECK(doc["skipped_reasons"][0]["seqs"] == std::vector<int>{2});
  CHECK(doc["skipped_reasons"][1]["why"] ==
        "origin subject holds a wildcard ('*' or '>'): 'web.events.>'");
  CHECK(doc["skipped_reasons"][1]["seqs"] == std::vector<int>{4});

  // The three good ones are on WEB_EVENTS, each on its own subject; the two others are kept.
  auto events = dlqtest::ReadAll(*client, "WEB_EVENTS");
  REQUIRE(events.size() == 3);
  CHECK(events[0].msg_id == "ev-1.replay.WEB_DLQ.1");
  CHECK(events[1].subject == "web.events.site-b");
  CHECK(events[2].msg_id == "ev-5.replay.WEB_DLQ.5");
  CHECK(Seqs(dlqtest::ReadAll(*client, "WEB_DLQ")) == std::vector<uint64_t>{2, 4});

  // Run again: the kept ones are reported again, the run still reaches its end.
  auto text = Ctl(stack, "dlq replay --queue web --all");
  INFO(text.out << text.err);
  CHECK(text.rc == 1);
  CHECK_THAT(text.out, Catch::Contains("skipped (kept in WEB_DLQ): 2"));
  CHECK_THAT(text.out, Catch::Contains("1 x origin subject is cut"));
  CHECK_THAT(text.out, Catch::Contains("replay partly done: exit code 1"));
  CHECK_THAT(text.out, !Catch::Contains("stopped early"));
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 2);
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 3);
}

TEST_CASE("a redrive task skips a cut origin subject, counts it and finishes",
          "[integration][dlq][task]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  SeedMixed(*client, "tk");

  auto r = Ctl(stack, "dlq replay --queue web --all --task cut-1");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("1 x origin subject is cut"));
  CHECK_THAT(r.out, Catch::Contains("task cut-1: done, reached seq 5 of 5"));
  auto list = Ctl(stack, "dlq task list --json");
  REQUIRE(list.rc == 0);
  auto t = dlqtest::TaskOf(list.out, "cut-1");
  CHECK(t["state"] == "done");
  CHECK(t["replayed"] == 3);
  CHECK(t["skipped"] == 2);
  CHECK(t["failed"] == 0);
  CHECK(Seqs(dlqtest::ReadAll(*client, "WEB_DLQ")) == std::vector<uint64_t>{2, 4});
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 3);
}

TEST_CASE("dlq replay refuses a --to-subject that is no literal subject of the origin stream",
          "[integration][dlq][task]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  dlqtest::SeedWeb(*client, 5, "ts");

  for (const char* args : {"--to-subject 'web.events.>'", "--to-subject 'web.events.*' --task w",
                           "--to-subject 'web.events.a b' --task w", "--to-subject ''"}) {
    auto r = Ctl(stack, std::string("dlq replay --queue web --all ") + args);
    INFO(args << "\n" << r.out << r.err);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("a replay publishes to one literal subject of WEB_EVENTS"));
  }
  // Outside the origin stream, with --task: refused before the task is recorded, so no task
  // holds WEB_DLQ afterwards.
  auto outside = Ctl(stack, "dlq replay --queue web --all --to-subject web.other.x --task w");
  INFO(outside.out << outside.err);
  CHECK(outside.rc == 2);
  CHECK_THAT(outside.err, Catch::Contains("'web.other.x' is not a subject of WEB_EVENTS"));
  auto list = Ctl(stack, "dlq task list --json");
  REQUIRE(list.rc == 0);
  CHECK(dlqtest::TaskOf(list.out, "w")["state"] == "absent");
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 5);
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 0);

  auto ok = Ctl(stack, "dlq replay --queue web --all --to-subject web.events.quarantine --task w");
  INFO(ok.out << ok.err);
  CHECK(ok.rc == 0);
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 5);
}

TEST_CASE("dlq task resume refuses a recorded --to-subject that is no literal subject",
          "[integration][dlq][task]") {
  TestStack stack({"nats"});
  dlqtest::Init(stack);
  auto client = testsupport::ConnectNats(stack);
  dlqtest::SeedWeb(*client, 5, "rs");
  // A stopped task as an earlier version could have recorded it.
  platformctl::dlq::TaskRecord t;
  t.name = "old-1";
  t.queue = "web";
  t.selection.all = true;
  t.describe = "--all";
  t.to_subject = "web.events.>";
  t.end_seq = 5;
  t.next_seq = 1;
  t.state = platformctl::dlq::TaskState::kStopped;
  t.runner = "gone:1";
  t.started_ms = t.updated_ms = 1;
  auto kv = common::KvBucket::Bind(*client, common::topology::kDlqTasksBucket);
  REQUIRE(kv.ok());
  REQUIRE((*kv)->Put(t.name, platformctl::dlq::EncodeTask(t)).ok());

  auto r = Ctl(stack, "dlq task resume old-1");
  INFO(r.out << r.err);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("task old-1 cannot be resumed: --to-subject 'web.events.>' "
                                    "holds a wildcard"));
  auto list = Ctl(stack, "dlq task list --json");
  REQUIRE(list.rc == 0);
  auto after = dlqtest::TaskOf(list.out, "old-1");
  CHECK(after["state"] == "stopped");  // not taken over
  CHECK(after["runner"] == "gone:1");
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 5);
  CHECK(Ctl(stack, "dlq task cancel old-1").rc == 0);
}
