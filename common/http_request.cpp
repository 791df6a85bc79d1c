#include "common/http_request.h"

namespace common::http {

namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < 'A' || c > 'Z') return false;
  }
  return true;
}

}  // namespace

size_t HeadEnd(std::string_view buf) {
  // The first blank line, whichever line ending the client uses.
  for (size_t i = buf.find('\n'); i != std::string_view::npos; i = buf.find('\n', i + 1)) {
    if (i + 1 < buf.size() && buf[i + 1] == '\n') return i + 2;
    if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

Request Parse(std::string_view head) {
  Request r;
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return r;
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method) || target.empty() || target[0] != '/' || version.substr(0, 7) != "HTTP/1." ||
      version.size() != 8) {
    return r;
  }
  r.head_only = method == "HEAD";
  if (method != "GET" && !r.head_only) {
    r.route = Route::kBadMethod;
    return r;
  }
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  r.route = path == "/metrics"   ? Route::kMetrics
            : path == "/healthz" ? Route::kHealth
                                 : Route::kNotFound;
  return r;
}

std::string Answer(int status, std::string_view content_type, std::string_view body, bool head_only,
                   std::string_view extra_headers) {
  std::string out;
  out.reserve(160 + extra_headers.size() + (head_only ? 0 : body.size()));
  out.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(Reason(status));
  out.append("\r\nContent-Type: ").append(content_type);
  out.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  out.append("\r\nCache-Control: no-store\r\n").append(extra_headers);
  out.append("Connection: close\r\n\r\n");
  if (!head_only) out.append(body);
  return out;
}

std::string ErrorAnswer(int status, bool head_only) {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  switch (status) {
    case 405:
      return Answer(405, kText, "GET or HEAD only\n", false, "Allow: GET, HEAD\r\n");
    case 404:
      return Answer(404, kText, "not found: /metrics and /healthz only\n", head_only);
    case 431:
      return Answer(431, kText, "request head over 8 KiB\n", false);
    case 500:
      return Answer(500, kText, "internal error\n", head_only);
    default:
      return Answer(400, kText, "bad request\n", false);
  }
}

}  // namespace common::http
