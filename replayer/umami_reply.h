// What Umami's answers mean, as data: the replies of /api/send and of the health checks.
//
// Pure: no I/O. Every Umami behaviour the replayer relies on is decided here, and the same
// behaviours are recorded against a real Umami in tests/umami, so a change in Umami shows up as
// a failing test. Safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace replayer {

struct SendReply {
  enum class Kind { kStored, kDroppedBot };
  Kind kind = Kind::kStored;
  std::string cache_token;  // the visitor's new x-umami-cache value; empty when none came
  // Set when the reply held something in the token's place that is not one (it is ignored):
  // a sentence without the reply's bytes.
  std::string token_problem;
};

// For a 2xx answer of POST /api/send. Umami 2.10 answers a stored event with the bare cache
// token as text, v3 with JSON {"cache":…,"sessionId":…,"visitId":…}; a bot user agent gets 200
// with {} (2.10) or {"beep":"boop"} (v3) and nothing is stored. Both versions' tokens are JWTs;
// anything else in their place (a proxy's page, a 70 KB body) is no token: kept, it would go out
// as a header on the visitor's next events, which Node refuses (431) once it is large.
SendReply ParseSendReply(std::string_view body);

// The reply of POST /api/batch (Umami 3.x; 2.10 has no such route): 200 with
// {"size","processed","errors","details":[{"index","response"}],"cache"}. Umami runs each element
// through its send handler in order with the outer request's headers and goes on after an
// element fails; `details` names the failed ones, `cache` is the token of the first element it
// stored (null when it stored none: a bot's element is processed but stores nothing).
struct BatchReply {
  struct Failed {
    size_t index = 0;
    int status = 500;     // the element's error.status, else 500
    std::string excerpt;  // "HTTP 400 in a batch: {...}" (AnswerExcerpt's bounds)
  };
  bool readable = false;       // a batch reply for exactly the elements sent
  std::string problem;         // why not, when not: a sentence without the reply's bytes
  std::vector<Failed> failed;  // ascending index
  bool stored_any = false;     // `cache` was set: some element was stored
  std::string cache_token;     // usable token, else empty
  std::string token_problem;   // as SendReply's
};
BatchReply ParseBatchReply(std::string_view body, size_t sent);

// /api/batch is not there: Umami 2.10 (added in 2.17), or a proxy that does not route it.
inline bool BatchRouteMissing(int status) { return status == 404 || status == 405; }

// A token in the shape both Umami versions send: a JWT (three base64url segments joined by
// dots, the first two non-empty), at most kMaxTokenBytes.
inline constexpr size_t kMaxTokenBytes = 4096;
bool UsableToken(std::string_view token);

// The collection probe passes when Umami reached its database and found no such website:
// v3 answers 400 "Website not found.", 2.10 answers 403 "Website not found: <id>.". Anything
// else (2.10's 400 "Can't reach database server…", a 5xx, no answer) fails it.
bool ProbePassed(int status, std::string_view body);

// What a failed send's answer says it is about (docs/replayer.md, "What an answer is about").
// kSite: Umami looked the website up and does not hold it (2.10: 403 "Website not found: <id>.",
// v3: 400 "Website not found."): the answer the collection probe passes on, so it proves the
// database reachable and says nothing of the event. kEvent: Umami refused the event itself in
// its validation (2.10, yup: 400 "payload.name must be at most 50 characters"; v3, zod: 400 "Too
// big: expected string to have <=50 characters"), before any database work. Neither can be a
// sign that the database cannot write. kOther: anything else (a 5xx, a database's error text in
// a 400 such as 2.10's "cannot execute INSERT in a read-only transaction", no answer).
enum class AnswerAbout { kOther, kSite, kEvent };
AnswerAbout ClassifyAnswer(int status, std::string_view body);

// The heartbeat passes on 200 (Umami 2.10 answers 200 even with its database down: that is why
// the probe exists).
bool HeartbeatPassed(int status);

// The website id the probe sends for: a valid v4 UUID no Umami will ever hold.
inline constexpr const char* kProbeWebsite = "00000000-0000-4000-8000-000000000000";
std::string ProbeBody();

// "HTTP 500: <first 200 bytes, one line>" or "no answer: <error>".
std::string AnswerExcerpt(int status, std::string_view body, std::string_view error);

}  // namespace replayer
