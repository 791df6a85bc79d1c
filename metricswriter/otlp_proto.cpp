#include "metricswriter/otlp_proto.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include "common/base64.h"
#include "metricswriter/otlp_text.h"
#include "metricswriter/otlp_wire.h"
#include "metricswriter/proto/otlp_metrics.pb.h"

namespace mw {
namespace {

namespace pb = ::mw::otlp;
using google::protobuf::RepeatedPtrField;

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

class Converter {
 public:
  explicit Converter(Batch* b) : b_(b) {}

  std::string error;

  void AnyValue(const pb::AnyValue& v, std::string& out) {
    switch (v.value_case()) {
      case pb::AnyValue::kStringValue:
        text::AppendString(out, v.string_value(), &b_->nul_replacements);
        break;
      case pb::AnyValue::kBoolValue:
        out += v.bool_value() ? "true" : "false";
        break;
      case pb::AnyValue::kIntValue:
        text::AppendInt(out, v.int_value());
        break;
      case pb::AnyValue::kDoubleValue:
        text::AppendDouble(out, v.double_value());
        break;
      case pb::AnyValue::kBytesValue:
        out += '"';
        common::AppendBase64(out, v.bytes_value());
        out += '"';
        break;
      case pb::AnyValue::kArrayValue: {
        out += '[';
        bool first = true;
        for (const auto& item : v.array_value().values()) {
          if (!first) out += ',';
          first = false;
          AnyValue(item, out);
        }
        out += ']';
        break;
      }
      case pb::AnyValue::kKvlistValue:
        out += Attributes(v.kvlist_value().values());
        break;
      case pb::AnyValue::VALUE_NOT_SET:
        out += "null";
        break;
    }
  }

  std::string Attributes(const RepeatedPtrField<pb::KeyValue>& kvs) {
    std::vector<text::Member> members;
    members.reserve(static_cast<size_t>(kvs.size()));
    for (const auto& kv : kvs) {
      text::Member m;
      m.key = kv.key();
      if (kv.has_value()) {
        AnyValue(kv.value(), m.value);
      } else {
        m.value = "null";
      }
      members.push_back(std::move(m));
    }
    return text::Object(members, &b_->nul_replacements);
  }

  template <typename P>
  bool Head(const P& p, const mw::Metric& base, PointHead* h) {
    if (p.start_time_unix_nano() > kInt64Max) {
      return Fail(base, "startTimeUnixNano", std::to_string(p.start_time_unix_nano()));
    }
    if (p.time_unix_nano() > kInt64Max) {
      return Fail(base, "timeUnixNano", std::to_string(p.time_unix_nano()));
    }
    h->start_time = static_cast<int64_t>(p.start_time_unix_nano());
    h->time = static_cast<int64_t>(p.time_unix_nano());
    h->flags = p.flags();
    if (p.attributes().empty()) {
      h->series = b_->AddSeries(metric_, "{}");
    } else {
      h->series = b_->AddSeries(metric_, Attributes(p.attributes()));
    }
    return true;
  }

  bool Count(uint64_t v, const mw::Metric& base, const char* field, int64_t* out) {
    if (v > kInt64Max) return Fail(base, field, std::to_string(v));
    *out = static_cast<int64_t>(v);
    return true;
  }

  template <typename R>
  bool Counts(const R& in, const mw::Metric& base, const char* field, std::vector<int64_t>* out) {
    out->reserve(static_cast<size_t>(in.size()));
    for (uint64_t v : in) {
      int64_t c = 0;
      if (!Count(v, base, field, &c)) return false;
      out->push_back(c);
    }
    return true;
  }

  bool Temporality(int v, const mw::Metric& base, mw::Temporality* out) {
    if (v < 0 || v > 2) {
      if (error.empty()) {
        error = "protobuf: metric " + base.name + ": unknown aggregation temporality " +
                std::to_string(v);
      }
      return false;
    }
    *out = static_cast<mw::Temporality>(v);
    return true;
  }

  bool ConvertMetric(const pb::Metric& m, uint32_t resource, uint32_t scope) {
    metric_ = static_cast<uint32_t>(b_->metrics.size());
    b_->metrics.emplace_back();
    mw::Metric& base = b_->metrics.back();
    base.resource = resource;
    base.scope = scope;
    base.name = text::Clean(m.name(), &b_->nul_replacements);
    base.unit = text::Clean(m.unit(), &b_->nul_replacements);
    base.description = text::Clean(m.description(), &b_->nul_replacements);
    switch (m.data_case()) {
      case pb::Metric::kGauge:
        base.type = MetricType::kGauge;
        return Numbers(m.gauge().data_points(), base);
      case pb::Metric::kSum:
        base.type = MetricType::kSum;
        base.monotonic = m.sum().is_monotonic();
        return Temporality(m.sum().aggregation_temporality(), base, &base.temporality) &&
               Numbers(m.sum().data_points(), base);
      case pb::Metric::kHistogram:
        base.type = MetricType::kHistogram;
        if (!Temporality(m.histogram().aggregation_temporality(), base, &base.temporality)) {
          return false;
        }
        Grow(m.histogram().data_points().size(), &b_->histograms);
        for (const auto& p : m.histogram().data_points()) {
          HistogramPoint h;
          if (!Head(p, base, &h) || !Count(p.count(), base, "count", &h.count) ||
              !Counts(p.bucket_counts(), base, "bucketCounts", &h.counts)) {
            return false;
          }
          if (p.has_sum()) h.sum = p.sum();
          if (p.has_min()) h.min = p.min();
          if (p.has_max()) h.max = p.max();
          h.bounds.assign(p.explicit_bounds().begin(), p.explicit_bounds().end());
          b_->histograms.push_back(std::move(h));
        }
        return true;
      case pb::Metric::kExponentialHistogram:
        base.type = MetricType::kExpHistogram;
        if (!Temporality(m.exponential_histogram().aggregation_temporality(), base,
                         &base.temporality)) {
          return false;
        }
        Grow(m.exponential_histogram().data_points().size(), &b_->exp_histograms);
        for (const auto& p : m.exponential_histogram().data_points()) {
          ExpHistogramPoint x;
          if (!Head(p, base, &x) || !Count(p.count(), base, "count", &x.count) ||
              !Count(p.zero_count(), base, "zeroCount", &x.zero_count) ||
              !Counts(p.positive().bucket_counts(), base, "positive.bucketCounts",
                      &x.positive_counts) ||
              !Counts(p.negative().bucket_counts(), base, "negative.bucketCounts",
                      &x.negative_counts)) {
            return false;
          }
          if (p.has_sum()) x.sum = p.sum();
          if (p.has_min()) x.min = p.min();
          if (p.has_max()) x.max = p.max();
          x.scale = p.scale();
          x.zero_threshold = p.zero_threshold();
          x.positive_offset = p.positive().offset();
          x.negative_offset = p.negative().offset();
          b_->exp_histograms.push_back(std::move(x));
        }
        return true;
      case pb::Metric::kSummary:
        base.type = MetricType::kSummary;
        Grow(m.summary().data_points().size(), &b_->summaries);
        for (const auto& p : m.summary().data_points()) {
          SummaryPoint s;
          if (!Head(p, base, &s) || !Count(p.count(), base, "count", &s.count)) return false;
          s.sum = p.sum();
          s.quantiles.reserve(static_cast<size_t>(p.quantile_values().size()));
          s.quantile_values.reserve(static_cast<size_t>(p.quantile_values().size()));
          for (const auto& q : p.quantile_values()) {
            s.quantiles.push_back(q.quantile());
            s.quantile_values.push_back(q.value());
          }
          b_->summaries.push_back(std::move(s));
        }
        return true;
      case pb::Metric::DATA_NOT_SET:
        return true;  // a metric with no data stores nothing
    }
    return true;
  }

 private:
  // A value the OTLP type allows that cannot be stored (an unsigned 64-bit count or time
  // above bigint's range): names the field and the value.
  bool Fail(const mw::Metric& base, const char* field, const std::string& value) {
    if (error.empty()) {
      error = "protobuf: metric " + base.name + ": " + field + " " + value +
              " is above 2^63-1 and cannot be stored";
    }
    return false;
  }

  // Room for the points of one metric at once: no doubling on the way (a batch of 250,000
  // points would briefly hold one and a half copies of its arrays).
  template <typename T>
  void Grow(int n, std::vector<T>* v) {
    const auto more = static_cast<size_t>(n);
    if (v->capacity() - v->size() < more) v->reserve(v->size() + more);
    if (b_->series.capacity() - b_->series.size() < more) {
      b_->series.reserve(b_->series.size() + more);
    }
  }

  bool Numbers(const RepeatedPtrField<pb::NumberDataPoint>& points, const mw::Metric& base) {
    Grow(points.size(), &b_->numbers);
    for (const auto& p : points) {
      NumberPoint n;
      if (!Head(p, base, &n)) return false;
      if (p.value_case() == pb::NumberDataPoint::kAsInt) {
        n.int_value = p.as_int();
        n.value = static_cast<double>(p.as_int());
      } else {
        n.value = p.as_double();
      }
      b_->numbers.push_back(std::move(n));
    }
    return true;
  }

  Batch* b_;
  uint32_t metric_ = 0;  // the metric being converted
};

}  // namespace

struct ProtoDecoder::Impl {
  // The first arena block of every decode: a batch of the usual size (a few KiB) parses
  // without a malloc, and a huge one gives all its memory back when the decode ends (a reused
  // message would keep a cleared object for every point it ever held).
  std::unique_ptr<char[]> first_block{new char[kFirstBlock]};
  static constexpr size_t kFirstBlock = 64 * 1024;
};

ProtoDecoder::ProtoDecoder() : impl_(std::make_unique<Impl>()) {
  // libprotobuf logs every invalid UTF-8 string it refuses to stderr; the decode error (and the
  // dead-letter reason) already says it, once. Process-wide, set once.
  static std::once_flag quiet;
  std::call_once(quiet, [] { google::protobuf::SetLogHandler([](auto, auto, auto, auto) {}); });
}
ProtoDecoder::~ProtoDecoder() = default;

common::Status ProtoDecoder::Decode(std::string_view body, Batch* out) {
  out->Clear();
  google::protobuf::ArenaOptions options;
  options.initial_block = impl_->first_block.get();
  options.initial_block_size = Impl::kFirstBlock;
  // Large blocks for a large body: fewer mallocs, each returned to the system when it is freed.
  options.max_block_size = std::clamp<size_t>(body.size() / 8, 8 * 1024, 1024 * 1024);
  google::protobuf::Arena arena(options);
  auto& req = *google::protobuf::Arena::CreateMessage<pb::ExportMetricsServiceRequest>(&arena);
  if (body.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    auto fault = wire::FindFault(body);
    if (fault) {
      return common::Error::Invalid("protobuf parse error at byte " +
                                    std::to_string(fault->offset) + ": " + fault->what);
    }
    return common::Error::Invalid("protobuf parse error");
  }
  Converter c(out);
  for (const auto& rm : req.resource_metrics()) {
    auto resource = static_cast<uint32_t>(out->resources.size());
    out->resources.push_back(c.Attributes(rm.resource().attributes()));
    for (const auto& sm : rm.scope_metrics()) {
      auto scope = static_cast<uint32_t>(out->scopes.size());
      out->scopes.push_back(Scope{text::Clean(sm.scope().name(), &out->nul_replacements),
                                  text::Clean(sm.scope().version(), &out->nul_replacements),
                                  c.Attributes(sm.scope().attributes())});
      for (const auto& m : sm.metrics()) {
        if (!c.ConvertMetric(m, resource, scope)) return common::Error::Invalid(c.error);
      }
    }
  }
  if (out->attribute_text.size() >= kMaxAttributeText) {
    return common::Error::Invalid("protobuf: the attributes of this batch are too large to store");
  }
  return common::Status::Ok();
}

}  // namespace mw
