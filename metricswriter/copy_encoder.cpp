#include "metricswriter/copy_encoder.h"

#include <bit>
#include <cstring>

namespace mw {
namespace {

constexpr char kHeader[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";  // signature, flags, ext
constexpr size_t kHeaderSize = 19;
constexpr uint32_t kInt8Oid = 20;
constexpr uint32_t kFloat8Oid = 701;

// Network byte order, appended in one call (a push_back per byte showed in the profile).
template <typename T>
void Big(std::string& o, T v) {
  if constexpr (std::endian::native == std::endian::little) {
    if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
  }
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  o.append(b, sizeof(T));
}
void U16(std::string& o, uint16_t v) { Big(o, v); }
void U32(std::string& o, uint32_t v) { Big(o, v); }
void U64(std::string& o, uint64_t v) { Big(o, v); }

// Fields: a length, then the value in network order; -1 = NULL.
void Int8(std::string& o, int64_t v) {
  U32(o, 8);
  U64(o, static_cast<uint64_t>(v));
}
void Int4(std::string& o, int32_t v) {
  U32(o, 4);
  U32(o, static_cast<uint32_t>(v));
}
void Float8(std::string& o, double v) {
  U32(o, 8);
  U64(o, std::bit_cast<uint64_t>(v));
}
void Null(std::string& o) { U32(o, 0xFFFFFFFFu); }
void OptFloat8(std::string& o, const std::optional<double>& v) {
  if (v) {
    Float8(o, *v);
  } else {
    Null(o);
  }
}

// A one-dimensional array without NULLs: ndim, has-null, element type, then length and lower
// bound, then each element as a field. An empty array has zero dimensions.
template <typename T>
void Array(std::string& o, const std::vector<T>& v) {
  const bool empty = v.empty();
  U32(o, static_cast<uint32_t>(12 + (empty ? 0 : 8) + v.size() * 12));
  U32(o, empty ? 0 : 1);
  U32(o, 0);
  U32(o, std::is_same_v<T, double> ? kFloat8Oid : kInt8Oid);
  if (empty) return;
  U32(o, static_cast<uint32_t>(v.size()));
  U32(o, 1);
  for (T x : v) {
    U32(o, 8);
    if constexpr (std::is_same_v<T, double>) {
      U64(o, std::bit_cast<uint64_t>(x));
    } else {
      U64(o, static_cast<uint64_t>(x));
    }
  }
}

void Head(std::string& o, uint16_t fields, const PointHead& p,
          const std::vector<int64_t>& series_ids) {
  U16(o, fields);
  Int8(o, series_ids[p.series]);
  Int8(o, p.start_time);
  Int8(o, p.time);
}

}  // namespace

const char* CopyStatement(PointTable t) {
  switch (t) {
    case kNumberTable:
      return "COPY metrics.number_points (series_id, start_time_unix_nano, time_unix_nano, "
             "value, value_int, flags) FROM STDIN (FORMAT binary)";
    case kHistogramTable:
      return "COPY metrics.histogram_points (series_id, start_time_unix_nano, time_unix_nano, "
             "count, sum, min, max, bounds, counts, flags) FROM STDIN (FORMAT binary)";
    case kExpHistogramTable:
      return "COPY metrics.exp_histogram_points (series_id, start_time_unix_nano, "
             "time_unix_nano, count, sum, min, max, scale, zero_count, zero_threshold, "
             "positive_offset, positive_counts, negative_offset, negative_counts, flags) "
             "FROM STDIN (FORMAT binary)";
    case kSummaryTable:
    case kTables:
      break;
  }
  return "COPY metrics.summary_points (series_id, start_time_unix_nano, time_unix_nano, count, "
         "sum, quantiles, quantile_values, flags) FROM STDIN (FORMAT binary)";
}

void CopyEncoder::Begin() {
  for (int t = 0; t < kTables; ++t) {
    data_[t].assign(kHeader, kHeaderSize);
    rows_[t] = 0;
  }
}

void CopyEncoder::Add(const Batch& b, const std::vector<int64_t>& ids) {
  std::string& n = data_[kNumberTable];
  for (const auto& p : b.numbers) {
    Head(n, 6, p, ids);
    Float8(n, p.value);
    if (p.int_value) {
      Int8(n, *p.int_value);
    } else {
      Null(n);
    }
    Int4(n, static_cast<int32_t>(p.flags));
  }
  rows_[kNumberTable] += b.numbers.size();
  std::string& h = data_[kHistogramTable];
  for (const auto& p : b.histograms) {
    Head(h, 10, p, ids);
    Int8(h, p.count);
    OptFloat8(h, p.sum);
    OptFloat8(h, p.min);
    OptFloat8(h, p.max);
    Array(h, p.bounds);
    Array(h, p.counts);
    Int4(h, static_cast<int32_t>(p.flags));
  }
  rows_[kHistogramTable] += b.histograms.size();
  std::string& x = data_[kExpHistogramTable];
  for (const auto& p : b.exp_histograms) {
    Head(x, 15, p, ids);
    Int8(x, p.count);
    OptFloat8(x, p.sum);
    OptFloat8(x, p.min);
    OptFloat8(x, p.max);
    Int4(x, p.scale);
    Int8(x, p.zero_count);
    Float8(x, p.zero_threshold);
    Int4(x, p.positive_offset);
    Array(x, p.positive_counts);
    Int4(x, p.negative_offset);
    Array(x, p.negative_counts);
    Int4(x, static_cast<int32_t>(p.flags));
  }
  rows_[kExpHistogramTable] += b.exp_histograms.size();
  std::string& s = data_[kSummaryTable];
  for (const auto& p : b.summaries) {
    Head(s, 8, p, ids);
    Int8(s, p.count);
    Float8(s, p.sum);
    Array(s, p.quantiles);
    Array(s, p.quantile_values);
    Int4(s, static_cast<int32_t>(p.flags));
  }
  rows_[kSummaryTable] += b.summaries.size();
}

void CopyEncoder::Finish() {
  for (auto& d : data_) U16(d, 0xFFFF);
}

}  // namespace mw
