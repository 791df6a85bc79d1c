#include "common/dead_letter.h"

#include "common/topology.h"

namespace core::dead_letter {
namespace {

bool ValidToken(std::string_view t) {
  if (t.empty()) return false;
  for (char c : t) {
    if (c == '.' || c == '*' || c == '>' || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      return false;
    }
  }
  return true;
}

std::string KeyAfter(std::string_view subject, std::string_view prefix) {
  std::string_view key = subject.substr(prefix.size());
  return ValidToken(key) ? std::string(key) : "_invalid";
}

}  // namespace

std::string DlqSubjectFor(std::string_view subject) {
  std::string_view web = topology::kWebEventsSubjectPrefix;
  std::string_view api = topology::kApiMetricsSubjectPrefix;
  if (subject.substr(0, web.size()) == web) {
    return topology::kWebDlqSubjectPrefix + KeyAfter(subject, web);
  }
  if (subject.substr(0, api.size()) == api) {
    return topology::kApiDlqSubjectPrefix + KeyAfter(subject, api);
  }
  return "";
}

std::string DlqStreamFor(std::string_view stream) {
  if (stream == topology::kWebEvents) return topology::kWebDlq;
  if (stream == topology::kApiMetrics) return topology::kApiDlq;
  return "";
}

OutMessage Build(const Origin& origin, const std::string& reason, const std::string& detail) {
  OutMessage m;
  m.subject = DlqSubjectFor(origin.subject);
  m.data = origin.payload;
  m.expect_stream = DlqStreamFor(origin.stream);
  m.msg_id = "dlq." + origin.stream + "." + std::to_string(origin.stream_seq);
  for (const auto& [k, v] : origin.headers) {
    if (k == "Nats-Msg-Id") {
      m.headers.emplace_back(kOrigMsgId, v);
    } else if (k.rfind("Nats-", 0) != 0 && k.rfind("Sa-Dlq-", 0) != 0) {
      m.headers.emplace_back(k, v);
    }
  }
  // Header values are one line: a reason or detail with a line break would corrupt the frame.
  auto one_line = [](std::string s) {
    for (char& c : s) {
      if (c == '\r' || c == '\n') c = ' ';
    }
    return s;
  };
  m.headers.emplace_back(kReason, one_line(reason));
  m.headers.emplace_back(kSubject, origin.subject);
  m.headers.emplace_back(kStream, origin.stream);
  m.headers.emplace_back(kStreamSeq, std::to_string(origin.stream_seq));
  if (!detail.empty()) m.headers.emplace_back(kDetail, one_line(detail.substr(0, 512)));
  return m;
}

}  // namespace core::dead_letter
