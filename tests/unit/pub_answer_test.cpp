// ReadPubAnswer: JetStream's answers to a publish, whole, refused, cut short and malformed.
#include <catch2/catch.hpp>
#include <string>

#include "common/pub_answer.h"

using common::PubAnswer;
using common::ReadPubAnswer;

TEST_CASE("a stored publish's answer gives its sequence", "[unit][pub_answer]") {
  auto a = ReadPubAnswer(R"({"stream":"KV_replayer_stored","seq":4242})");
  CHECK(a.kind == PubAnswer::Kind::kStored);
  CHECK(a.seq == 4242);
  CHECK_FALSE(a.duplicate);
  auto d = ReadPubAnswer(R"({"stream":"WEB_DLQ","domain":"hub","seq":7,"duplicate":true})");
  CHECK(d.kind == PubAnswer::Kind::kStored);
  CHECK(d.duplicate);
}

TEST_CASE("a refused publish's answer gives the server's code and words", "[unit][pub_answer]") {
  auto a = ReadPubAnswer(
      R"({"error":{"code":400,"err_code":10054,"description":"message size exceeds maximum allowed"}})");
  CHECK(a.kind == PubAnswer::Kind::kRefused);
  CHECK(a.err_code == 10054);
  CHECK(a.description == "message size exceeds maximum allowed");
  // An error beside a sequence is still a refusal.
  auto b = ReadPubAnswer(R"({"seq":3,"error":{"code":503}})");
  CHECK(b.kind == PubAnswer::Kind::kRefused);
  CHECK(b.err_code == 0);
  CHECK(b.description == "refused without a description");
}

TEST_CASE("an answer cut short or of another shape is unreadable, never stored",
          "[unit][pub_answer]") {
  const std::string whole = R"({"stream":"KV_replayer_stored","seq":4242})";
  // Every prefix of a good answer: not one of them may read as stored.
  for (size_t n = 0; n < whole.size(); ++n) {
    INFO("the first " << n << " bytes");
    CHECK(ReadPubAnswer(whole.substr(0, n)).kind == PubAnswer::Kind::kUnreadable);
  }
  for (const char* body :
       {"", "null", "[]", "42", R"("seq")", R"({"stream":"S"})", R"({"seq":"12"})", R"({"seq":-1})",
        R"({"error":"x"})", "<html>502 Bad Gateway</html>"}) {
    INFO(body);
    auto a = ReadPubAnswer(body);
    CHECK(a.kind == PubAnswer::Kind::kUnreadable);
    CHECK_FALSE(a.description.empty());
  }
}
