#include "replayer/http_parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace replayer {
namespace {

constexpr size_t kMaxHead = 64 * 1024;  // a response head larger than this is not Umami

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// True when the comma-separated list `value` holds `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (IEquals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

void HttpResponseParser::Reset() {
  state_ = State::kMore;
  phase_ = Phase::kHead;
  buf_.clear();
  started_ = false;
  status_ = 0;
  keep_alive_ = true;
  remaining_ = 0;
  body_.clear();
  leftover_ = 0;
  error_.clear();
}

HttpResponseParser::State HttpResponseParser::Fail(std::string why) {
  error_ = std::move(why);
  keep_alive_ = false;
  return state_ = State::kError;
}

void HttpResponseParser::Keep(std::string_view data) {
  if (body_.size() < max_body_) body_.append(data.substr(0, max_body_ - body_.size()));
}

HttpResponseParser::State HttpResponseParser::Feed(std::string_view bytes) {
  if (state_ != State::kMore) {
    leftover_ += bytes.size();
    return state_;
  }
  if (!bytes.empty()) started_ = true;
  if (phase_ == Phase::kToClose) {
    Keep(bytes);
    return state_;
  }
  buf_.append(bytes);
  return Run();
}

HttpResponseParser::State HttpResponseParser::Finish() {
  if (state_ != State::kMore) return state_;
  if (phase_ == Phase::kToClose) {
    keep_alive_ = false;
    return state_ = State::kDone;
  }
  return Fail(started_ ? "the connection closed in the middle of the response"
                       : "the connection closed before any response");
}

bool HttpResponseParser::ParseHead(std::string_view head) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  // HTTP/1.x SP 3DIGIT [SP reason]
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return false;
  bool http10 = line[7] == '0';
  int code = 0;
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, code);
  if (ec != std::errc() || p != line.data() + 12 || code < 100 || code > 999) return false;
  status_ = code;
  bool chunked = false;
  bool have_length = false;
  size_t length = 0;
  std::optional<bool> conn_keep;
  std::string_view rest = eol == std::string_view::npos ? "" : head.substr(eol + 2);
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    std::string_view field = rest.substr(0, e);
    rest = e == std::string_view::npos ? "" : rest.substr(e + 2);
    size_t colon = field.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view name = field.substr(0, colon);
    std::string_view value = field.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (IEquals(name, "Content-Length")) {
      size_t n = 0;
      auto [q, err] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (err != std::errc() || q != value.data() + value.size()) return false;
      if (have_length && n != length) return false;  // conflicting lengths: not safe to reuse
      have_length = true;
      length = n;
    } else if (IEquals(name, "Transfer-Encoding")) {
      chunked = chunked || HasToken(value, "chunked");
    } else if (IEquals(name, "Connection")) {
      if (HasToken(value, "close")) conn_keep = false;
      if (HasToken(value, "keep-alive") && !conn_keep.has_value()) conn_keep = true;
    }
  }
  keep_alive_ = conn_keep.value_or(!http10);
  if (code < 200) return true;  // interim: the caller skips it
  if (code == 204 || code == 304) {
    phase_ = Phase::kFixed;
    remaining_ = 0;
  } else if (chunked) {
    phase_ = Phase::kChunkSize;
  } else if (have_length) {
    phase_ = Phase::kFixed;
    remaining_ = length;
  } else {
    phase_ = Phase::kToClose;
    keep_alive_ = false;
  }
  return true;
}

HttpResponseParser::State HttpResponseParser::Run() {
  size_t pos = 0;
  auto done = [&] {
    leftover_ = buf_.size() - pos;
    buf_.clear();
    return state_ = State::kDone;
  };
  while (true) {
    std::string_view rest(buf_.data() + pos, buf_.size() - pos);
    switch (phase_) {
      case Phase::kHead: {
        size_t end = rest.find("\r\n\r\n");
        if (end == std::string_view::npos) {
          if (rest.size() > kMaxHead) return Fail("the response head is larger than 64 KiB");
          buf_.erase(0, pos);
          return state_;
        }
        if (!ParseHead(rest.substr(0, end))) return Fail("the answer is not an HTTP/1.x response");
        pos += end + 4;
        if (status_ < 200 && status_ != 101) {
          phase_ = Phase::kHead;  // 1xx: the final response follows
          continue;
        }
        if (status_ == 101) return Fail("unexpected 101 Switching Protocols");
        if (phase_ == Phase::kToClose) {
          Keep(std::string_view(buf_.data() + pos, buf_.size() - pos));
          buf_.clear();
          return state_;
        }
        continue;
      }
      case Phase::kFixed: {
        size_t n = std::min(remaining_, rest.size());
        Keep(rest.substr(0, n));
        remaining_ -= n;
        pos += n;
        if (remaining_ == 0) return done();
        buf_.clear();
        return state_;
      }
      case Phase::kChunkSize: {
        size_t eol = rest.find("\r\n");
        if (eol == std::string_view::npos) {
          if (rest.size() > 1024) return Fail("a chunk size line is too long");
          buf_.erase(0, pos);
          return state_;
        }
        std::string_view line = rest.substr(0, std::min(eol, rest.find(';')));
        while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
        size_t size = 0;
        auto [q, err] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
        if (line.empty() || err != std::errc() || q != line.data() + line.size()) {
          return Fail("a chunk size is not hexadecimal");
        }
        pos += eol + 2;
        remaining_ = size;
        phase_ = size == 0 ? Phase::kTrailer : Phase::kChunkData;
        continue;
      }
      case Phase::kChunkData: {
        size_t n = std::min(remaining_, rest.size());
        Keep(rest.substr(0, n));
        remaining_ -= n;
        pos += n;
        if (remaining_ > 0) {
          buf_.clear();
          return state_;
        }
        phase_ = Phase::kChunkDataEnd;
        continue;
      }
      case Phase::kChunkDataEnd: {
        if (rest.size() < 2) {
          buf_.erase(0, pos);
          return state_;
        }
        if (rest.substr(0, 2) != "\r\n") return Fail("a chunk does not end with CRLF");
        pos += 2;
        phase_ = Phase::kChunkSize;
        continue;
      }
      case Phase::kTrailer: {
        size_t eol = rest.find("\r\n");
        if (eol == std::string_view::npos) {
          if (rest.size() > kMaxHead) return Fail("the trailer is larger than 64 KiB");
          buf_.erase(0, pos);
          return state_;
        }
        pos += eol + 2;
        if (eol == 0) return done();  // the empty line ends the message
        continue;
      }
      case Phase::kToClose:
        return state_;
    }
  }
}

}  // namespace replayer
