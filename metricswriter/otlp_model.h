// The metricswriter's own representation of one OTLP ExportMetricsServiceRequest: what the JSON
// and protobuf decoders both produce and what the store writes. Plain data, no I/O.
//
// Attributes (resource, scope and point) are kept as canonical JSON object text: keys sorted,
// doubles always written with a '.' or an exponent (so 1.0 stays apart from the integer 1),
// NaN/±Infinity as the strings "NaN"/"Infinity"/"-Infinity", bytes as base64 strings, and NUL
// characters replaced by U+FFFD (PostgreSQL cannot hold NUL in text or jsonb). The same
// collection therefore gives the same text from either wire format, which is what the series
// fingerprint hashes.
// Ownership: a Batch owns everything in it; points refer to series, series to metrics, metrics
// to resources and scopes, all by index.
// Thread-safety: a plain value; one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

enum class MetricType : uint8_t { kGauge, kSum, kHistogram, kExpHistogram, kSummary };
inline constexpr size_t kMetricTypes = 5;
enum class Temporality : uint8_t { kUnspecified = 0, kDelta = 1, kCumulative = 2 };

const char* MetricTypeName(MetricType t);    // gauge, sum, histogram, exponential_histogram...
const char* TemporalityName(Temporality t);  // unspecified, delta, cumulative

struct Scope {
  std::string name;
  std::string version;
  std::string attributes;  // canonical JSON object
};

// What the points of one OTLP metric share (the series of a metric differ only in attributes).
struct Metric {
  MetricType type = MetricType::kGauge;
  Temporality temporality = Temporality::kUnspecified;
  bool monotonic = false;
  uint32_t resource = 0;  // index into Batch::resources
  uint32_t scope = 0;     // index into Batch::scopes
  std::string name;
  std::string unit;
  std::string description;
};

// One time series of a batch: a metric and the point's attributes. 12 bytes: a batch of
// 250,000 points holds 250,000 of them, so the text lives in one buffer of the batch.
struct Series {
  uint32_t metric = 0;           // index into Batch::metrics
  uint32_t attributes_at = 0;    // canonical JSON object text in Batch::attribute_text
  uint32_t attributes_size = 0;  //   at [attributes_at, attributes_at + attributes_size)
};

// Everything that names a series (minus the tenant, which the subject gives), for readers.
struct SeriesView {
  MetricType type = MetricType::kGauge;
  Temporality temporality = Temporality::kUnspecified;
  bool monotonic = false;
  uint32_t resource = 0;
  uint32_t scope = 0;
  std::string_view name;
  std::string_view unit;
  std::string_view description;
  std::string_view attributes;
};

// Times are unix nanoseconds; the decoders reject values above INT64_MAX so they fit bigint.
struct PointHead {
  int64_t start_time = 0;
  int64_t time = 0;
  uint32_t series = 0;  // index into Batch::series
  uint32_t flags = 0;
};

struct NumberPoint : PointHead {
  double value = 0;                  // the value as a double, always
  std::optional<int64_t> int_value;  // set when the exporter sent an integer (as_int)
};

struct HistogramPoint : PointHead {
  int64_t count = 0;
  std::optional<double> sum, min, max;
  std::vector<double> bounds;
  std::vector<int64_t> counts;
};

struct ExpHistogramPoint : PointHead {
  int64_t count = 0;
  std::optional<double> sum, min, max;
  int32_t scale = 0;
  int64_t zero_count = 0;
  double zero_threshold = 0;
  int32_t positive_offset = 0;
  std::vector<int64_t> positive_counts;
  int32_t negative_offset = 0;
  std::vector<int64_t> negative_counts;
};

struct SummaryPoint : PointHead {
  int64_t count = 0;
  double sum = 0;
  std::vector<double> quantiles;
  std::vector<double> quantile_values;
};

struct Batch {
  std::vector<std::string> resources;  // canonical JSON objects of resource attributes
  std::vector<Scope> scopes;
  std::vector<Metric> metrics;
  std::vector<Series> series;
  std::string attribute_text;  // the series' attributes, one after the other
  std::vector<NumberPoint> numbers;
  std::vector<HistogramPoint> histograms;
  std::vector<ExpHistogramPoint> exp_histograms;
  std::vector<SummaryPoint> summaries;
  uint64_t nul_replacements = 0;  // NUL characters replaced by U+FFFD while decoding

  size_t PointCount() const {
    return numbers.size() + histograms.size() + exp_histograms.size() + summaries.size();
  }
  void Clear();

  // Appends a series of `metric` whose attributes are `attributes` (canonical JSON text).
  // Returns its index. The text of one batch stays far below 4 GiB (a message is at most
  // 64 MiB and its attribute text a few times that), which the decoders check.
  uint32_t AddSeries(uint32_t metric, std::string_view attributes);
  SeriesView SeriesAt(size_t index) const;
  std::string_view Attributes(size_t index) const {
    const Series& s = series[index];
    return std::string_view(attribute_text).substr(s.attributes_at, s.attributes_size);
  }
  // Heap bytes this batch holds (vector capacities, strings beyond their inline buffer, point
  // arrays): what the writer charges against METRICSWRITER_MAX_BYTES_IN_FLIGHT.
  size_t MemoryBytes() const;
};

// Attribute text beyond this makes a batch undecodable (Series offsets are 32-bit).
inline constexpr size_t kMaxAttributeText = size_t{1} << 31;

// One line per point with everything stored about it (series, times, values), sorted: two
// batches that store the same rows give the same lines. For tests and diagnostics.
std::vector<std::string> DescribePoints(const Batch& b);

}  // namespace mw
