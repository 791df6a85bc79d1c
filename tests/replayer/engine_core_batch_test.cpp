// The engine core's batches (POST /api/batch, Umami 3.x), input by input: which events ride
// together, and what each element's answer means for its event.
#include <catch2/catch.hpp>

#include "replayer/engine_core.h"
#include "replayer/visit_state.h"
#include "tests/replayer/core_driver.h"

using namespace core_test;

namespace {

constexpr int64_t kStart = 1'764'000'000'000;  // the visit under way began here

CoreConfig Batching(int batch_max = 20) {
  CoreConfig c = Driver::Config();
  c.batch_max = batch_max;
  return c;
}

// The visitor's visit state: kToken's visit, begun at kStart.
std::string Visit() { return VisitStates::Encode({kToken, kStart}); }

std::string BatchReply(size_t size, const std::string& details = "",
                       const std::string& cache = "") {
  int errors = 0;
  for (size_t i = 0; i < details.size(); ++i) errors += details.compare(i, 8, "\"index\":") == 0;
  return R"({"size":)" + std::to_string(size) + R"(,"processed":)" +
         std::to_string(static_cast<int>(size) - errors) + R"(,"errors":)" +
         std::to_string(errors) + R"(,"details":[)" + details + R"(],"cache":)" +
         (cache.empty() ? std::string("null") : "\"" + cache + "\"") + "}";
}

std::string Failed(size_t index, int status) {
  return R"({"index":)" + std::to_string(index) +
         R"(,"response":{"error":{"message":"x","status":)" + std::to_string(status) + "}}}";
}

// Events of visitor v1 at kStart + minutes[i], seqs 1, 2, ...
std::vector<Delivery> Events(Driver& d, std::vector<int> minutes, const std::string& agent = "") {
  std::vector<Delivery> out;
  for (size_t i = 0; i < minutes.size(); ++i) {
    std::string body = Body("e" + std::to_string(i + 1), "v1", kStart + minutes[i] * 60'000);
    if (!agent.empty() && i + 1 == minutes.size()) {
      body.replace(body.find("Mozilla/5.0"), 11, agent);
    }
    out.push_back(d.Msg(i + 1, body));
  }
  return out;
}

// Fetches visitor v1's events at kStart + minutes, answers its visit lookup with kToken's visit
// begun at kStart, and returns the one send that follows.
SendCmd FirstSend(Driver& d, std::vector<int> minutes, const std::string& agent = "") {
  d.Fetched(Events(d, std::move(minutes), agent));
  d.Visit(Visit());
  return d.One<SendCmd>();
}

// Publishes every guard record asked for; returns the seqs acked as stored.
std::vector<Ref> GuardAll(Driver& d) {
  std::vector<Ref> acked;
  for (const auto& g : d.All<PutGuardCmd>()) d.core.OnPublished(g.pub_id, {}, d.now);
  d.Take();
  for (const auto& a : d.All<AckCmd>()) {
    if (a.why == AckWhy::kStored) acked.push_back(a.ref);
  }
  return acked;
}

}  // namespace

TEST_CASE("batch: one visitor's events in the visit go in one /api/batch, each then guarded",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  auto send = FirstSend(d, {1, 2, 3});
  CHECK(send.batch);
  CHECK(send.batch_seqs == std::vector<uint64_t>{1, 2, 3});
  CHECK(send.body.front() == '[');
  CHECK(Driver::Header(send, "x-umami-cache") == kToken);
  CHECK(d.core.sends_in_flight() == 1);
  CHECK(d.core.SelfCheck().empty());
  d.Answer(send, 200, BatchReply(3, "", kToken2));
  CHECK(d.All<PutGuardCmd>().size() == 3);
  CHECK(GuardAll(d).size() == 3);
  CHECK(d.core.held() == 0);
  CHECK(d.core.SelfCheck().empty());
}

TEST_CASE("batch: a batch ends where the visit ends, and where the client differs",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  // Minute 40 is past the visit's 30 minutes: it begins a visit of its own, without the token.
  auto send = FirstSend(d, {5, 10, 40});
  CHECK(send.batch_seqs == std::vector<uint64_t>{1, 2});
  d.Answer(send, 200, BatchReply(2, "", kToken));
  auto third = d.One<SendCmd>();  // the visitor's next event goes once the last is stored
  CHECK_FALSE(third.batch);
  CHECK(third.stream_seq == 3);
  CHECK(Driver::Header(third, "x-umami-cache").empty());

  Driver e(Batching());
  e.Up();
  e.Fetched(Events(e, {1, 2, 3}, "curl/8.0"));
  e.Visit(Visit());
  CHECK(e.One<SendCmd>().batch_seqs == std::vector<uint64_t>{1, 2});
}

TEST_CASE("batch: without the visit's token the first event goes alone, the rest with its token",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  d.Fetched(Events(d, {1, 2, 3}));
  d.Visit();  // no visit yet
  auto first = d.One<SendCmd>();
  CHECK_FALSE(first.batch);
  d.Answer(first, 200, std::string(R"({"cache":")") + kToken + R"(","sessionId":"s"})");
  auto rest = d.One<SendCmd>();
  CHECK(rest.batch_seqs == std::vector<uint64_t>{2, 3});
  CHECK(Driver::Header(rest, "x-umami-cache") == kToken);
}

TEST_CASE("batch: no /api/batch (404) sends the same events one by one, nothing charged",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  auto batch = FirstSend(d, {1, 2});
  d.Answer(batch, 404, "<html>This page could not be found.</html>");
  CHECK(d.All<CheckCmd>().empty());  // not a failure: nothing to check
  CHECK(d.Noted(Note::Kind::kBatchRoute));
  auto single = d.One<SendCmd>();
  CHECK_FALSE(single.batch);
  CHECK(single.stream_seq == 1);
  d.Answer(single, 200, kToken);
  auto second = d.One<SendCmd>();
  CHECK_FALSE(second.batch);
  CHECK(second.stream_seq == 2);
  CHECK(GuardAll(d).size() == 1);
  d.Answer(second, 200, kToken);
  CHECK(GuardAll(d).size() == 1);
  CHECK(d.core.held() == 0);

  // Ten minutes later the process is asked again (it may have been upgraded).
  d.Later(std::chrono::minutes(11));
  std::vector<Delivery> more;
  for (uint64_t s = 3; s <= 4; ++s) {
    more.push_back(d.Msg(s, Body("e" + std::to_string(s), "v1", kStart + 60'000 * int64_t(s))));
  }
  d.Fetched(std::move(more));
  d.Visit(Visit());  // forgotten here after 10 idle minutes: read again
  CHECK(d.One<SendCmd>().batch);
}

TEST_CASE(
    "batch: an element's failure is its event's: those before are stored, those after "
    "stored out of order",
    "[core][batch]") {
  Driver d(Batching());
  d.Up();
  auto batch = FirstSend(d, {1, 2, 3, 4});
  REQUIRE(batch.batch_seqs.size() == 4);
  // Elements 1 and 2 fail; 0 and 3 are stored.
  d.Answer(batch, 200, BatchReply(4, Failed(1, 400) + "," + Failed(2, 500), kToken));
  auto guards = d.All<PutGuardCmd>();
  REQUIRE(guards.size() == 2);     // e1 and e4
  auto check = d.One<CheckCmd>();  // for e2's failure, judged as a send's
  CHECK(d.core.SelfCheck().empty());
  GuardAll(d);
  d.Pass(check.check_id);
  // One counted failure: the 64 cap waits for a second.
  CHECK_FALSE(d.core.LaneFailing(std::string(kSite) + "\nv1"));
  // e2 is retried alone after its backoff; e3 waits behind it, uncharged.
  d.Later(std::chrono::seconds(5));
  auto retry = d.One<SendCmd>();
  CHECK_FALSE(retry.batch);
  CHECK(retry.stream_seq == 2);
  d.Answer(retry, 200, kToken);
  auto last = d.One<SendCmd>();
  CHECK(last.stream_seq == 3);
  GuardAll(d);
  d.Answer(last, 200, kToken);
  GuardAll(d);
  CHECK(d.core.held() == 0);
  CHECK(d.core.SelfCheck().empty());
}

TEST_CASE("batch: a batch failed as a whole is the head's failure, the rest wait uncharged",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  auto batch = FirstSend(d, {1, 2, 3});
  d.Answer(batch, 0);  // timeout
  auto check = d.One<CheckCmd>();
  d.Fail(check.check_id);  // an outage: nothing charged
  CHECK(d.Noted(Note::Kind::kOutageRetried));
  // Up again: the head (never charged) takes the others along again.
  d.Later(std::chrono::seconds(3));
  d.Pass(d.One<CheckCmd>().check_id);
  auto again = d.One<SendCmd>();
  CHECK(again.batch_seqs == std::vector<uint64_t>{1, 2, 3});
  d.Answer(again, 500, "Internal Server Error");
  d.Pass(d.One<CheckCmd>().check_id);  // counted: the head's first failure
  d.Later(std::chrono::seconds(5));
  auto alone = d.One<SendCmd>();  // a failed head goes alone
  CHECK_FALSE(alone.batch);
  CHECK(alone.stream_seq == 1);
  d.Answer(alone, 200, kToken);
  CHECK(d.One<SendCmd>().batch_seqs == std::vector<uint64_t>{2, 3});
}

TEST_CASE("batch: a bot's batch stores nothing (no token back): dropped, no guard",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  auto batch = FirstSend(d, {1, 2});
  d.Answer(batch, 200, BatchReply(2));
  CHECK(d.All<PutGuardCmd>().empty());
  auto acks = d.All<AckCmd>();
  REQUIRE(acks.size() == 2);
  for (const auto& a : acks) CHECK(a.why == AckWhy::kDroppedByUmami);
}

TEST_CASE("batch: a 2xx that is no batch reply: the events go again one by one", "[core][batch]") {
  Driver d(Batching());
  d.Up();
  auto batch = FirstSend(d, {1, 2});
  d.Answer(batch, 200, "<html>proxy</html>");
  CHECK(d.All<PutGuardCmd>().empty());
  auto single = d.One<SendCmd>();
  CHECK_FALSE(single.batch);
  CHECK(single.stream_seq == 1);
  // A reply for another number of elements is no batch reply either.
  Driver e(Batching());
  e.Up();
  e.Fetched(Events(e, {1, 2}));
  e.Visit(Visit());
  e.Answer(e.One<SendCmd>(), 200, BatchReply(3, "", kToken));
  CHECK(e.All<PutGuardCmd>().empty());
  CHECK_FALSE(e.One<SendCmd>().batch);
}

TEST_CASE("batch: REPLAYER_BATCH_MAX bounds a batch and 0 sends one by one", "[core][batch]") {
  Driver d(Batching(2));
  d.Up();
  d.Fetched(Events(d, {1, 2, 3}));
  d.Visit(Visit());
  CHECK(d.One<SendCmd>().batch_seqs == std::vector<uint64_t>{1, 2});
  Driver e(Batching(0));
  e.Up();
  e.Fetched(Events(e, {1, 2, 3}));
  e.Visit(Visit());
  CHECK_FALSE(e.One<SendCmd>().batch);
}

TEST_CASE("batch: a stop hands a batch's events back with the send timeout's delay",
          "[core][batch]") {
  Driver d(Batching());
  d.Up();
  d.Fetched(Events(d, {1, 2}));
  d.Visit(Visit());
  (void)d.One<SendCmd>();
  d.core.OnStop(d.now);
  d.Take();
  d.Later(std::chrono::seconds(16));
  auto naks = d.All<NakCmd>();
  REQUIRE(naks.size() == 2);
  for (const auto& n : naks) CHECK(n.delay == milliseconds(30'000));
  CHECK(d.core.Done());
}

// replayer_batches_sent_total counts the kSendDone notes of status 1: batches Umami answered as
// batches. A 404/405 (no such route), a 2xx of another shape and a failure are not.
TEST_CASE("batch: only a batch reply is a batch answered as one (the batch counters)",
          "[core][batch]") {
  auto answered_as_batch = [](int status, const std::string& body) {
    Driver d(Batching());
    d.Up();
    auto batch = FirstSend(d, {1, 2});
    REQUIRE(batch.batch);
    d.Answer(batch, status, body);
    int done = 0, as_batch = 0;
    for (const auto& n : d.out.notes) {
      if (n.kind != Note::Kind::kSendDone) continue;
      ++done;
      CHECK(n.count == 2);
      as_batch += n.status == 1 ? 1 : 0;
    }
    REQUIRE(done == 1);
    return as_batch == 1;
  };
  CHECK(answered_as_batch(200, BatchReply(2, "", kToken2)));
  CHECK(answered_as_batch(200, BatchReply(2, Failed(1, 400), kToken2)));
  CHECK_FALSE(answered_as_batch(404, "<html>This page could not be found.</html>"));
  CHECK_FALSE(answered_as_batch(405, ""));
  CHECK_FALSE(answered_as_batch(200, "<html>proxy</html>"));
  CHECK_FALSE(answered_as_batch(500, "boom"));
  CHECK_FALSE(answered_as_batch(0, ""));
}
