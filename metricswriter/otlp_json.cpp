#include "metricswriter/otlp_json.h"

#include <algorithm>
#include <cstring>

#include "metricswriter/otlp_json_reader.h"
#include "metricswriter/otlp_text.h"

namespace mw {
namespace {

namespace od = simdjson::ondemand;
using json::Field;
using json::Is;
using json::Path;
using json::Value;

Field Read(bool ok) { return ok ? Field::kRead : Field::kFailed; }

// A body above this gives its parser and copy buffers back after it was decoded: one huge
// batch must not keep its size in memory for the life of the process.
constexpr size_t kKeepBuffersUpTo = size_t{4} << 20;

bool ReadTemporality(json::Reader& r, Value v, const Path& p, mw::Temporality* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return r.Fail(p, e);
  if (t == od::json_type::string) {
    std::string_view s;
    if (!r.Str(v, p, &s)) return false;
    if (s == "AGGREGATION_TEMPORALITY_UNSPECIFIED") {
      *out = Temporality::kUnspecified;
    } else if (s == "AGGREGATION_TEMPORALITY_DELTA") {
      *out = Temporality::kDelta;
    } else if (s == "AGGREGATION_TEMPORALITY_CUMULATIVE") {
      *out = Temporality::kCumulative;
    } else {
      return r.Fail(p, "unknown aggregation temporality");
    }
    return true;
  }
  int32_t v32 = 0;
  if (!r.I32(v, p, &v32)) return false;
  if (v32 < 0 || v32 > 2) {
    return r.Fail(p, "unknown aggregation temporality " + std::to_string(v32));
  }
  *out = static_cast<mw::Temporality>(v32);
  return true;
}

bool Counts(json::Reader& r, Value v, const Path& p, std::vector<int64_t>* out) {
  return r.Each(v, p, [&](Value c, const Path& cp) {
    int64_t n = 0;
    if (!r.NonNeg(c, cp, &n)) return false;
    out->push_back(n);
    return true;
  });
}

bool Doubles(json::Reader& r, Value v, const Path& p, std::vector<double>* out) {
  return r.Each(v, p, [&](Value c, const Path& cp) {
    double d = 0;
    if (!r.Dbl(c, cp, &d)) return false;
    out->push_back(d);
    return true;
  });
}

bool OptDbl(json::Reader& r, Value v, const Path& p, std::optional<double>* out) {
  double d = 0;
  if (!r.Dbl(v, p, &d)) return false;
  *out = d;
  return true;
}

bool Buckets(json::Reader& r, Value v, const Path& p, int32_t* offset,
             std::vector<int64_t>* counts) {
  bool is_null = false;
  if (!r.Null(v, p, &is_null)) return false;
  if (is_null) return true;
  return r.Fields(v, p, [&](std::string_view key, Value& f, const Path& fp) {
    if (Is(key, "offset")) return Read(r.I32(f, fp, offset));
    if (Is(key, "bucketCounts", "bucket_counts")) return Read(Counts(r, f, fp, counts));
    return Field::kIgnored;
  });
}

bool Quantiles(json::Reader& r, Value v, const Path& p, SummaryPoint* m) {
  return r.Each(v, p, [&](Value q, const Path& qp) {
    double quantile = 0, value = 0;
    if (!r.Fields(q, qp, [&](std::string_view key, Value& f, const Path& fp) {
          if (Is(key, "quantile")) return Read(r.Dbl(f, fp, &quantile));
          if (Is(key, "value")) return Read(r.Dbl(f, fp, &value));
          return Field::kIgnored;
        })) {
      return false;
    }
    m->quantiles.push_back(quantile);
    m->quantile_values.push_back(value);
    return true;
  });
}

// One data point of a metric of `type`; its series is added once its attributes are known
// (they may come after the values).
bool Point(json::Reader& r, Value v, const Path& p, uint32_t metric, MetricType type, Batch* b,
           std::string* attributes) {
  *attributes = "{}";
  NumberPoint n;
  HistogramPoint h;
  ExpHistogramPoint x;
  SummaryPoint m;
  PointHead* head = &n;
  if (type == MetricType::kHistogram) head = &h;
  if (type == MetricType::kExpHistogram) head = &x;
  if (type == MetricType::kSummary) head = &m;
  bool ok = r.Fields(v, p, [&](std::string_view key, Value& f, const Path& fp) {
    if (Is(key, "attributes")) return Read(r.KeyValues(f, fp, attributes));
    if (Is(key, "startTimeUnixNano", "start_time_unix_nano")) {
      return Read(r.NonNeg(f, fp, &head->start_time));
    }
    if (Is(key, "timeUnixNano", "time_unix_nano")) return Read(r.NonNeg(f, fp, &head->time));
    if (Is(key, "flags")) {
      uint64_t flags = 0;
      if (!r.U64(f, fp, &flags)) return Field::kFailed;
      if (flags > 0xFFFFFFFFu) {
        r.Fail(fp, "value " + std::to_string(flags) + " is out of the uint32 range");
        return Field::kFailed;
      }
      head->flags = static_cast<uint32_t>(flags);
      return Field::kRead;
    }
    switch (type) {
      case MetricType::kGauge:
      case MetricType::kSum:
        if (Is(key, "asDouble", "as_double")) {
          n.int_value.reset();
          return Read(r.Dbl(f, fp, &n.value));
        }
        if (Is(key, "asInt", "as_int")) {
          int64_t i = 0;
          if (!r.I64(f, fp, &i)) return Field::kFailed;
          n.int_value = i;
          n.value = static_cast<double>(i);
          return Field::kRead;
        }
        break;
      case MetricType::kHistogram:
        if (Is(key, "count")) return Read(r.NonNeg(f, fp, &h.count));
        if (Is(key, "sum")) return Read(OptDbl(r, f, fp, &h.sum));
        if (Is(key, "min")) return Read(OptDbl(r, f, fp, &h.min));
        if (Is(key, "max")) return Read(OptDbl(r, f, fp, &h.max));
        if (Is(key, "bucketCounts", "bucket_counts")) return Read(Counts(r, f, fp, &h.counts));
        if (Is(key, "explicitBounds", "explicit_bounds")) {
          return Read(Doubles(r, f, fp, &h.bounds));
        }
        break;
      case MetricType::kExpHistogram:
        if (Is(key, "count")) return Read(r.NonNeg(f, fp, &x.count));
        if (Is(key, "sum")) return Read(OptDbl(r, f, fp, &x.sum));
        if (Is(key, "min")) return Read(OptDbl(r, f, fp, &x.min));
        if (Is(key, "max")) return Read(OptDbl(r, f, fp, &x.max));
        if (Is(key, "scale")) return Read(r.I32(f, fp, &x.scale));
        if (Is(key, "zeroCount", "zero_count")) return Read(r.NonNeg(f, fp, &x.zero_count));
        if (Is(key, "zeroThreshold", "zero_threshold")) {
          return Read(r.Dbl(f, fp, &x.zero_threshold));
        }
        if (Is(key, "positive")) {
          return Read(Buckets(r, f, fp, &x.positive_offset, &x.positive_counts));
        }
        if (Is(key, "negative")) {
          return Read(Buckets(r, f, fp, &x.negative_offset, &x.negative_counts));
        }
        break;
      case MetricType::kSummary:
        if (Is(key, "count")) return Read(r.NonNeg(f, fp, &m.count));
        if (Is(key, "sum")) return Read(r.Dbl(f, fp, &m.sum));
        if (Is(key, "quantileValues", "quantile_values")) return Read(Quantiles(r, f, fp, &m));
        break;
    }
    return Field::kIgnored;  // exemplars and the rest: read (and checked) but not stored
  });
  if (!ok) return false;
  head->series = b->AddSeries(metric, *attributes);
  switch (type) {
    case MetricType::kGauge:
    case MetricType::kSum:
      b->numbers.push_back(std::move(n));
      break;
    case MetricType::kHistogram:
      b->histograms.push_back(std::move(h));
      break;
    case MetricType::kExpHistogram:
      b->exp_histograms.push_back(std::move(x));
      break;
    case MetricType::kSummary:
      b->summaries.push_back(std::move(m));
      break;
  }
  return true;
}

// Room for n more elements, growing at least twice over (many small metrics stay linear, and
// one metric of 250,000 points gets its arrays in one allocation each).
template <typename T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.capacity() - v.size() < n) v.reserve(std::max(v.size() + n, 2 * v.capacity()));
}

void GrowFor(Batch* b, MetricType type, size_t n) {
  Grow(b->series, n);
  switch (type) {
    case MetricType::kGauge:
    case MetricType::kSum:
      Grow(b->numbers, n);
      break;
    case MetricType::kHistogram:
      Grow(b->histograms, n);
      break;
    case MetricType::kExpHistogram:
      Grow(b->exp_histograms, n);
      break;
    case MetricType::kSummary:
      Grow(b->summaries, n);
      break;
  }
}

// Bodies above this count their data points before reading them, to reserve the arrays at
// once (a pass over the array's structure: not worth it for the usual few-KiB batch, whose
// arrays grow by doubling without a noticeable cost).
constexpr size_t kCountPointsAbove = 256 * 1024;

// The object under "gauge", "sum", ... of metric `mi`.
bool Data(json::Reader& r, Value v, const Path& p, uint32_t mi, MetricType type, bool count,
          Batch* b) {
  std::string attributes;  // one buffer for every point's attribute text
  return r.Fields(v, p, [&](std::string_view key, Value& f, const Path& fp) {
    if (Is(key, "dataPoints", "data_points")) {
      size_t n = 0;
      bool first = count;
      auto point = [&](Value pt, const Path& ip) {
        if (first) {
          GrowFor(b, type, n);
          first = false;
        }
        return Point(r, pt, ip, mi, type, b, &attributes);
      };
      return Read(count ? r.Each(f, fp, point, &n) : r.Each(f, fp, point));
    }
    if (Is(key, "aggregationTemporality", "aggregation_temporality")) {
      return Read(ReadTemporality(r, f, fp, &b->metrics[mi].temporality));
    }
    if (Is(key, "isMonotonic", "is_monotonic")) {
      return Read(r.Bool(f, fp, &b->metrics[mi].monotonic));
    }
    return Field::kIgnored;
  });
}

bool DataKind(std::string_view key, mw::MetricType* type) {
  if (Is(key, "gauge")) {
    *type = MetricType::kGauge;
  } else if (Is(key, "sum")) {
    *type = MetricType::kSum;
  } else if (Is(key, "histogram")) {
    *type = MetricType::kHistogram;
  } else if (Is(key, "exponentialHistogram", "exponential_histogram")) {
    *type = MetricType::kExpHistogram;
  } else if (Is(key, "summary")) {
    *type = MetricType::kSummary;
  } else {
    return false;
  }
  return true;
}

bool ReadMetric(json::Reader& r, Value v, const Path& p, uint32_t resource, uint32_t scope,
                bool count, Batch* b) {
  const auto mi = static_cast<uint32_t>(b->metrics.size());
  b->metrics.emplace_back();
  b->metrics[mi].resource = resource;
  b->metrics[mi].scope = scope;
  bool have_data = false;
  // Name, unit and description may come after the points: the points refer to the metric by
  // index, so the order does not matter.
  bool ok = r.Fields(v, p, [&](std::string_view key, Value& f, const Path& fp) {
    if (Is(key, "name") || Is(key, "unit") || Is(key, "description")) {
      std::string_view s;
      if (!r.Str(f, fp, &s)) return Field::kFailed;
      mw::Metric& m = b->metrics[mi];
      (key == "name"   ? m.name
       : key == "unit" ? m.unit
                       : m.description) = text::Clean(s, &b->nul_replacements);
      return Field::kRead;
    }
    mw::MetricType type{};
    if (!DataKind(key, &type)) return Field::kIgnored;
    bool is_null = false;
    if (!r.Null(f, fp, &is_null)) return Field::kFailed;
    if (is_null) return Field::kRead;
    if (have_data) {
      r.Fail(fp,
             "a metric holds one of gauge, sum, histogram, exponentialHistogram and "
             "summary, not two");
      return Field::kFailed;
    }
    have_data = true;
    b->metrics[mi].type = type;
    return Read(Data(r, f, fp, mi, type, count, b));
  });
  if (!ok) return false;
  mw::Metric& m = b->metrics[mi];
  if (m.type == MetricType::kGauge || m.type == MetricType::kSummary) {
    m.temporality = Temporality::kUnspecified;  // not part of these kinds
  }
  if (m.type != MetricType::kSum) m.monotonic = false;
  return true;
}

bool ScopeMetrics(json::Reader& r, Value v, const Path& p, uint32_t resource, bool count,
                  Batch* b) {
  const auto scope = static_cast<uint32_t>(b->scopes.size());
  b->scopes.push_back(Scope{"", "", "{}"});
  return r.Fields(v, p, [&](std::string_view key, Value& f, const Path& fp) {
    if (Is(key, "scope")) {
      bool is_null = false;
      if (!r.Null(f, fp, &is_null)) return Field::kFailed;
      if (is_null) return Field::kRead;
      return Read(r.Fields(f, fp, [&](std::string_view sk, Value& sv, const Path& sp) {
        if (Is(sk, "name") || Is(sk, "version")) {
          std::string_view s;
          if (!r.Str(sv, sp, &s)) return Field::kFailed;
          (sk == "name" ? b->scopes[scope].name : b->scopes[scope].version) =
              text::Clean(s, &b->nul_replacements);
          return Field::kRead;
        }
        if (Is(sk, "attributes")) return Read(r.KeyValues(sv, sp, &b->scopes[scope].attributes));
        return Field::kIgnored;
      }));
    }
    if (Is(key, "metrics")) {
      return Read(r.Each(f, fp, [&](Value m, const Path& ip) {
        return ReadMetric(r, m, ip, resource, scope, count, b);
      }));
    }
    return Field::kIgnored;
  });
}

bool ResourceMetrics(json::Reader& r, Value v, const Path& p, bool count, Batch* b) {
  const auto resource = static_cast<uint32_t>(b->resources.size());
  b->resources.emplace_back("{}");
  return r.Fields(v, p, [&](std::string_view key, Value& f, const Path& fp) {
    if (Is(key, "resource")) {
      bool is_null = false;
      if (!r.Null(f, fp, &is_null)) return Field::kFailed;
      if (is_null) return Field::kRead;
      return Read(r.Fields(f, fp, [&](std::string_view rk, Value& rv, const Path& rp) {
        if (Is(rk, "attributes")) return Read(r.KeyValues(rv, rp, &b->resources[resource]));
        return Field::kIgnored;
      }));
    }
    if (Is(key, "scopeMetrics", "scope_metrics")) {
      return Read(r.Each(f, fp, [&](Value s, const Path& ip) {
        return ScopeMetrics(r, s, ip, resource, count, b);
      }));
    }
    return Field::kIgnored;
  });
}

}  // namespace

struct JsonDecoder::Impl {
  od::parser parser;
  std::string padded;  // the body plus simdjson's padding, reused
  json::Reader reader;

  common::Status Decode(std::string_view body, Batch* out);
};

common::Status JsonDecoder::Impl::Decode(std::string_view body, Batch* out) {
  padded.resize(body.size() + simdjson::SIMDJSON_PADDING);
  if (!body.empty()) std::memcpy(padded.data(), body.data(), body.size());
  std::memset(padded.data() + body.size(), 0, simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (auto err = parser.iterate(padded.data(), body.size(), padded.size()).get(doc)) {
    return common::Error::Invalid(std::string("JSON: ") + simdjson::error_message(err));
  }
  Value root;
  if (auto err = doc.get_value().get(root)) {
    return common::Error::Invalid(std::string("JSON: ") + simdjson::error_message(err));
  }
  reader.Reset(&out->nul_replacements);
  Path top;
  const bool count = body.size() > kCountPointsAbove;
  bool ok = reader.Fields(root, top, [&](std::string_view key, Value& v, const Path& fp) {
    if (!Is(key, "resourceMetrics", "resource_metrics")) return Field::kIgnored;
    return Read(reader.Each(v, fp, [&](Value rm, const Path& ip) {
      return ResourceMetrics(reader, rm, ip, count, out);
    }));
  });
  if (!ok) return common::Error::Invalid(reader.error());
  const char* rest = nullptr;
  if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS) {
    return common::Error::Invalid("JSON: content after the end of the document");
  }
  if (out->attribute_text.size() >= kMaxAttributeText) {
    return common::Error::Invalid("JSON: the attributes of this batch are too large to store");
  }
  return common::Status::Ok();
}

JsonDecoder::JsonDecoder() : impl_(std::make_unique<Impl>()) {}
JsonDecoder::~JsonDecoder() = default;

common::Status JsonDecoder::Decode(std::string_view body, Batch* out) {
  out->Clear();
  common::Status s = impl_->Decode(body, out);
  if (body.size() > kKeepBuffersUpTo) {
    impl_->parser = od::parser{};
    std::string().swap(impl_->padded);
  }
  return s;
}

}  // namespace mw
