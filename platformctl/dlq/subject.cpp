#include "platformctl/dlq/subject.h"

#include <algorithm>
#include <cstdio>

namespace platformctl::dlq {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::optional<std::string> NotLiteralSubject(std::string_view subject) {
  if (subject.empty()) return "is empty";
  // First: a cut subject also holds a space, but "cut" says why and what to do about it.
  if (EndsWith(subject, common::dead_letter::kTruncatedMark)) {
    return std::string("is cut (the dead-lettering shortened it; it ends in '") +
           common::dead_letter::kTruncatedMark + "')";
  }
  if (subject.size() > kMaxReplaySubjectBytes) {
    return "is longer than " + std::to_string(kMaxReplaySubjectBytes) + " bytes";
  }
  bool space = false, wildcard = false;
  for (char c : subject) {
    auto u = static_cast<unsigned char>(c);
    space = space || u < 0x21 || u == 0x7f;
    wildcard = wildcard || c == '*' || c == '>';
  }
  if (space) return "holds white space or a control character";
  if (wildcard) return "holds a wildcard ('*' or '>')";
  if (subject.front() == '.' || subject.back() == '.' ||
      subject.find("..") != std::string_view::npos) {
    return "has an empty token";
  }
  return std::nullopt;
}

std::string QuotedSubject(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, kMaxReplaySubjectBytes)) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += "'";
  if (s.size() > kMaxReplaySubjectBytes) {
    out += " (cut here, " + std::to_string(s.size()) + " bytes in all)";
  }
  return out;
}

std::optional<std::string> OriginSubjectSkipWhy(std::string_view subject) {
  auto why = NotLiteralSubject(subject);
  if (!why) return std::nullopt;
  return "origin subject " + *why + ": " + QuotedSubject(subject);
}

std::optional<std::string> ToSubjectLiteralRefusal(std::string_view to,
                                                   std::string_view origin_stream) {
  auto why = NotLiteralSubject(to);
  if (!why) return std::nullopt;
  return "--to-subject " + QuotedSubject(to) + " " + *why + ": a replay publishes to one " +
         "literal subject of " + std::string(origin_stream);
}

std::optional<std::string> ToSubjectRefusal(std::string_view to, std::string_view origin_stream,
                                            const std::optional<OriginStream>& origin) {
  if (auto refusal = ToSubjectLiteralRefusal(to, origin_stream)) return refusal;
  if (!origin) {
    return "--to-subject " + QuotedSubject(to) + " is not a subject of " +
           std::string(origin_stream) + ": the stream does not exist (run platformctl init)";
  }
  bool ours = std::any_of(origin->subjects.begin(), origin->subjects.end(),
                          [&](const std::string& pattern) { return SubjectMatches(pattern, to); });
  if (ours) return std::nullopt;
  std::string subjects;
  for (const auto& s : origin->subjects) subjects += (subjects.empty() ? "" : ", ") + s;
  return "--to-subject " + QuotedSubject(to) + " is not a subject of " +
         std::string(origin_stream) + " (subjects " + (subjects.empty() ? "none" : subjects) + ")";
}

}  // namespace platformctl::dlq
