// Incremental parser of one HTTP/1.1 response (RFC 9112): status line, header fields, and a
// body framed by Content-Length, the chunked transfer coding, or the end of the connection.
//
// Pure: no I/O, no clock; the HTTP pool feeds it what a connection reads. Not thread-safe: one
// parser per connection, reused (Reset) for the next response on it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace replayer {

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
