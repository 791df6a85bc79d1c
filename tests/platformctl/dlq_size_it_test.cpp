// platformctl init sizes the work-queue streams so that whatever they accept can be
// dead-lettered (issue 13 §8): max_msg_size = the server's max payload - dead_letter::kHeaderRoom.
// Against a real nats-server (the stack's max_payload is 8 MiB): a message at the limit is
// accepted by WEB_EVENTS and its DLQ copy (with the longest reason and detail Build writes) by
// WEB_DLQ; one byte more is refused at publish; nats-server counts the headers in both limits.
#include <nats/nats.h>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/dead_letter.h"
#include "common/nats_stream.h"
#include "tests/platformctl/dlq_fixture.h"

using dlqtest::Ctl;
using testsupport::TestStack;
namespace dl = common::dead_letter;

namespace {

int64_t MaxMsgSize(common::NatsClient& client, const std::string& stream) {
  jsStreamInfo* si = nullptr;
  REQUIRE(js_GetStreamInfo(&si, client.js(), stream.c_str(), nullptr, nullptr) == NATS_OK);
  int64_t v = si->Config->MaxMsgSize;
  jsStreamInfo_Destroy(si);
  return v;
}

// A web event as the edge publishes it, `total` bytes as nats-server counts them (its header
// block with the Nats-Msg-Id plus the payload).
common::OutMessage EdgeEvent(const std::string& id, int64_t total) {
  common::OutMessage m;
  m.subject = "web.events.site-big";
  m.msg_id = id;
  const int64_t headers = dl::PublishedSize(m);  // the msg id header's block
  const std::string head = R"({"id":")" + id + R"(","website":"site-big","visitor":"v","pad":")";
  const std::string tail = "\"}";
  m.data = head + std::string(total - headers - head.size() - tail.size(), 'x') + tail;
  REQUIRE(dl::PublishedSize(m) == total);
  return m;
}

}  // namespace

TEST_CASE(
    "init leaves room for the DLQ headers: at the limit dead-letterable, one byte more refused",
    "[integration][dlq]") {
  TestStack stack({"nats"});
  auto r = Ctl(stack, "init");
  INFO(r.out << r.err);
  REQUIRE(r.rc == 0);
  auto client = testsupport::ConnectNats(stack);
  const int64_t max_payload = natsConnection_GetMaxPayload(client->conn());
  REQUIRE(max_payload == 8 * 1024 * 1024);  // the stack's max_payload (stack/nats_node.cpp)
  const int64_t limit = max_payload - dl::kHeaderRoom;
  CHECK_THAT(r.out, Catch::Contains("max payload " + std::to_string(max_payload) + " bytes"));
  CHECK(MaxMsgSize(*client, "WEB_EVENTS") == limit);
  CHECK(MaxMsgSize(*client, "API_METRICS") == limit);
  CHECK(MaxMsgSize(*client, "WEB_DLQ") == -1);  // bounded by the max payload only
  CHECK(MaxMsgSize(*client, "API_DLQ") == -1);
  r = Ctl(stack, "init");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("no change"));

  // A stream provisioned before this limit existed is updated in place, and it says so.
  {
    jsStreamInfo* si = nullptr;
    REQUIRE(js_GetStreamInfo(&si, client->js(), "WEB_EVENTS", nullptr, nullptr) == NATS_OK);
    jsStreamConfig c = *si->Config;
    c.MaxMsgSize = -1;
    jsStreamInfo* up = nullptr;
    REQUIRE(js_UpdateStream(&up, client->js(), &c, nullptr, nullptr) == NATS_OK);
    jsStreamInfo_Destroy(up);
    jsStreamInfo_Destroy(si);
  }
  REQUIRE(MaxMsgSize(*client, "WEB_EVENTS") == -1);
  r = Ctl(stack, "init");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("WEB_EVENTS: updated: max message size unlimited -> " +
                                    std::to_string(limit)));
  CHECK_THAT(r.out, Catch::Contains("API_METRICS: unchanged"));
  CHECK(MaxMsgSize(*client, "WEB_EVENTS") == limit);
  r = Ctl(stack, "init");
  CHECK_THAT(r.out, Catch::Contains("no change"));

  // At the limit: WEB_EVENTS takes it.
  auto at_limit = EdgeEvent("ev-at-limit", limit);
  auto ack = common::PublishSync(*client, at_limit);
  INFO((ack ? "" : ack.error().message));
  REQUIRE(ack.ok());
  // The replayer's view of it (a consumer delivery), dead-lettered with the longest reason and
  // detail Build writes: WEB_DLQ takes the copy.
  common::ConsumerSpec spec;
  spec.stream = "WEB_EVENTS";
  spec.durable = "size-test";
  spec.filter_subject = "web.events.*";
  auto consumer = common::PullConsumer::Bind(*client, spec);
  REQUIRE(consumer.ok());
  auto batch = (*consumer)->Fetch(1, common::Millis(5000));
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 1);
  common::Message& got = (*batch)[0];
  dl::Origin origin{std::string(got.subject()), got.stream(), got.stream_seq(),
                    std::string(got.data()), got.AllHeaders()};
  CHECK(dl::ReceivedSize(origin.headers, origin.payload.size()) == limit);
  auto copy = dl::Build(origin, std::string(5000, 'r'), std::string(5000, 'd'));
  const int64_t copy_size = dl::PublishedSize(copy);
  WARN("origin at the limit: " << limit << " bytes; its DLQ copy: " << copy_size
                               << " bytes; max payload " << max_payload);
  CHECK(copy_size > limit);
  CHECK(copy_size <= max_payload);
  auto dlq_ack = common::PublishSync(*client, copy);
  INFO((dlq_ack ? "" : dlq_ack.error().message));
  CHECK(dlq_ack.ok());
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 1);

  // One byte more: refused at the door, with JetStream's "message size exceeds maximum".
  auto over = common::PublishSync(*client, EdgeEvent("ev-over-limit", limit + 1));
  REQUIRE_FALSE(over.ok());
  INFO(over.error().message);
  CHECK_THAT(over.error().message, Catch::Contains("10054"));
  // The headers count: a payload of exactly the limit fits alone, not with a Nats-Msg-Id.
  common::OutMessage bare;
  bare.subject = "web.events.site-big";
  bare.data = std::string(limit, 'y');
  CHECK(common::PublishSync(*client, bare).ok());
  bare.msg_id = "ev-hdr";
  CHECK_FALSE(common::PublishSync(*client, bare).ok());
  CHECK(dlqtest::Count(*client, "WEB_EVENTS") == 2);  // at the limit, and the bare one

  // Why the limit is needed: an origin of the full max payload (what WEB_EVENTS took before)
  // has a DLQ copy the server refuses.
  dl::Origin full = origin;
  full.payload.append(max_payload - limit, 'x');
  auto too_big = common::PublishSync(*client, dl::Build(full, "r", "d"));
  REQUIRE_FALSE(too_big.ok());
  INFO(too_big.error().message);
  CHECK(dlqtest::Count(*client, "WEB_DLQ") == 1);
}
