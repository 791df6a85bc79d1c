// common/base64.h: RFC 4648's test vectors, both alphabets, optional padding, every byte value
// through a round trip, and the inputs that are no encoding.
#include "common/base64.h"

#include <catch2/catch.hpp>
#include <string>

TEST_CASE("base64: RFC 4648 vectors, both ways", "[unit]") {
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    std::string out;
    common::AppendBase64(out, plain);
    CHECK(out == encoded);
    CHECK(common::DecodeBase64(encoded) == plain);
  }
  // Padding is optional; a header block as JetStream's message get carries it.
  CHECK(common::DecodeBase64("Zg") == std::string("f"));
  CHECK(common::DecodeBase64("Zm8") == std::string("fo"));
  CHECK(common::DecodeBase64("TkFUUy8xLjANCg0K") == std::string("NATS/1.0\r\n\r\n"));
}

TEST_CASE("base64: every byte value survives a round trip, and the URL-safe alphabet decodes too",
          "[unit]") {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (size_t len : {size_t{1}, size_t{2}, size_t{3}, size_t{255}, size_t{256}}) {
    std::string encoded;
    common::AppendBase64(encoded, bytes.substr(0, len));
    std::string back;
    REQUIRE(common::DecodeBase64(encoded, &back));
    CHECK(back == bytes.substr(0, len));
  }
  std::string standard;
  common::AppendBase64(standard, "\xfb\xff\xbf");
  CHECK(standard == "+/+/");
  CHECK(common::DecodeBase64("-_-_") == std::string("\xfb\xff\xbf"));
}

TEST_CASE("base64: what no encoding is", "[unit]") {
  CHECK_FALSE(common::DecodeBase64("Y"));       // a length no encoding has
  CHECK_FALSE(common::DecodeBase64("Y*=="));    // a character outside both alphabets
  CHECK_FALSE(common::DecodeBase64("Zg=a"));    // padding inside
  CHECK_FALSE(common::DecodeBase64("Zm9v\n"));  // a line break
  std::string out;
  CHECK_FALSE(common::DecodeBase64("Zm 9", &out));  // a space
}
