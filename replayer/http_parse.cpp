#include "replayer/http_parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "replayer/http_check.h"

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

// Trims optional whitespace (SP, HTAB) around a field value.
std::string_view TrimOws(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Splits "name: value": false when the name is not a token (no whitespace before the colon,
// no obs-fold) or the value holds a control character.
bool SplitField(std::string_view line, std::string_view& name, std::string_view& value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  name = line.substr(0, colon);
  value = TrimOws(line.substr(colon + 1));
  return IsValidHeaderName(name) && IsValidHeaderValue(value);
}

}  // namespace

std::optional<StatusLine> ParseStatusLine(std::string_view line) {
  // HTTP/1.x SP 3DIGIT [SP reason-phrase]
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return std::nullopt;
  if (line[7] != '0' && line[7] != '1') return std::nullopt;
  for (size_t i = 9; i < 12; ++i)
    if (line[i] < '0' || line[i] > '9') return std::nullopt;
  if (line.size() > 12 && line[12] != ' ') return std::nullopt;
  if (line.size() > 13 && !IsValidHeaderValue(line.substr(13))) return std::nullopt;
  StatusLine s;
  s.minor = line[7] - '0';
  s.code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (s.code < 100) return std::nullopt;
  return s;
}

bool IsValidFieldLine(std::string_view line) {
  std::string_view name, value;
  return SplitField(line, name, value);
}

bool ResponseHead::Fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
  return false;
}

bool ResponseHead::AddField(std::string_view line) {
  if (!error_.empty()) return false;
  std::string_view name, value;
  if (!SplitField(line, name, value)) {
    return Fail(line.find(':') == std::string_view::npos
                    ? "a header line has no colon"
                    : "a header field is malformed (whitespace before the colon, or a control "
                      "character)");
  }
  if (IEquals(name, "Content-Length")) {
    size_t n = 0;
    auto [q, err] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || err != std::errc() || q != value.data() + value.size())
      return Fail("Content-Length is not one decimal number");
    if (length_ && *length_ != n) return Fail("two different Content-Length values");
    length_ = n;
  } else if (IEquals(name, "Transfer-Encoding")) {
    // Only chunked is understood; any other coding (or chunked twice) would leave the body's
    // end unknown or undecoded.
    if (chunked_ || !IEquals(value, "chunked"))
      return Fail("unsupported Transfer-Encoding (only a single chunked is accepted)");
    chunked_ = true;
  } else if (IEquals(name, "Connection")) {
    if (HasToken(value, "close")) keep_ = false;
    if (HasToken(value, "keep-alive") && !keep_.has_value()) keep_ = true;
  }
  return true;
}

bool ResponseHead::Finish() {
  if (!error_.empty()) return false;
  if (chunked_ && length_) return Fail("both Transfer-Encoding and Content-Length");
  return true;
}

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
  auto status = ParseStatusLine(head.substr(0, eol));
  if (!status) {
    error_ = "the answer is not an HTTP/1.0 or 1.1 status line";
    return false;
  }
  status_ = status->code;
  ResponseHead fields;
  std::string_view rest = eol == std::string_view::npos ? "" : head.substr(eol + 2);
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    fields.AddField(rest.substr(0, e));
    rest = e == std::string_view::npos ? "" : rest.substr(e + 2);
  }
  if (!fields.Finish()) {
    error_ = fields.error();
    return false;
  }
  keep_alive_ = fields.connection_keep_alive().value_or(status->minor == 1);
  int code = status->code;
  if (code < 200) return true;  // interim: the caller skips it
  if (code == 204 || code == 304) {
    phase_ = Phase::kFixed;
    remaining_ = 0;
  } else if (fields.chunked()) {
    phase_ = Phase::kChunkSize;
  } else if (fields.length()) {
    phase_ = Phase::kFixed;
    remaining_ = *fields.length();
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
        if (!ParseHead(rest.substr(0, end))) return Fail(error_);
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
        if (eol == 0) {
          pos += 2;
          return done();  // the empty line ends the message
        }
        if (!IsValidFieldLine(rest.substr(0, eol))) return Fail("a trailer field is malformed");
        pos += eol + 2;
        continue;
      }
      case Phase::kToClose:
        return state_;
    }
  }
}

}  // namespace replayer
