// The endpoint's HTTP/1.1 (common/http_request.h): where a head ends, what it asks for, and the
// answers' bytes.
#include "common/http_request.h"

#include <catch2/catch.hpp>

using common::http::ErrorAnswer;
using common::http::HeadEnd;
using common::http::Route;

TEST_CASE("a request head ends at its first blank line, CRLF or LF", "[unit][http]") {
  CHECK(HeadEnd("GET / HTTP/1.1\r\nHost: x\r\n\r\n") == 27);
  CHECK(HeadEnd("GET / HTTP/1.1\nHost: x\n\nrest") == 24);
  CHECK(HeadEnd("GET / HTTP/1.1\r\nHost: x\r\n") == std::string::npos);
  CHECK(HeadEnd("GET / HTTP/1.1\r\n\r") == std::string::npos);
  CHECK(HeadEnd("") == std::string::npos);
}

TEST_CASE("GET and HEAD of /metrics and /healthz are routed, the rest refused", "[unit][http]") {
  CHECK(common::http::Parse("GET /metrics HTTP/1.1\r\n\r\n").route == Route::kMetrics);
  CHECK(common::http::Parse("GET /metrics?name[]=x HTTP/1.0\r\n\r\n").route == Route::kMetrics);
  CHECK(common::http::Parse("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").route == Route::kHealth);
  auto head = common::http::Parse("HEAD /healthz HTTP/1.1\r\n\r\n");
  CHECK(head.route == Route::kHealth);
  CHECK(head.head_only);
  CHECK_FALSE(common::http::Parse("GET /healthz HTTP/1.1\r\n\r\n").head_only);
  CHECK(common::http::Parse("GET / HTTP/1.1\r\n\r\n").route == Route::kNotFound);
  CHECK(common::http::Parse("GET /metrics/x HTTP/1.1\r\n\r\n").route == Route::kNotFound);
  CHECK(common::http::Parse("GET /etc/passwd HTTP/1.1\r\n\r\n").route == Route::kNotFound);
  CHECK(common::http::Parse("POST /metrics HTTP/1.1\r\n\r\n").route == Route::kBadMethod);
  CHECK(common::http::Parse("DELETE /healthz HTTP/1.1\r\n\r\n").route == Route::kBadMethod);
  CHECK(common::http::Parse("\r\n\r\n").route == Route::kBadRequest);
  CHECK(common::http::Parse("GET /metrics\r\n\r\n").route == Route::kBadRequest);
  CHECK(common::http::Parse("GET metrics HTTP/1.1\r\n\r\n").route == Route::kBadRequest);
  CHECK(common::http::Parse("GET /metrics HTTP/2.0\r\n\r\n").route == Route::kBadRequest);
  CHECK(common::http::Parse("get /metrics HTTP/1.1\r\n\r\n").route == Route::kBadRequest);
  CHECK(common::http::Parse("GET  /metrics HTTP/1.1\r\n\r\n").route == Route::kBadRequest);
}

TEST_CASE("an answer closes its connection and HEAD leaves the body out", "[unit][http]") {
  std::string get = common::http::Answer(200, "text/plain", "ok\n", false);
  CHECK(get ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
        "Cache-Control: no-store\r\nConnection: close\r\n\r\nok\n");
  std::string head = common::http::Answer(503, "text/plain", "unhealthy\n", true);
  CHECK_THAT(head, Catch::StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  CHECK_THAT(head, Catch::Contains("Content-Length: 10\r\n") && Catch::EndsWith("\r\n\r\n"));
  CHECK_THAT(ErrorAnswer(405), Catch::StartsWith("HTTP/1.1 405 Method Not Allowed\r\n") &&
                                   Catch::Contains("Allow: GET, HEAD\r\n"));
  CHECK_THAT(ErrorAnswer(431), Catch::StartsWith("HTTP/1.1 431 "));
  CHECK_THAT(ErrorAnswer(404), Catch::StartsWith("HTTP/1.1 404 Not Found\r\n"));
  CHECK_THAT(ErrorAnswer(400), Catch::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
}
