// ack_subject: both formats of JetStream's ack subject, and what is not one.
#include <catch2/catch.hpp>
#include <string>

#include "common/ack_subject.h"

using common::ack_subject::Parse;

TEST_CASE("a v1 ack subject is read", "[unit][ack_subject]") {
  auto m = Parse("$JS.ACK.WEB_EVENTS.replayer.3.1042.977.1765000000123456789.12");
  REQUIRE(m);
  CHECK(m->format == 1);
  CHECK(m->domain.empty());
  CHECK(m->stream == "WEB_EVENTS");
  CHECK(m->consumer == "replayer");
  CHECK(m->delivered == 3);
  CHECK(m->stream_seq == 1042);
  CHECK(m->consumer_seq == 977);
  CHECK(m->timestamp_ns == 1765000000123456789);
  CHECK(m->pending == 12);
}

TEST_CASE("a v2 ack subject is read, with or without further tokens", "[unit][ack_subject]") {
  // nats-server 2.14+ with js_ack_fc_v2: domain ("_": none) and account hash first.
  auto m = Parse(
      "$JS.ACK._.Fw9BP1mJ4Ld2fT8hXH6cXq.API_METRICS.metricswriter.1.7.7.1765000000000000001.0");
  REQUIRE(m);
  CHECK(m->format == 2);
  CHECK(m->domain == "_");
  CHECK(m->stream == "API_METRICS");
  CHECK(m->consumer == "metricswriter");
  CHECK(m->delivered == 1);
  CHECK(m->stream_seq == 7);
  CHECK(m->consumer_seq == 7);
  CHECK(m->timestamp_ns == 1765000000000000001);
  CHECK(m->pending == 0);
  // ADR-15 allows tokens after the pending count (a random one): ignored.
  auto r = Parse("$JS.ACK.hub.ACCHASH.WEB_DLQ.walk.2.18446744073709551615.5.1.9.a8Xk2");
  REQUIRE(r);
  CHECK(r->format == 2);
  CHECK(r->domain == "hub");
  CHECK(r->stream == "WEB_DLQ");
  CHECK(r->stream_seq == 18446744073709551615ULL);
  CHECK(r->pending == 9);
}

TEST_CASE("what is not an ack subject is refused", "[unit][ack_subject]") {
  for (const char* bad : {
           "", "$JS.ACK.", "_INBOX.abc.def", "$JS.API.CONSUMER.MSG.NEXT.WEB_EVENTS.replayer",
           "$JS.ACK.S.C.1.2.3.4",                            // 6 tokens
           "$JS.ACK.S.C.1.2.3.4.5.6",                        // 8 tokens: neither format
           "$JS.ACK.S.C.1.2.3.4.5.",                         // an empty token
           "$JS.ACK.S..1.2.3.4.5",                           // an empty consumer
           "$JS.ACK.S.C.-1.2.3.4.5",                         // a sign
           "$JS.ACK.S.C.1.2.3.4.5x",                         // not all digits
           "$JS.ACK.S.C.1. 2.3.4.5",                         // a space
           "$JS.ACK.S.C.1.18446744073709551616.3.4.5",       // past uint64
           "$JS.ACK.S.C.1.2.3.9223372036854775808.5",        // a time past int64
           "$JS.ACK.D.H.S.C.1.2.3.4.x",                      // v2 with a bad number
           "$js.ack.S.C.1.2.3.4.5",                          // the prefix is case-sensitive
           "$JS.ACK.D.H.S.C.1.2.3.4.5.6.7.8.9.10.11.12.13",  // past 16 tokens
       }) {
    INFO(bad);
    CHECK_FALSE(Parse(bad));
  }
  CHECK_FALSE(Parse("$JS.ACK." + std::string(100000, 'a')));
  std::string nul = "$JS.ACK.S.C.1.2x.3.4.5";
  nul[15] = '\0';  // a NUL inside a number
  CHECK_FALSE(Parse(nul));
}
