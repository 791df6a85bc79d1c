// common/dead_letter: the DLQ copy's headers are bounded, so the copy of any message a
// work-queue stream accepted (max_msg_size = max payload - kHeaderRoom) fits the max payload.
#include "common/dead_letter.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace dl = common::dead_letter;

namespace {}  // namespace

TEST_CASE("dead letter: sizes are counted as nats-server counts them", "[dlq]") {
  common::OutMessage m;
  m.data = "12345";
  CHECK(dl::PublishedSize(m) == 5);  // no headers: a plain PUB
  m.headers = {{"A", "b"}};
  // "NATS/1.0\r\n" "A: b\r\n" "\r\n" + payload
  CHECK(dl::PublishedSize(m) == 10 + 6 + 2 + 5);
  m.msg_id = "id";
  m.expect_stream = "S";
  CHECK(dl::PublishedSize(m) == 10 + 6 + 17 + 25 + 2 + 5);
  CHECK(dl::ReceivedSize({{"A", "b"}}, 5) == 23);
  CHECK(dl::ReceivedSize({}, 5) == 5);
}

TEST_CASE("dead letter: every header Build adds is bounded, the growth by kHeaderRoom", "[dlq]") {
  // The worst an origin can do: no headers of its own (the copy pays the framing), the longest
  // sequence, and reason, detail, subject and stream far past their bounds.
  dl::Origin o;
  o.subject = "web.events." + std::string(5000, 's');
  o.stream = std::string(300, 'W');
  o.stream_seq = std::numeric_limits<uint64_t>::max();
  o.payload = std::string(1000, 'p');
  const std::string reason(10'000, 'r'), detail(10'000, 'd');
  auto m = dl::Build(o, reason, detail);
  CHECK(common::FindHeader(m.headers, dl::kReason)->size() == dl::kMaxReasonBytes);
  CHECK(common::FindHeader(m.headers, dl::kDetail)->size() == dl::kMaxDetailBytes);
  CHECK(common::FindHeader(m.headers, dl::kStream)->size() == dl::kMaxStreamBytes);
  auto subject = *common::FindHeader(m.headers, dl::kSubject);
  CHECK(subject.size() == dl::kMaxSubjectBytes);
  CHECK(subject.substr(subject.size() - 12) == dl::kTruncatedMark);
  CHECK(m.msg_id.size() == 4 + dl::kMaxStreamBytes + 1 + 20);
  const int64_t growth = dl::PublishedSize(m) - dl::ReceivedSize(o.headers, o.payload.size());
  INFO("growth " << growth << ", bound " << dl::MaxGrowth());
  CHECK(growth <= dl::MaxGrowth());
  CHECK(dl::MaxGrowth() <= dl::kHeaderRoom);
  // The bound is not loose: this origin pays all of it but the two slacks for copied headers
  // it does not have (the id rename, "K:v" spelled "K: v"). expect_stream is empty here.
  CHECK(growth ==
        dl::MaxGrowth() - 2 - static_cast<int64_t>(dl::kMaxCopiedHeaders) -
            static_cast<int64_t>(std::string("Nats-Expected-Stream: WEB_DLQ\r\n").size()));

  // An origin with an id and many headers: the id is renamed once, at most 16 others are kept.
  dl::Origin h;
  h.subject = "web.events.site";
  h.stream = "WEB_EVENTS";
  h.stream_seq = 42;
  h.payload = "x";
  h.headers = {{"Nats-Msg-Id", "ev-1"},
               {"Nats-Msg-Id", "ev-2"},
               {"Sa-Dlq-Replay", "WEB_DLQ.3"},
               {"Nats-Expected-Stream", "WEB_EVENTS"}};
  for (int i = 0; i < 40; ++i) h.headers.emplace_back("X-" + std::to_string(i), "v");
  auto c = dl::Build(h, "reason", "detail");
  CHECK(common::FindHeader(c.headers, dl::kOrigMsgId) == "ev-1");
  size_t copied = 0;
  for (const auto& [k, v] : c.headers) copied += k.rfind("X-", 0) == 0 ? 1 : 0;
  CHECK(copied == dl::kMaxCopiedHeaders);
  CHECK_FALSE(common::FindHeader(c.headers, "Sa-Dlq-Replay"));
  CHECK(c.expect_stream == "WEB_DLQ");
  CHECK(dl::PublishedSize(c) - dl::ReceivedSize(h.headers, 1) <= dl::MaxGrowth());
}

TEST_CASE("dead letter: cut values stay valid UTF-8 and one line", "[dlq]") {
  dl::Origin o;
  o.subject = "web.events.s";
  o.stream = "WEB_EVENTS";
  o.stream_seq = 1;
  // 255 ASCII bytes, then a 2-byte character straddling the 256-byte bound.
  std::string reason = std::string(255, 'a') + "\xc3\xa9" + "tail";
  auto m = dl::Build(o, reason + "\r\nX-Smuggled: 1", "line\r\nbreak");
  auto cut = *common::FindHeader(m.headers, dl::kReason);
  CHECK(cut == std::string(255, 'a'));
  CHECK(*common::FindHeader(m.headers, dl::kDetail) == "line  break");
  auto short_reason = dl::Build(o, "a\nb");
  CHECK(*common::FindHeader(short_reason.headers, dl::kReason) == "a b");
}
