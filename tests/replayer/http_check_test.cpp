// The rules both HTTP clients apply: what a request may carry (http_check.h) and what a response
// head must be (http_parse.h), without I/O.
#include <catch2/catch.hpp>
#include <string>

#include "replayer/http_check.h"
#include "replayer/http_parse.h"

using namespace replayer;

namespace {

HttpRequest WithHeader(std::string name, std::string value) {
  HttpRequest r;
  r.url = "http://127.0.0.1:3000/api/send";
  r.headers.emplace_back(std::move(name), std::move(value));
  return r;
}

}  // namespace

TEST_CASE("http check: a header value with a control character is refused", "[http]") {
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\t') continue;
    std::string v = "Mozilla/5.0";
    v.insert(v.begin() + 3, static_cast<char>(c));
    auto st = CheckRequest(WithHeader("User-Agent", v));
    INFO("byte " << c);
    REQUIRE_FALSE(st);
    CHECK(st.error().kind == common::ErrorKind::kInvalid);
    CHECK_THAT(st.error().message, Catch::Contains("header User-Agent holds a control character"));
    CHECK_THAT(st.error().message, Catch::Contains("at byte 3"));
  }
  auto del = CheckRequest(WithHeader("X-Forwarded-For", "203.0.113.9\x7f"));
  REQUIRE_FALSE(del);
  CHECK_THAT(del.error().message, Catch::Contains("0x7F"));
  // The smuggling shape: the value never appears in the error.
  auto crlf = CheckRequest(WithHeader("User-Agent", "a\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n"));
  REQUIRE_FALSE(crlf);
  CHECK_THAT(crlf.error().message, Catch::Contains("0x0D"));
  CHECK_THAT(crlf.error().message, !Catch::Contains("smuggled"));
}

TEST_CASE("http check: a control character is found wherever it is in a long value", "[http]") {
  // The scan runs 16 bytes at a time: each position of a value longer than a few blocks, and
  // tabs (allowed) in the blocks before and in the one that holds the control.
  const std::string ua(70, 'a');
  for (size_t at = 0; at < ua.size(); ++at) {
    for (char c : {'\r', '\x7f', '\0'}) {
      std::string v = ua;
      v[at] = c;
      if (at > 2) v[at - 2] = '\t';
      if (at > 20) v[5] = '\t';
      auto st = CheckRequest(WithHeader("User-Agent", v));
      INFO("control " << int(c) << " at " << at);
      REQUIRE_FALSE(st);
      CHECK_THAT(st.error().message, Catch::Contains("at byte " + std::to_string(at) + ")"));
    }
  }
  std::string tabs = ua;
  for (size_t i = 0; i < tabs.size(); i += 7) tabs[i] = '\t';
  CHECK(CheckRequest(WithHeader("User-Agent", tabs)));
}

TEST_CASE("http check: what a header value may hold", "[http]") {
  CHECK(CheckRequest(WithHeader("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)\tx")));
  CHECK(CheckRequest(WithHeader("User-Agent", "Navigateur \xc3\xa9t\xc3\xa9")));  // UTF-8 bytes
  CHECK(CheckRequest(WithHeader("x-umami-cache", "")));
  CHECK(CheckRequest(WithHeader("x-umami-cache", "eyJhbGciOiJIUzI1NiJ9.e30.sig")));
}

TEST_CASE("http check: header names are tokens, URLs have no spaces or controls", "[http]") {
  CHECK_FALSE(CheckRequest(WithHeader("", "x")));
  CHECK_FALSE(CheckRequest(WithHeader("User Agent", "x")));
  CHECK_FALSE(CheckRequest(WithHeader("User-Agent:", "x")));
  CHECK_FALSE(CheckRequest(WithHeader("X\r\nY", "x")));
  CHECK(CheckRequest(WithHeader("X-Custom_1.~!", "x")));
  HttpRequest r;
  r.url = "http://127.0.0.1:3000/api/send HTTP/1.1\r\nX: y";
  CHECK_FALSE(CheckRequest(r));
  r.url = "http://127.0.0.1:3000/a b";
  CHECK_FALSE(CheckRequest(r));
  r.url = "https://umami.example/api/send?x=1";
  CHECK(CheckRequest(r));
}

TEST_CASE("http head: status lines", "[http]") {
  auto ok = ParseStatusLine("HTTP/1.1 200 OK");
  REQUIRE(ok);
  CHECK(ok->code == 200);
  CHECK(ok->minor == 1);
  auto ten = ParseStatusLine("HTTP/1.0 403 Forbidden");
  REQUIRE(ten);
  CHECK(ten->minor == 0);
  CHECK(ParseStatusLine("HTTP/1.1 204"));   // no reason phrase
  CHECK(ParseStatusLine("HTTP/1.1 500 "));  // an empty one
  CHECK(ParseStatusLine("HTTP/1.1 100 Continue"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1 2000 OK"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1 200x"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1 200x OK"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.9 200 OK"));
  CHECK_FALSE(ParseStatusLine("HTTP/2 200"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1 20 OK"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1 099 x"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1  200 OK"));
  CHECK_FALSE(ParseStatusLine("http/1.1 200 OK"));
  CHECK_FALSE(ParseStatusLine("HTTP/1.1 200 O\x01K"));
  CHECK_FALSE(ParseStatusLine("ICY 200 OK"));
}

TEST_CASE("http head: framing fields", "[http]") {
  ResponseHead h;
  CHECK(h.AddField("Content-Length: 2"));
  CHECK(h.AddField("content-length:2"));  // the same value again
  CHECK(h.AddField("Connection: keep-alive"));
  CHECK(h.Finish());
  CHECK(h.length() == 2u);
  CHECK_FALSE(h.chunked());
  CHECK(h.connection_keep_alive() == true);

  auto refused = [](std::initializer_list<const char*> lines) {
    ResponseHead x;
    for (const char* l : lines)
      if (!x.AddField(l)) return true;
    return !x.Finish();
  };
  CHECK(refused({"Content-Length : 2"}));
  CHECK(refused({" Content-Length: 2"}));  // obs-fold or leading space
  CHECK(refused({"Content-Length: 2x"}));
  CHECK(refused({"Content-Length: -1"}));
  CHECK(refused({"Content-Length: +1"}));
  CHECK(refused({"Content-Length: 1, 1"}));
  CHECK(refused({"Content-Length:"}));
  CHECK(refused({"Content-Length: 99999999999999999999999"}));
  CHECK(refused({"Content-Length: 1", "Content-Length: 2"}));
  CHECK(refused({"Transfer-Encoding: chunked, gzip"}));
  CHECK(refused({"Transfer-Encoding: gzip, chunked"}));
  CHECK(refused({"Transfer-Encoding: gzip"}));
  CHECK(refused({"Transfer-Encoding: chunked", "Transfer-Encoding: chunked"}));
  CHECK(refused({"Transfer-Encoding: chunked", "Content-Length: 3"}));
  CHECK(
      refused({"X-Thing: a\x01"
               "b"}));
  CHECK(refused({"no colon here"}));
  ResponseHead chunked;
  CHECK(chunked.AddField("Transfer-Encoding:  Chunked "));
  CHECK(chunked.Finish());
  CHECK(chunked.chunked());
  ResponseHead closing;
  CHECK(closing.AddField("Connection: keep-alive, close"));
  CHECK(closing.connection_keep_alive() == false);
}
