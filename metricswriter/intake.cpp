#include "metricswriter/intake.h"

#include <algorithm>
#include <cctype>

#include "common/log.h"

namespace mw {
namespace {

constexpr std::string_view kReplay = ".replay.";
constexpr std::string_view kPrefix = "api.metrics.";

bool IdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
         c == ':' || c == '+' || c == '/' || c == '=' || c == '@' || c == '~';
}

// Removes one trailing ".replay.<stream>.<digits>"; false when there is none.
bool StripReplay(std::string_view* id) {
  size_t last_dot = id->rfind('.');
  if (last_dot == std::string_view::npos || last_dot + 1 == id->size()) return false;
  std::string_view seq = id->substr(last_dot + 1);
  if (!std::all_of(seq.begin(), seq.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  std::string_view head = id->substr(0, last_dot);  // "<id>.replay.<stream>"
  size_t stream_dot = head.rfind('.');
  if (stream_dot == std::string_view::npos || stream_dot + 1 == head.size()) return false;
  std::string_view stream = head.substr(stream_dot + 1);
  if (!std::all_of(stream.begin(), stream.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
      })) {
    return false;
  }
  std::string_view rest = head.substr(0, stream_dot + 1);  // "<id>.replay."
  if (rest.size() < kReplay.size() || rest.substr(rest.size() - kReplay.size()) != kReplay) {
    return false;
  }
  *id = rest.substr(0, rest.size() - kReplay.size());
  return true;
}

}  // namespace

common::Result<std::string> BatchIdFromMsgId(const std::optional<std::string>& msg_id) {
  if (!msg_id || msg_id->empty()) return common::Error::Invalid("the message has no Nats-Msg-Id");
  std::string_view id = *msg_id;
  while (StripReplay(&id)) {
  }
  if (id.empty()) return common::Error::Invalid("the batch id is empty");
  if (id.size() > kMaxBatchIdLength) {
    return common::Error::Invalid("the batch id is longer than " +
                                  std::to_string(kMaxBatchIdLength) + " characters");
  }
  auto bad = std::find_if_not(id.begin(), id.end(), IdChar);
  if (bad != id.end()) {
    return common::Error::Invalid("the batch id has a character outside A-Z a-z 0-9 -_.:+/=@~ at " +
                                  std::to_string(bad - id.begin()));
  }
  return std::string(id);
}

common::Result<std::string> TenantFromSubject(std::string_view subject) {
  if (subject.substr(0, kPrefix.size()) != kPrefix) {
    return common::Error::Invalid("subject is not api.metrics.<tenant>");
  }
  std::string_view tenant = subject.substr(kPrefix.size());
  if (tenant.empty() || tenant.find('.') != std::string_view::npos) {
    return common::Error::Invalid("subject is not api.metrics.<tenant>");
  }
  return std::string(tenant);
}

common::Result<Format> FormatOf(const std::optional<std::string>& content_type,
                                std::string_view body) {
  std::string ct;
  if (content_type) {
    ct = content_type->substr(0, content_type->find(';'));
    ct.erase(
        std::remove_if(ct.begin(), ct.end(), [](unsigned char c) { return std::isspace(c) != 0; }),
        ct.end());
    std::transform(ct.begin(), ct.end(), ct.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  if (ct.empty()) {
    size_t first = body.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && body[first] == '{' ? Format::kJson
                                                                 : Format::kProtobuf;
  }
  if (ct == "application/json") return Format::kJson;
  if (ct == "application/x-protobuf" || ct == "application/protobuf") return Format::kProtobuf;
  // The reason goes into a DLQ header and a log line: the message's value only escaped.
  return common::Error::Invalid("unsupported content type " + common::log::Escaped(ct, 100));
}

}  // namespace mw
