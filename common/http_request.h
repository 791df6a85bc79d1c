// The HTTP/1.1 of the /metrics and /healthz endpoint (common/http_server.h), as pure functions:
// where a request head ends, what it asks for, and the bytes of an answer. No I/O, no state:
// any thread may call them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace common::http {

// Where the request head in `buf` ends (just past its blank line, CRLF or bare LF), or npos when
// it has not ended yet.
size_t HeadEnd(std::string_view buf);

enum class Route {
  kMetrics,     // GET or HEAD /metrics
  kHealth,      // GET or HEAD /healthz
  kNotFound,    // GET or HEAD of any other path
  kBadMethod,   // a method other than GET and HEAD: 405
  kBadRequest,  // no "METHOD /target HTTP/1.x" request line: 400
};

struct Request {
  Route route = Route::kBadRequest;
  bool head_only = false;  // HEAD: the answer's head without its body
};

// What a whole request head asks for. The query string is ignored (/metrics?x=1 is /metrics);
// headers are not read (there is no body to frame, and every answer closes the connection).
Request Parse(std::string_view head);

// One whole answer: status line, Content-Type, Content-Length, "Cache-Control: no-store",
// extra_headers (each ending in CRLF), "Connection: close", then the body unless head_only.
std::string Answer(int status, std::string_view content_type, std::string_view body, bool head_only,
                   std::string_view extra_headers = "");

// The answers that are not the endpoint's content: 400, 404, 405 (with Allow), 431, 500.
std::string ErrorAnswer(int status, bool head_only = false);

}  // namespace common::http
