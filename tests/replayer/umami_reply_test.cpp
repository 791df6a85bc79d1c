#include "replayer/umami_reply.h"

#include <catch2/catch.hpp>

using namespace replayer;

TEST_CASE("send replies: 2.10 token text, v3 JSON, bots", "[umami]") {
  auto r = ParseSendReply("eyJhbGciOi.x.y");
  CHECK(r.kind == SendReply::Kind::kStored);
  CHECK(r.cache_token == "eyJhbGciOi.x.y");
  r = ParseSendReply(R"({"cache":"tok","sessionId":"s","visitId":"v"})");
  CHECK(r.kind == SendReply::Kind::kStored);
  CHECK(r.cache_token == "tok");
  CHECK(ParseSendReply("{}").kind == SendReply::Kind::kDroppedBot);
  CHECK(ParseSendReply(R"({"beep":"boop"})").kind == SendReply::Kind::kDroppedBot);
  CHECK(ParseSendReply("").cache_token.empty());
  CHECK(ParseSendReply("").kind == SendReply::Kind::kStored);
}

TEST_CASE("the probe passes only on website-not-found", "[umami]") {
  CHECK(ProbePassed(403, "Website not found: 00000000-0000-4000-8000-000000000000."));
  CHECK(ProbePassed(400, "Website not found."));
  CHECK_FALSE(ProbePassed(400, "Can't reach database server at `127.0.0.1:5432`"));
  CHECK_FALSE(ProbePassed(500, "Website not found"));
  CHECK_FALSE(ProbePassed(200, "tok"));
  CHECK_FALSE(ProbePassed(0, ""));
  CHECK(HeartbeatPassed(200));
  CHECK_FALSE(HeartbeatPassed(503));
}

TEST_CASE("answer excerpts are one short line", "[umami]") {
  CHECK(AnswerExcerpt(500, "a\nb", "") == "HTTP 500: a b");
  CHECK(AnswerExcerpt(0, "", "Connection refused") == "no answer: Connection refused");
  CHECK(AnswerExcerpt(400, std::string(1000, 'x'), "").size() == 210);
}
