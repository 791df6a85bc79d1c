#include "platformctl/nats_admin_request.h"

#include <nats/nats.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/js_error.h"
#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "platformctl/json_whole.h"

namespace platformctl::nats_admin {
namespace {

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Patience::Patience(Millis limit, std::function<Clock::time_point()> now)
    : limit_(limit), now_(std::move(now)), since_(now_()) {}

void Patience::Progress() {
  since_ = now_();
  attempt_ = 0;
}

Millis Patience::waited() const { return std::chrono::duration_cast<Millis>(now_() - since_); }

std::optional<Millis> Patience::NextDelay() {
  const Millis left = limit_ - waited();
  if (left.count() <= 0) return std::nullopt;
  Millis d(std::min<int64_t>(1000, int64_t{100} << std::min(attempt_, 4)));
  ++attempt_;
  return std::min(d, left);
}

std::optional<Error> ApiError(std::string_view answer, const std::string& what) {
  auto j = nlohmann::json::parse(answer, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return std::nullopt;
  const auto& e = j["error"];
  // Read by type, not with json::value(), which throws when a member has another type: an
  // answer is input we do not control (a proxy, another server version, a client that named
  // our inbox), and a throw here ended platformctl (found by tests/fuzz/fuzz_js_answer).
  // A number an int does not hold is none: cast, 4294977353 would read as 10057.
  auto number = [&](const char* key) { return json_whole::WholeAt<int>(e, key).value_or(0); };
  const int code = number("code");
  const int err_code = number("err_code");
  auto d = e.find("description");
  std::string msg = what + ": " +
                    (d != e.end() && d->is_string() ? d->get<std::string>() : "(no description)") +
                    " (JetStream error " + std::to_string(err_code) + ")";
  // Only "temporarily unavailable" passes by itself; other 503s (e.g. 10075 "peer remap
  // failed") are answers about the request (js_error::KindOf).
  Error out = Error::Permanent(msg);
  out.kind = js_error::KindOf(code, err_code);
  out.code = err_code;
  return out;
}

std::string LastServerError(NatsClient& client) {
  const char* text = nullptr;
  natsStatus s = natsConnection_GetLastError(client.conn(), &text);
  if (s == NATS_OK || text == nullptr) return "";
  return text;
}

Result<std::string> ApiRequest(NatsClient& client, const std::string& subject,
                               const std::string& body, const std::string& what,
                               Patience& patience) {
  while (true) {
    natsMsg* raw = nullptr;
    natsStatus s =
        natsConnection_Request(&raw, client.conn(), subject.c_str(), body.data(),
                               static_cast<int>(body.size()), client.request_timeout_ms());
    common::NatsMsgPtr reply(raw);
    Error err;
    if (s == NATS_OK) {
      const char* d = natsMsg_GetData(reply.get());
      std::string answer(d != nullptr ? d : "", static_cast<size_t>(natsMsg_GetDataLength(raw)));
      auto api = ApiError(answer, what);
      if (!api) {
        patience.Progress();
        return answer;
      }
      if (api->kind != ErrorKind::kRetryable) return *api;
      err = *api;
    } else {
      err = NatsError(s, what);
      if (err.kind != ErrorKind::kRetryable) return err;
    }
    auto delay = patience.NextDelay();
    if (!delay) {
      std::string last = LastServerError(client);
      return Error::Retryable(
          what + ": gave up after " + std::to_string(patience.waited().count() / 1000) + " s (" +
          err.message + ")" + (last.empty() ? "" : "; the server said: " + last));
    }
    std::this_thread::sleep_for(*delay);
  }
}

std::optional<int64_t> ParseJsTime(std::string_view s) {
  int year = 0, mon = 0, day = 0, hour = 0, min = 0, sec = 0;
  if (!Digits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &mon) ||
      s[7] != '-' || !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &hour) || s[13] != ':' || !Digits(s, 14, 2, &min) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec)) {
    return std::nullopt;
  }
  size_t pos = 19;
  int64_t frac_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int64_t scale = 100'000'000;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac_ns += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = 0, om = 0;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om)) {
      return std::nullopt;
    }
    offset_s = (s[pos] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size() || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 ||
      sec > 60) {
    return std::nullopt;
  }
  if (year < 1970) return 0;  // Go's zero time: never
  // Unix nanoseconds in 64 bits end in April 2262: a later time is no answer a server gives
  // (found by tests/fuzz: year 6220 overflowed the multiplication below).
  if (year > 2261) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  const std::time_t t = timegm(&tm);
  return (static_cast<int64_t>(t) - offset_s) * 1'000'000'000 + frac_ns;
}

}  // namespace platformctl::nats_admin
