// platformctl queue move's decisions (platformctl/queue_move.h): the request's checks, who is
// recorded, and the dead letter it builds from a held message.
#include <catch2/catch.hpp>

#include "common/dead_letter.h"
#include "platformctl/queue_move.h"

namespace q = platformctl::queue;

TEST_CASE("queue move requires a sequence and one line of why", "[queue]") {
  q::MoveRequest r;
  r.seq = 7;
  r.why = "crashes the parser; see incident 42";
  CHECK(q::CheckRequest(r).ok());
  r.seq = 0;
  CHECK_FALSE(q::CheckRequest(r).ok());
  r.seq = 7;
  r.why = "";
  CHECK(q::CheckRequest(r).error().message == "--why: say why the message is moved");
  r.why = "two\nlines";
  CHECK_FALSE(q::CheckRequest(r).ok());
  r.why = std::string(q::kMaxWhyBytes + 1, 'w');
  CHECK_FALSE(q::CheckRequest(r).ok());
}

TEST_CASE("queue move records who moved the message, printable", "[queue]") {
  CHECK(q::Operator("platformctl", "alice", "core-1") == "NATS user platformctl, alice@core-1");
  CHECK(q::Operator("", "", "core-1") == "NATS user unknown, unknown@core-1");
  CHECK(q::Operator("u\x1b[2J", "a", "h") == "NATS user u?[2J, a@h");
}

TEST_CASE("queue move builds the dead letter the services would, with the operator's reason",
          "[queue]") {
  namespace dl = common::dead_letter;
  q::MoveRequest r;
  r.seq = 12;
  r.why = "stuck at the head of the queue";
  r.operator_ = "NATS user platformctl, alice@core-1";
  platformctl::nats_dlq::StoredMessage m;
  m.seq = 12;
  m.subject = "web.events.site-1";
  m.headers = {{"Nats-Msg-Id", "ev-12"}, {"Content-Type", "application/json"}};
  m.data = R"({"id":"ev-12"})";
  const auto out = q::PlanMove(r, m, "WEB_EVENTS", 1'765'000'000'000'000'000);
  CHECK(out.subject == "dlq.web.site-1");
  CHECK(out.expect_stream == "WEB_DLQ");
  CHECK(out.msg_id == "dlq.WEB_EVENTS.12");  // a second try stores no second copy
  CHECK(out.data == m.data);
  auto header = [&](const std::string& k) {
    for (const auto& [hk, hv] : out.headers) {
      if (hk == k) return hv;
    }
    return std::string("(absent)");
  };
  CHECK(header(dl::kReason) == q::kMovedReason);
  CHECK(header(dl::kDetail) ==
        "by NATS user platformctl, alice@core-1 at 2025-12-06T05:46:40.000Z: stuck at the head of "
        "the queue");
  CHECK(header(dl::kOrigMsgId) == "ev-12");
  CHECK(header("Content-Type") == "application/json");
  CHECK(header(dl::kStreamSeq) == "12");
}
