#include "metricswriter/otlp_wire.h"

#include <cstdint>

namespace mw::wire {
namespace {

enum Kind : uint8_t {
  kNone,  // a scalar or a field we do not know: wire format only
  kString,
  kRequest,
  kResourceMetrics,
  kResource,
  kScopeMetrics,
  kScope,
  kMetric,
  kGauge,
  kSum,
  kHistogram,
  kExpHistogram,
  kSummary,
  kNumberPoint,
  kHistogramPoint,
  kExpHistogramPoint,
  kExpBuckets,
  kSummaryPoint,
  kQuantile,
  kKeyValue,
  kAnyValue,
  kArrayValue,
  kKvList,
};

// What field `number` of a message of kind `m` holds, per the OTLP schema.
Kind Child(Kind m, uint32_t n) {
  switch (m) {
    case kRequest:
      return n == 1 ? kResourceMetrics : kNone;
    case kResourceMetrics:
      return n == 1 ? kResource : n == 2 ? kScopeMetrics : n == 3 ? kString : kNone;
    case kResource:
      return n == 1 ? kKeyValue : kNone;
    case kScopeMetrics:
      return n == 1 ? kScope : n == 2 ? kMetric : n == 3 ? kString : kNone;
    case kScope:
      return n == 1 || n == 2 ? kString : n == 3 ? kKeyValue : kNone;
    case kMetric:
      switch (n) {
        case 1:
        case 2:
        case 3:
          return kString;
        case 5:
          return kGauge;
        case 7:
          return kSum;
        case 9:
          return kHistogram;
        case 10:
          return kExpHistogram;
        case 11:
          return kSummary;
        case 12:
          return kKeyValue;
        default:
          return kNone;
      }
    case kGauge:
    case kSum:
      return n == 1 ? kNumberPoint : kNone;
    case kHistogram:
      return n == 1 ? kHistogramPoint : kNone;
    case kExpHistogram:
      return n == 1 ? kExpHistogramPoint : kNone;
    case kSummary:
      return n == 1 ? kSummaryPoint : kNone;
    case kNumberPoint:
      return n == 7 ? kKeyValue : kNone;
    case kHistogramPoint:
      return n == 9 ? kKeyValue : kNone;
    case kExpHistogramPoint:
      return n == 1 ? kKeyValue : n == 8 || n == 9 ? kExpBuckets : kNone;
    case kSummaryPoint:
      return n == 7 ? kKeyValue : n == 6 ? kQuantile : kNone;
    case kKeyValue:
      return n == 1 ? kString : n == 2 ? kAnyValue : kNone;
    case kAnyValue:
      return n == 1 ? kString : n == 5 ? kArrayValue : n == 6 ? kKvList : kNone;
    case kArrayValue:
      return n == 1 ? kAnyValue : kNone;
    case kKvList:
      return n == 1 ? kKeyValue : kNone;
    default:
      return kNone;
  }
}

class Walker {
 public:
  explicit Walker(std::string_view body) : body_(body) {}

  // Walks [pos, end) as a message of kind m. group: the field number of an open group, or 0.
  bool Message(size_t pos, size_t end, Kind m, int depth, uint32_t group, size_t* stop) {
    if (depth > 100) return Set(pos, "messages nested deeper than 100 levels");
    while (pos < end) {
      size_t field_at = pos;
      uint64_t tag = 0;
      if (!Varint(&pos, end, &tag)) return false;
      auto number = static_cast<uint32_t>(tag >> 3);
      auto type = static_cast<uint32_t>(tag & 7);
      if (tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF) return Set(field_at, "invalid field number");
      switch (type) {
        case 0: {
          uint64_t v = 0;
          if (!Varint(&pos, end, &v)) return false;
          break;
        }
        case 1:
          if (end - pos < 8) return Set(field_at, Field(number) + "truncated fixed64");
          pos += 8;
          break;
        case 5:
          if (end - pos < 4) return Set(field_at, Field(number) + "truncated fixed32");
          pos += 4;
          break;
        case 2: {
          uint64_t len = 0;
          if (!Varint(&pos, end, &len)) return false;
          if (len > end - pos) {
            return Set(field_at, Field(number) + "length " + std::to_string(len) +
                                     " runs past the end of its message");
          }
          size_t sub_end = pos + static_cast<size_t>(len);
          Kind child = Child(m, number);
          if (child == kString && !ValidUtf8(body_.substr(pos, sub_end - pos))) {
            return Set(pos, Field(number) + "string is not valid UTF-8");
          }
          if (child != kString && child != kNone &&
              !Message(pos, sub_end, child, depth + 1, 0, nullptr)) {
            return false;
          }
          pos = sub_end;
          break;
        }
        case 3: {
          size_t after = 0;
          if (!Message(pos, end, kNone, depth + 1, number, &after)) return false;
          pos = after;
          break;
        }
        case 4:
          if (group != number) return Set(field_at, Field(number) + "unmatched end-group tag");
          *stop = pos;
          return true;
        default:
          return Set(field_at, Field(number) + "invalid wire type " + std::to_string(type));
      }
    }
    if (group != 0) return Set(end, "group " + std::to_string(group) + " is not closed");
    return true;
  }

  std::optional<Fault> fault;

 private:
  static std::string Field(uint32_t n) { return "field " + std::to_string(n) + ": "; }

  bool Set(size_t at, std::string what) {
    fault = Fault{at, std::move(what)};
    return false;
  }

  bool Varint(size_t* pos, size_t end, uint64_t* out) {
    size_t start = *pos;
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (*pos >= end) return Set(start, "truncated varint");
      auto b = static_cast<uint8_t>(body_[(*pos)++]);
      if (shift == 63 && b > 1) return Set(start, "varint longer than 64 bits");
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return Set(start, "varint longer than 10 bytes");
  }

  std::string_view body_;
};

}  // namespace

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

std::optional<Fault> FindFault(std::string_view body) {
  Walker w(body);
  w.Message(0, body.size(), kRequest, 0, 0, nullptr);
  return w.fault;
}

}  // namespace mw::wire
