#include "metricswriter/otlp_json.h"

#include <algorithm>
#include <cstring>

#include "metricswriter/otlp_json_reader.h"
#include "metricswriter/otlp_text.h"

namespace mw {
namespace {

using json::element;
using json::element_type;
using json::Is;
using json::object;
using json::Path;

bool Temporality(json::Reader& r, element e, const Path& p, mw::Temporality* out) {
  if (e.type() == element_type::STRING) {
    std::string_view s = e.get_string().value_unsafe();
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
  int32_t v = 0;
  if (!r.I32(e, p, &v)) return false;
  if (v < 0 || v > 2) return r.Fail(p, "unknown aggregation temporality " + std::to_string(v));
  *out = static_cast<mw::Temporality>(v);
  return true;
}

// The fields every point kind shares. True when `key` was one of them (and it decoded).
bool Head(json::Reader& r, std::string_view key, element v, const Path& fp, PointHead* h, Series* s,
          bool* handled) {
  *handled = true;
  if (Is(key, "attributes")) return r.KeyValues(v, fp, &s->attributes);
  if (Is(key, "startTimeUnixNano", "start_time_unix_nano")) return r.NonNeg(v, fp, &h->start_time);
  if (Is(key, "timeUnixNano", "time_unix_nano")) return r.NonNeg(v, fp, &h->time);
  if (Is(key, "flags")) {
    uint64_t f = 0;
    if (!r.U64(v, fp, &f)) return false;
    if (f > 0xFFFFFFFFu) return r.Fail(fp, "flags out of uint32 range");
    h->flags = static_cast<uint32_t>(f);
    return true;
  }
  *handled = false;
  return true;
}

bool Counts(json::Reader& r, element v, const Path& fp, std::vector<int64_t>* out) {
  return r.Each(v, fp, [&](element c, const Path& cp) {
    int64_t n = 0;
    if (!r.NonNeg(c, cp, &n)) return false;
    out->push_back(n);
    return true;
  });
}

bool Doubles(json::Reader& r, element v, const Path& fp, std::vector<double>* out) {
  return r.Each(v, fp, [&](element c, const Path& cp) {
    double d = 0;
    if (!r.Dbl(c, cp, &d)) return false;
    out->push_back(d);
    return true;
  });
}

bool OptDbl(json::Reader& r, element v, const Path& fp, std::optional<double>* out) {
  double d = 0;
  if (!r.Dbl(v, fp, &d)) return false;
  *out = d;
  return true;
}

bool Buckets(json::Reader& r, element v, const Path& fp, int32_t* offset,
             std::vector<int64_t>* counts) {
  if (v.is_null()) return true;
  object o;
  if (!r.Obj(v, fp, &o)) return false;
  for (auto [key, f] : o) {
    Path kp{&fp, key};
    if (Is(key, "offset") && !r.I32(f, kp, offset)) return false;
    if (Is(key, "bucketCounts", "bucket_counts") && !Counts(r, f, kp, counts)) return false;
  }
  return true;
}

// Decodes one data point of `base`'s kind into the batch.
bool Point(json::Reader& r, element e, const Path& p, const Series& base, Batch* b) {
  object o;
  if (!r.Obj(e, p, &o)) return false;
  Series s = base;
  s.attributes = "{}";
  NumberPoint n;
  HistogramPoint h;
  ExpHistogramPoint x;
  SummaryPoint m;
  PointHead* head = nullptr;
  switch (base.type) {
    case MetricType::kGauge:
    case MetricType::kSum:
      head = &n;
      break;
    case MetricType::kHistogram:
      head = &h;
      break;
    case MetricType::kExpHistogram:
      head = &x;
      break;
    case MetricType::kSummary:
      head = &m;
      break;
  }
  for (auto [key, v] : o) {
    Path fp{&p, key};
    bool handled = false;
    if (!Head(r, key, v, fp, head, &s, &handled)) return false;
    if (handled) continue;
    bool ok = true;
    switch (base.type) {
      case MetricType::kGauge:
      case MetricType::kSum:
        if (Is(key, "asDouble", "as_double")) {
          ok = r.Dbl(v, fp, &n.value);
          n.int_value.reset();
        } else if (Is(key, "asInt", "as_int")) {
          int64_t i = 0;
          ok = r.I64(v, fp, &i);
          n.int_value = i;
          n.value = static_cast<double>(i);
        }
        break;
      case MetricType::kHistogram:
        if (Is(key, "count")) ok = r.NonNeg(v, fp, &h.count);
        if (Is(key, "sum")) ok = OptDbl(r, v, fp, &h.sum);
        if (Is(key, "min")) ok = OptDbl(r, v, fp, &h.min);
        if (Is(key, "max")) ok = OptDbl(r, v, fp, &h.max);
        if (Is(key, "bucketCounts", "bucket_counts")) ok = Counts(r, v, fp, &h.counts);
        if (Is(key, "explicitBounds", "explicit_bounds")) ok = Doubles(r, v, fp, &h.bounds);
        break;
      case MetricType::kExpHistogram:
        if (Is(key, "count")) ok = r.NonNeg(v, fp, &x.count);
        if (Is(key, "sum")) ok = OptDbl(r, v, fp, &x.sum);
        if (Is(key, "min")) ok = OptDbl(r, v, fp, &x.min);
        if (Is(key, "max")) ok = OptDbl(r, v, fp, &x.max);
        if (Is(key, "scale")) ok = r.I32(v, fp, &x.scale);
        if (Is(key, "zeroCount", "zero_count")) ok = r.NonNeg(v, fp, &x.zero_count);
        if (Is(key, "zeroThreshold", "zero_threshold")) ok = r.Dbl(v, fp, &x.zero_threshold);
        if (Is(key, "positive")) {
          ok = Buckets(r, v, fp, &x.positive_offset, &x.positive_counts);
        }
        if (Is(key, "negative")) {
          ok = Buckets(r, v, fp, &x.negative_offset, &x.negative_counts);
        }
        break;
      case MetricType::kSummary:
        if (Is(key, "count")) ok = r.NonNeg(v, fp, &m.count);
        if (Is(key, "sum")) ok = r.Dbl(v, fp, &m.sum);
        if (Is(key, "quantileValues", "quantile_values")) {
          ok = r.Each(v, fp, [&](element q, const Path& qp) {
            object qo;
            if (!r.Obj(q, qp, &qo)) return false;
            double quantile = 0, value = 0;
            for (auto [qk, qv] : qo) {
              Path qkp{&qp, qk};
              if (Is(qk, "quantile") && !r.Dbl(qv, qkp, &quantile)) return false;
              if (Is(qk, "value") && !r.Dbl(qv, qkp, &value)) return false;
            }
            m.quantiles.push_back(quantile);
            m.quantile_values.push_back(value);
            return true;
          });
        }
        break;
    }
    if (!ok) return false;
  }
  head->series = static_cast<uint32_t>(b->series.size());
  b->series.push_back(std::move(s));
  switch (base.type) {
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

// Room for n more elements, growing at least twice over (many small metrics stay linear).
template <typename T>
void Grow(std::vector<T>& v, size_t n) {
  if (v.capacity() - v.size() < n) v.reserve(std::max(v.size() + n, 2 * v.capacity()));
}

bool Metric(json::Reader& r, element e, const Path& p, uint32_t resource, uint32_t scope,
            Batch* b) {
  object o;
  if (!r.Obj(e, p, &o)) return false;
  Series base;
  base.resource = resource;
  base.scope = scope;
  element data;
  std::string_view data_key;
  // Name, unit and description may come after the data: read them first, then the points.
  for (auto [key, v] : o) {
    Path fp{&p, key};
    std::string_view s;
    if (Is(key, "name") || Is(key, "unit") || Is(key, "description")) {
      if (!r.Str(v, fp, &s)) return false;
      std::string clean = text::Clean(s, &b->nul_replacements);
      (key == "name" ? base.name : key == "unit" ? base.unit : base.description) = clean;
    } else if (Is(key, "gauge") || Is(key, "sum") || Is(key, "histogram") ||
               Is(key, "exponentialHistogram", "exponential_histogram") || Is(key, "summary")) {
      data = v;
      data_key = key;
    }
  }
  if (data_key.empty()) return true;  // a metric with no data (allowed, stores nothing)
  Path dp{&p, data_key};
  if (data_key == "gauge") base.type = MetricType::kGauge;
  if (data_key == "sum") base.type = MetricType::kSum;
  if (data_key == "histogram") base.type = MetricType::kHistogram;
  if (data_key[0] == 'e') base.type = MetricType::kExpHistogram;
  if (data_key == "summary") base.type = MetricType::kSummary;
  if (data.is_null()) return true;
  object d;
  if (!r.Obj(data, dp, &d)) return false;
  element points;
  bool have_points = false;
  for (auto [key, v] : d) {
    Path fp{&dp, key};
    if (Is(key, "dataPoints", "data_points")) {
      points = v;
      have_points = true;
    } else if (Is(key, "aggregationTemporality", "aggregation_temporality")) {
      if (!Temporality(r, v, fp, &base.temporality)) return false;
    } else if (Is(key, "isMonotonic", "is_monotonic")) {
      if (!r.Bool(v, fp, &base.monotonic)) return false;
    }
  }
  if (base.type == MetricType::kGauge || base.type == MetricType::kSummary) {
    base.temporality = Temporality::kUnspecified;  // not part of these kinds
    base.monotonic = false;
  }
  if (base.type != MetricType::kSum) base.monotonic = false;
  if (!have_points) return true;
  if (simdjson::dom::array arr; points.get(arr) == simdjson::SUCCESS) {
    // One series and one point per data point: room for all of them at once.
    const size_t n = arr.size();
    Grow(b->series, n);
    if (base.type == MetricType::kGauge || base.type == MetricType::kSum) Grow(b->numbers, n);
  }
  Path pp{&dp, "dataPoints"};
  return r.Each(points, pp, [&](element pt, const Path& ip) { return Point(r, pt, ip, base, b); });
}

bool ScopeMetrics(json::Reader& r, element e, const Path& p, uint32_t resource, Batch* b) {
  object o;
  if (!r.Obj(e, p, &o)) return false;
  auto scope = static_cast<uint32_t>(b->scopes.size());
  b->scopes.push_back(Scope{"", "", "{}"});
  element metrics;
  bool have = false;
  for (auto [key, v] : o) {
    Path fp{&p, key};
    if (Is(key, "scope") && !v.is_null()) {
      object so;
      if (!r.Obj(v, fp, &so)) return false;
      for (auto [sk, sv] : so) {
        Path sp{&fp, sk};
        std::string_view s;
        if (Is(sk, "name") || Is(sk, "version")) {
          if (!r.Str(sv, sp, &s)) return false;
          (sk == "name" ? b->scopes[scope].name : b->scopes[scope].version) =
              text::Clean(s, &b->nul_replacements);
        } else if (Is(sk, "attributes")) {
          if (!r.KeyValues(sv, sp, &b->scopes[scope].attributes)) return false;
        }
      }
    } else if (Is(key, "metrics")) {
      metrics = v;
      have = true;
    }
  }
  Path mp{&p, "metrics"};
  return !have || r.Each(metrics, mp, [&](element m, const Path& ip) {
    return Metric(r, m, ip, resource, scope, b);
  });
}

bool ResourceMetrics(json::Reader& r, element e, const Path& p, Batch* b) {
  object o;
  if (!r.Obj(e, p, &o)) return false;
  auto resource = static_cast<uint32_t>(b->resources.size());
  b->resources.emplace_back("{}");
  element scopes;
  bool have = false;
  for (auto [key, v] : o) {
    Path fp{&p, key};
    if (Is(key, "resource") && !v.is_null()) {
      object ro;
      if (!r.Obj(v, fp, &ro)) return false;
      element attrs;
      if (ro["attributes"].get(attrs) == simdjson::SUCCESS) {
        Path ap{&fp, "attributes"};
        if (!r.KeyValues(attrs, ap, &b->resources[resource])) return false;
      }
    } else if (Is(key, "scopeMetrics", "scope_metrics")) {
      scopes = v;
      have = true;
    }
  }
  Path sp{&p, "scopeMetrics"};
  return !have || r.Each(scopes, sp, [&](element s, const Path& ip) {
    return ScopeMetrics(r, s, ip, resource, b);
  });
}

}  // namespace

struct JsonDecoder::Impl {
  simdjson::dom::parser parser;
  std::string padded;  // the body plus simdjson's padding, reused
  json::Reader reader;
};

JsonDecoder::JsonDecoder() : impl_(std::make_unique<Impl>()) {}
JsonDecoder::~JsonDecoder() = default;

core::Status JsonDecoder::Decode(std::string_view body, Batch* out) {
  out->Clear();
  Impl& im = *impl_;
  im.padded.resize(body.size() + simdjson::SIMDJSON_PADDING);
  if (!body.empty()) std::memcpy(im.padded.data(), body.data(), body.size());
  std::memset(im.padded.data() + body.size(), 0, simdjson::SIMDJSON_PADDING);
  element root;
  auto err = im.parser.parse(im.padded.data(), body.size(), false).get(root);
  if (err != simdjson::SUCCESS) {
    return core::Error::Invalid(std::string("JSON: ") + simdjson::error_message(err));
  }
  im.reader.Reset(&out->nul_replacements);
  Path top;
  object o;
  if (!im.reader.Obj(root, top, &o)) return core::Error::Invalid(im.reader.error());
  for (auto [key, v] : o) {
    if (!Is(key, "resourceMetrics", "resource_metrics")) continue;
    Path fp{nullptr, key};
    if (!im.reader.Each(v, fp, [&](element rm, const Path& ip) {
          return ResourceMetrics(im.reader, rm, ip, out);
        })) {
      return core::Error::Invalid(im.reader.error());
    }
  }
  return core::Status::Ok();
}

}  // namespace mw
