// What Umami's answers mean, as data: the replies of /api/send and of the health checks.
//
// Pure: no I/O. Every Umami behaviour the replayer relies on is decided here, and the same
// behaviours are recorded against a real Umami in tests/umami, so a change in Umami shows up as
// a failing test. Safe from any thread.
#pragma once

#include <string>
#include <string_view>

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

// A token in the shape both Umami versions send: a JWT (three base64url segments joined by
// dots, the first two non-empty), at most kMaxTokenBytes.
inline constexpr size_t kMaxTokenBytes = 4096;
bool UsableToken(std::string_view token);

// The collection probe passes when Umami reached its database and found no such website:
// v3 answers 400 "Website not found.", 2.10 answers 403 "Website not found: <id>.". Anything
// else (2.10's 400 "Can't reach database server…", a 5xx, no answer) fails it.
bool ProbePassed(int status, std::string_view body);

// The heartbeat passes on 200 (Umami 2.10 answers 200 even with its database down: that is why
// the probe exists).
bool HeartbeatPassed(int status);

// The website id the probe sends for: a valid v4 UUID no Umami will ever hold.
inline constexpr const char* kProbeWebsite = "00000000-0000-4000-8000-000000000000";
std::string ProbeBody();

// "HTTP 500: <first 200 bytes, one line>" or "no answer: <error>".
std::string AnswerExcerpt(int status, std::string_view body, std::string_view error);

}  // namespace replayer
