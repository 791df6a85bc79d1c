// What a response head must be, and an incremental parser of one HTTP/1.1 response (RFC 9112):
// status line, header fields, and a body framed by Content-Length, the chunked transfer coding,
// or the end of the connection.
//
// The head rules (ParseStatusLine, ResponseHead) are strict and shared: the hand-written client
// parses with them and the libcurl client checks every line curl hands it with them, so both
// refuse the same answers (a four-digit status, "HTTP/1.9", whitespace before a colon, a
// transfer coding other than chunked, a length that is not one decimal number or that
// conflicts with another length or with chunked) instead of each guessing its own way.
//
// Pure: no I/O, no clock; the clients feed it what a connection reads. Not thread-safe: one
// parser (or ResponseHead) per connection, reused (Reset) for the next response on it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace replayer {

struct StatusLine {
  int minor = 1;  // HTTP/1.<minor>: 0 or 1
  int code = 0;   // 100..999
};

// "HTTP/1.0" or "HTTP/1.1", one space, exactly three digits, then the end of the line or a
// space and a reason phrase without control characters (except HTAB). `line` has no CRLF.
std::optional<StatusLine> ParseStatusLine(std::string_view line);

// The header fields of one response head, line by line: checks each line and keeps what
// frames the body.
class ResponseHead {
 public:
  // One field line without its CRLF. False when it breaks the rules (see error()); later calls
  // keep failing.
  bool AddField(std::string_view line);
  // After the last field: false when the fields conflict (Content-Length beside chunked).
  bool Finish();
  void Reset() { *this = ResponseHead(); }

  bool chunked() const { return chunked_; }
  std::optional<size_t> length() const { return length_; }
  std::optional<bool> connection_keep_alive() const { return keep_; }  // from Connection
  const std::string& error() const { return error_; }

 private:
  bool Fail(std::string why);

  bool chunked_ = false;
  std::optional<size_t> length_;
  std::optional<bool> keep_;
  std::string error_;
};

// A trailer field after a chunked body: a valid field line, framing fields not looked at.
bool IsValidFieldLine(std::string_view line);

class HttpResponseParser {
 public:
  enum class State { kMore, kDone, kError };

  explicit HttpResponseParser(size_t max_body = 64 * 1024) : max_body_(max_body) {}

  // Appends bytes read from the connection. kDone: a whole final response is in (bytes after it
  // are counted in leftover()); kError: not HTTP, see error().
  State Feed(std::string_view bytes);
  // The peer closed the connection: ends a body that runs to the close, else an error.
  State Finish();
  void Reset();

  State state() const { return state_; }
  bool started() const { return started_; }  // any byte of a response arrived
  int status() const { return status_; }
  const std::string& body() const { return body_; }  // at most max_body bytes kept
  // The connection may carry another request: HTTP/1.1 without "Connection: close" (or 1.0
  // with keep-alive), a body with a known end, and nothing after it.
  bool keep_alive() const { return keep_alive_ && leftover_ == 0; }
  size_t leftover() const { return leftover_; }
  const std::string& error() const { return error_; }

 private:
  enum class Phase { kHead, kFixed, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kToClose };
  State Run();
  State Fail(std::string why);
  bool ParseHead(std::string_view head);
  void Keep(std::string_view data);

  size_t max_body_;
  State state_ = State::kMore;
  Phase phase_ = Phase::kHead;
  std::string buf_;  // bytes not parsed yet
  bool started_ = false;
  int status_ = 0;
  bool keep_alive_ = true;
  size_t remaining_ = 0;  // of the fixed body or the current chunk
  std::string body_;
  size_t leftover_ = 0;
  std::string error_;
};

}  // namespace replayer
