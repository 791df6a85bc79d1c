// js_error: JetStream refusals judged by their numbers, a busy server's 429 among them.
#include <catch2/catch.hpp>

#include "common/js_error.h"
#include "common/pub_answer.h"

namespace je = common::js_error;
using common::ErrorKind;

TEST_CASE("a 429 is a busy server, by status or by err_code", "[unit][js_error]") {
  CHECK(je::IsTooManyRequests(429, 10167));
  CHECK(je::IsTooManyRequests(0, 10167));  // nats.c gives err_code only
  CHECK(je::IsTooManyRequests(429, 0));    // a 429 with a number this release does not know
  CHECK(je::IsTooManyRequests(0, 10210));
  CHECK(je::IsTooManyRequests(0, 10211));
  CHECK_FALSE(je::IsTooManyRequests(400, 10054));
  CHECK_FALSE(je::IsTooManyRequests(503, 10077));
  CHECK_FALSE(je::IsTooManyRequests(0, 0));
  CHECK(je::KindOf(429, 10167) == ErrorKind::kRetryable);
  CHECK(je::KindOf(0, 10167) == ErrorKind::kRetryable);
}

TEST_CASE("other refusals keep their kinds", "[unit][js_error]") {
  CHECK(je::KindOf(503, 10008) == ErrorKind::kRetryable);  // an election
  CHECK(je::KindOf(404, 10059) == ErrorKind::kNotFound);
  CHECK(je::KindOf(404, 10014) == ErrorKind::kNotFound);
  CHECK(je::KindOf(404, 10037) == ErrorKind::kNotFound);
  CHECK(je::KindOf(400, 10054) == ErrorKind::kPermanent);  // too large: retrying cannot help
  CHECK(je::KindOf(503, 10077) == ErrorKind::kPermanent);
  CHECK(je::KindOf(0, 0) == ErrorKind::kPermanent);
}

TEST_CASE("the 429 answer nats-server 2.11+ sends to a publish is read as busy",
          "[unit][js_error]") {
  // server/stream.go queueInbound: the pub ack with the stream's name and the error.
  auto a = common::ReadPubAnswer(
      R"({"stream":"WEB_EVENTS","seq":0,"error":{"code":429,"err_code":10167,"description":"too many requests"}})");
  CHECK(a.kind == common::PubAnswer::Kind::kRefused);
  CHECK(a.status == 429);
  CHECK(a.err_code == 10167);
  CHECK(je::IsTooManyRequests(a.status, a.err_code));
  // Out-of-range numbers are not taken.
  auto b = common::ReadPubAnswer(R"({"error":{"code":-429,"err_code":99999999999}})");
  CHECK(b.status == 0);
  CHECK(b.err_code == 0);
}
