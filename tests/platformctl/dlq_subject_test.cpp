// platformctl/dlq_subject: a replay publishes only to one literal subject of the origin stream.
// A cut, wildcard or space-holding origin subject is skipped and kept (a space splits the
// publish line and nats-server drops the connection); --to-subject is checked the same way.
#include "platformctl/dlq/subject.h"

#include <catch2/catch.hpp>

#include <string>

#include "common/dead_letter.h"
#include "platformctl/dlq/replay.h"
#include "platformctl/dlq/select.h"

using namespace platformctl::dlq;
namespace dl = common::dead_letter;

namespace {

common::Headers SubjectHeaders(const std::string& subject) {
  return {{"Sa-Dlq-Msg-Id", "ev-7"},
          {"Sa-Dlq-Reason", "umami failed"},
          {"Sa-Dlq-Subject", subject},
          {"Sa-Dlq-Stream", "WEB_EVENTS"},
          {"Sa-Dlq-Stream-Seq", "7"}};
}

std::string Why(const std::string& subject) { return NotLiteralSubject(subject).value_or("ok"); }

}  // namespace

TEST_CASE("dlq subject: a literal subject has dotted tokens and nothing else", "[dlq]") {
  CHECK_FALSE(NotLiteralSubject("web.events.site-a"));
  CHECK_FALSE(NotLiteralSubject("a"));
  CHECK_FALSE(NotLiteralSubject("web.events.caf\xc3\xa9"));  // UTF-8, as NATS allows
  CHECK_FALSE(NotLiteralSubject("web.events." + std::string(kMaxReplaySubjectBytes - 11, 'x')));

  CHECK(Why("") == "is empty");
  CHECK_THAT(Why("web.events.abc (truncated)"), Catch::StartsWith("is cut"));
  CHECK(Why("web.events." + std::string(kMaxReplaySubjectBytes - 10, 'x')) ==
        "is longer than 256 bytes");
  for (const char* s : {"web.events.a b", "web.events.a\tb", "web.events.a\rb", "web.events.a\nb",
                        "web.events.a\x01", "web.events.a\x7f", " web.events.a", "web.events.a "}) {
    INFO(QuotedSubject(s));
    CHECK(Why(s) == "holds white space or a control character");
  }
  CHECK(Why(std::string("web.events.a\0b", 14)) == "holds white space or a control character");
  for (const char* s :
       {"web.events.*", "web.events.>", "web.>", "*", "web.events.a*b", "web.events.a>"}) {
    INFO(s);
    CHECK(Why(s) == "holds a wildcard ('*' or '>')");
  }
  for (const char* s : {".web.events", "web.events.", "web..events", "."}) {
    INFO(s);
    CHECK(Why(s) == "has an empty token");
  }
}

TEST_CASE("dlq subject: what the dead-lettering cuts is never literal", "[dlq]") {
  dl::Origin o;
  o.subject = "web.events." + std::string(400, 's');
  o.stream = "WEB_EVENTS";
  o.stream_seq = 9;
  o.payload = "{}";
  auto m = dl::Build(o, "umami failed");
  std::string subject;
  for (const auto& [k, v] : m.headers) {
    if (k == dl::kSubject) subject = v;
  }
  REQUIRE(subject.size() == dl::kMaxSubjectBytes);
  CHECK_THAT(Why(subject), Catch::StartsWith("is cut"));
  // Even when the cut left a short subject (an origin subject of another writer).
  CHECK_THAT(Why(std::string("web.events.abc") + dl::kTruncatedMark), Catch::StartsWith("is cut"));
}

TEST_CASE("dlq subject: a quoted subject shows every byte and drives no terminal", "[dlq]") {
  CHECK(QuotedSubject("web.events.a") == "'web.events.a'");
  CHECK(QuotedSubject("a\tb\rc\nd\x1b[2J\x7f\\") == "'a\\tb\\rc\\nd\\x1b[2J\\x7f\\\\'");
  CHECK(QuotedSubject("caf\xc3\xa9") == "'caf\\xc3\\xa9'");
  std::string shown = QuotedSubject(std::string(300, 'x'));
  CHECK(shown == "'" + std::string(256, 'x') + "' (cut here, 300 bytes in all)");
}

TEST_CASE("dlq subject: a replay skips and keeps a cut, wildcard or space-holding subject",
          "[dlq]") {
  auto q = InfoFor(Queue::kWeb);
  OriginStream origin{"WEB_EVENTS", {"web.events.*"}};
  // "web.events.*" matches each of these as a pattern; the literal check comes first.
  auto cut = PlanReplay(q, 3, SubjectHeaders("web.events.abc (truncated)"), "p", origin);
  CHECK_FALSE(cut.publish);
  CHECK(cut.skip_why ==
        "origin subject is cut (the dead-lettering shortened it; it ends in ' (truncated)'): "
        "'web.events.abc (truncated)'");
  auto wild = PlanReplay(q, 4, SubjectHeaders("web.events.>"), "p", origin);
  CHECK_FALSE(wild.publish);
  CHECK(wild.skip_why == "origin subject holds a wildcard ('*' or '>'): 'web.events.>'");
  auto space = PlanReplay(q, 5, SubjectHeaders("web.events.a\tb"), "p", origin);
  CHECK_FALSE(space.publish);
  CHECK(space.skip_why ==
        "origin subject holds white space or a control character: 'web.events.a\\tb'");
  auto good = PlanReplay(q, 6, SubjectHeaders("web.events.abc"), "p", origin);
  REQUIRE(good.publish);
  CHECK(good.out.subject == "web.events.abc");

  // Counted as skipped in the run's summary, one group per reason; the run is not complete.
  RunSummary s;
  s.Add(3, Outcome::kSkipped, cut.skip_why);
  s.Add(6, Outcome::kReplayed);
  CHECK_FALSE(s.complete());
  REQUIRE(s.skipped().size() == 1);
  CHECK(s.skipped()[0].seqs == std::vector<uint64_t>{3});
}

TEST_CASE("dlq subject: --to-subject is one literal subject of the origin stream", "[dlq]") {
  OriginStream origin{"WEB_EVENTS", {"web.events.*"}};
  CHECK_FALSE(ToSubjectRefusal("web.events.quarantine", "WEB_EVENTS", origin));
  CHECK(ToSubjectRefusal("web.events.>", "WEB_EVENTS", origin) ==
        "--to-subject 'web.events.>' holds a wildcard ('*' or '>'): a replay publishes to one "
        "literal subject of WEB_EVENTS");
  CHECK(ToSubjectLiteralRefusal("web.events.>", "WEB_EVENTS") ==
        ToSubjectRefusal("web.events.>", "WEB_EVENTS", origin));
  CHECK_FALSE(ToSubjectLiteralRefusal("web.other.x", "WEB_EVENTS"));
  CHECK_THAT(*ToSubjectRefusal("web.events.*", "WEB_EVENTS", origin),
             Catch::Contains("holds a wildcard"));
  CHECK_THAT(*ToSubjectRefusal("web.events.a b", "WEB_EVENTS", origin),
             Catch::Contains("holds white space"));
  CHECK_THAT(*ToSubjectRefusal("", "WEB_EVENTS", origin), Catch::Contains("is empty"));
  CHECK(ToSubjectRefusal("web.other.x", "WEB_EVENTS", origin) ==
        "--to-subject 'web.other.x' is not a subject of WEB_EVENTS (subjects web.events.*)");
  CHECK(ToSubjectRefusal("web.events.a.b", "WEB_EVENTS", origin) ==
        "--to-subject 'web.events.a.b' is not a subject of WEB_EVENTS (subjects web.events.*)");
  CHECK_THAT(*ToSubjectRefusal("web.events.q", "WEB_EVENTS", std::nullopt),
             Catch::Contains("does not exist"));
}
