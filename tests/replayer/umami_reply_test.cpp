#include "replayer/umami_reply.h"

#include <catch2/catch.hpp>

using namespace replayer;

TEST_CASE("send replies: 2.10 token text, v3 JSON, bots", "[umami]") {
  auto r = ParseSendReply("eyJhbGciOi.x.y");
  CHECK(r.kind == SendReply::Kind::kStored);
  CHECK(r.cache_token == "eyJhbGciOi.x.y");
  r = ParseSendReply(R"({"cache":"eyJh.eyJ3.c2ln","sessionId":"s","visitId":"v"})");
  CHECK(r.kind == SendReply::Kind::kStored);
  CHECK(r.cache_token == "eyJh.eyJ3.c2ln");
  CHECK(r.token_problem.empty());
  CHECK(ParseSendReply("{}").kind == SendReply::Kind::kDroppedBot);
  CHECK(ParseSendReply(R"({"beep":"boop"})").kind == SendReply::Kind::kDroppedBot);
  CHECK(ParseSendReply("").cache_token.empty());
  CHECK(ParseSendReply("").kind == SendReply::Kind::kStored);
}

TEST_CASE("a reply is a token only in a JWT's shape and size", "[umami]") {
  // What a proxy, a misrouted request or a broken Umami may answer with a 2xx.
  const std::string page = "<html><body>" + std::string(70'000, 'x') + "</body></html>";
  for (const std::string& body :
       {page, std::string("OK"), std::string("a.b"), std::string("a..c"), std::string(".b.c"),
        std::string("a.b.c.d"), std::string("a.b c.d"), std::string("tok\r\nX-Evil: 1"),
        std::string(R"({"cache":"tok"})"), std::string(R"({"cache":")") + page + "\"}",
        std::string(5000, 'a') + ".b.c"}) {
    auto r = ParseSendReply(body);
    INFO(body.substr(0, 40));
    CHECK(r.kind == SendReply::Kind::kStored);
    CHECK(r.cache_token.empty());
    CHECK_FALSE(r.token_problem.empty());
    // The problem names sizes, never the reply's bytes.
    CHECK(r.token_problem.find("xxxx") == std::string::npos);
  }
  CHECK(ParseSendReply("{not json").cache_token.empty());
  CHECK_FALSE(ParseSendReply("{not json").token_problem.empty());
  // Both versions' real tokens: a JWT with an empty signature is still one (alg none).
  CHECK(UsableToken("eyJhbGciOiJIUzI1NiJ9.eyJzZXNzaW9uSWQiOiJ4In0.sig_-09"));
  CHECK(UsableToken("eyJh.eyJ3."));
  CHECK_FALSE(UsableToken(std::string(kMaxTokenBytes - 4, 'a') + ".b.cd"));
  CHECK(UsableToken(std::string(kMaxTokenBytes - 4, 'a') + ".b.c"));
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

TEST_CASE("a batch reply (Umami 3.1's /api/batch) names each failed element", "[umami][batch]") {
  // As 3.1.0 answers three elements, the second an event name over 50 characters.
  auto r = ParseBatchReply(
      R"({"size":3,"processed":2,"errors":1,"details":[{"index":1,"response":{"error":)"
      R"({"message":"Bad request","code":"bad-request","status":400,"properties":{}}}}],)"
      R"("cache":"eyJh.eyJ2.c2ln"})",
      3);
  REQUIRE(r.readable);
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].index == 1);
  CHECK(r.failed[0].status == 400);
  CHECK(r.failed[0].excerpt.rfind("HTTP 400 in a batch: {\"error\":", 0) == 0);
  CHECK(r.stored_any);
  CHECK(r.cache_token == "eyJh.eyJ2.c2ln");
  // Every element processed, nothing stored (a bot): cache null.
  auto bot = ParseBatchReply(R"({"size":2,"processed":2,"errors":0,"details":[],"cache":null})", 2);
  CHECK(bot.readable);
  CHECK_FALSE(bot.stored_any);
  // A server error without a status in it counts as 500; details come back in index order.
  auto two = ParseBatchReply(
      R"({"size":3,"errors":2,"details":[{"index":2,"response":{"x":1}},)"
      R"({"index":0,"response":{"error":{"status":500,"message":"Server error"}}}],"cache":null})",
      3);
  REQUIRE(two.readable);
  REQUIRE(two.failed.size() == 2);
  CHECK(two.failed[0].index == 0);
  CHECK(two.failed[1].index == 2);
  CHECK(two.failed[1].status == 500);
  // Something in the token's place that is not one: stored, the token ignored.
  auto odd = ParseBatchReply(
      R"({"size":1,"details":[],"cache":")" + std::string(70'000, 'x') + R"("})", 1);
  CHECK(odd.readable);
  CHECK(odd.stored_any);
  CHECK(odd.cache_token.empty());
  CHECK(odd.token_problem.find("xxxx") == std::string::npos);
}

TEST_CASE("what is no batch reply", "[umami][batch]") {
  CHECK_FALSE(ParseBatchReply("<html>proxy</html>", 2).readable);
  CHECK_FALSE(ParseBatchReply("", 2).readable);
  CHECK_FALSE(ParseBatchReply("[]", 2).readable);
  CHECK_FALSE(ParseBatchReply(R"({"size":3,"details":[],"cache":null})", 2).readable);
  CHECK_FALSE(ParseBatchReply(R"({"details":[],"cache":null})", 2).readable);
  CHECK_FALSE(ParseBatchReply(R"({"size":2,"details":[{"index":2,"response":{}}],"cache":null})", 2)
                  .readable);
  CHECK_FALSE(ParseBatchReply(R"({"size":2,"details":[{"index":1},{"index":1}],"cache":null})", 2)
                  .readable);
  CHECK_FALSE(
      ParseBatchReply(R"({"size":2,"errors":2,"details":[{"index":1}],"cache":null})", 2).readable);
  // Truncated: a cut reply is unreadable, never half-read.
  std::string whole = R"({"size":2,"processed":2,"errors":0,"details":[],"cache":"a.b.c"})";
  for (size_t n = 0; n < whole.size(); ++n) {
    CHECK_FALSE(ParseBatchReply(whole.substr(0, n), 2).readable);
  }
  CHECK(ParseBatchReply(whole, 2).readable);
  CHECK(BatchRouteMissing(404));
  CHECK_FALSE(BatchRouteMissing(400));
}

TEST_CASE("what an answer is about: the site, the event, or maybe the database", "[umami]") {
  using replayer::AnswerAbout;
  using replayer::ClassifyAnswer;
  // The website: 2.10 and v3, and inside a batch element's excerpt.
  CHECK(ClassifyAnswer(403, "Website not found: 5e5e5e5e-0000-4000-8000-00000000d001.") ==
        AnswerAbout::kSite);
  CHECK(
      ClassifyAnswer(
          400, R"({"error":{"message":"Website not found.","code":"bad-request","status":400}})") ==
      AnswerAbout::kSite);
  CHECK(ClassifyAnswer(400, R"(HTTP 400 in a batch: {"error":{"message":"Website not found."}})") ==
        AnswerAbout::kSite);
  // The event's validation: yup (2.10) and zod (v3).
  CHECK(ClassifyAnswer(400, "payload.name must be at most 50 characters") == AnswerAbout::kEvent);
  CHECK(ClassifyAnswer(400, "url must be at most 500 characters") == AnswerAbout::kEvent);
  CHECK(ClassifyAnswer(400, "payload.website is a required field") == AnswerAbout::kEvent);
  CHECK(ClassifyAnswer(
            400, R"({"error":{"message":"Too big: expected string to have <=50 characters"}})") ==
        AnswerAbout::kEvent);
  // What may be the database: its errors in a 400 (2.10), any 5xx, no answer, a bare 400.
  CHECK(ClassifyAnswer(400, "cannot execute INSERT in a read-only transaction") ==
        AnswerAbout::kOther);
  CHECK(ClassifyAnswer(400, "Can't reach database server at `db`:`5432`") == AnswerAbout::kOther);
  CHECK(ClassifyAnswer(400, "Invalid `prisma.session.create()` invocation: timeout") ==
        AnswerAbout::kOther);
  CHECK(ClassifyAnswer(500, "payload.name must be at most 50 characters") == AnswerAbout::kOther);
  CHECK(ClassifyAnswer(500, "Website not found.") == AnswerAbout::kOther);
  CHECK(ClassifyAnswer(400, "Bad Request") == AnswerAbout::kOther);
  CHECK(ClassifyAnswer(0, "") == AnswerAbout::kOther);
}
