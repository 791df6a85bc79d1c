#include "platformctl/nats_admin_request.h"

#include <nats/nats.h>

#include <algorithm>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/js_error.h"
#include "common/nats_msg_ptr.h"
#include "common/nats_status.h"
#include "common/timefmt.h"
#include "platformctl/json_whole.h"

namespace platformctl::nats_admin {
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
  return common::ParseRfc3339(s, {.before_epoch_is_zero = true});
}

}  // namespace platformctl::nats_admin
