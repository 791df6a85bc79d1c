#include "metricswriter/otlp_model.h"

#include <algorithm>
#include <cstdio>

#include "metricswriter/otlp_text.h"

namespace mw {
namespace {

std::string D(double d) {
  std::string s;
  text::AppendDouble(s, d);
  return s;
}
std::string OptD(const std::optional<double>& d) { return d ? D(*d) : "none"; }

template <typename T>
std::string List(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    if constexpr (std::is_same_v<T, double>) {
      s += D(v[i]);
    } else {
      s += std::to_string(v[i]);
    }
  }
  return s + "]";
}

std::string Head(const Batch& b, const PointHead& p) {
  const SeriesView s = b.SeriesAt(p.series);
  const Scope& sc = b.scopes[s.scope];
  return std::string(MetricTypeName(s.type)) + " " + std::string(s.name) +
         " unit=" + std::string(s.unit) + " desc=" + std::string(s.description) +
         " temporality=" + TemporalityName(s.temporality) +
         " monotonic=" + (s.monotonic ? "1" : "0") + " resource=" + b.resources[s.resource] +
         " scope=" + sc.name + "/" + sc.version + "/" + sc.attributes +
         " attrs=" + std::string(s.attributes) + " start=" + std::to_string(p.start_time) +
         " time=" + std::to_string(p.time) + " flags=" + std::to_string(p.flags);
}

// Heap bytes of a string: nothing while it fits the inline buffer.
size_t Heap(const std::string& s) {
  return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
}

template <typename T>
size_t Heap(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

const char* MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kSum:
      return "sum";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kExpHistogram:
      return "exponential_histogram";
    case MetricType::kSummary:
      return "summary";
  }
  return "gauge";
}

const char* TemporalityName(Temporality t) {
  switch (t) {
    case Temporality::kDelta:
      return "delta";
    case Temporality::kCumulative:
      return "cumulative";
    case Temporality::kUnspecified:
      break;
  }
  return "unspecified";
}

void Batch::Clear() {
  resources.clear();
  scopes.clear();
  metrics.clear();
  series.clear();
  attribute_text.clear();
  numbers.clear();
  histograms.clear();
  exp_histograms.clear();
  summaries.clear();
  nul_replacements = 0;
}

uint32_t Batch::AddSeries(uint32_t metric, std::string_view attributes) {
  Series s;
  s.metric = metric;
  s.attributes_at = static_cast<uint32_t>(attribute_text.size());
  s.attributes_size = static_cast<uint32_t>(attributes.size());
  attribute_text.append(attributes);
  series.push_back(s);
  return static_cast<uint32_t>(series.size() - 1);
}

SeriesView Batch::SeriesAt(size_t index) const {
  const Metric& m = metrics[series[index].metric];
  SeriesView v;
  v.type = m.type;
  v.temporality = m.temporality;
  v.monotonic = m.monotonic;
  v.resource = m.resource;
  v.scope = m.scope;
  v.name = m.name;
  v.unit = m.unit;
  v.description = m.description;
  v.attributes = Attributes(index);
  return v;
}

size_t Batch::MemoryBytes() const {
  size_t n = Heap(resources) + Heap(scopes) + Heap(metrics) + Heap(series) + Heap(attribute_text) +
             Heap(numbers) + Heap(histograms) + Heap(exp_histograms) + Heap(summaries);
  for (const auto& r : resources) n += Heap(r);
  for (const auto& s : scopes) n += Heap(s.name) + Heap(s.version) + Heap(s.attributes);
  for (const auto& m : metrics) n += Heap(m.name) + Heap(m.unit) + Heap(m.description);
  for (const auto& h : histograms) n += Heap(h.bounds) + Heap(h.counts);
  for (const auto& x : exp_histograms) n += Heap(x.positive_counts) + Heap(x.negative_counts);
  for (const auto& q : summaries) n += Heap(q.quantiles) + Heap(q.quantile_values);
  return n;
}

std::vector<std::string> DescribePoints(const Batch& b) {
  std::vector<std::string> out;
  for (const auto& p : b.numbers) {
    out.push_back(Head(b, p) + " value=" + D(p.value) +
                  " int=" + (p.int_value ? std::to_string(*p.int_value) : "none"));
  }
  for (const auto& p : b.histograms) {
    out.push_back(Head(b, p) + " count=" + std::to_string(p.count) + " sum=" + OptD(p.sum) +
                  " min=" + OptD(p.min) + " max=" + OptD(p.max) + " bounds=" + List(p.bounds) +
                  " counts=" + List(p.counts));
  }
  for (const auto& p : b.exp_histograms) {
    out.push_back(Head(b, p) + " count=" + std::to_string(p.count) + " sum=" + OptD(p.sum) +
                  " min=" + OptD(p.min) + " max=" + OptD(p.max) +
                  " scale=" + std::to_string(p.scale) + " zero=" + std::to_string(p.zero_count) +
                  "/" + D(p.zero_threshold) + " pos=" + std::to_string(p.positive_offset) +
                  List(p.positive_counts) + " neg=" + std::to_string(p.negative_offset) +
                  List(p.negative_counts));
  }
  for (const auto& p : b.summaries) {
    out.push_back(Head(b, p) + " count=" + std::to_string(p.count) + " sum=" + D(p.sum) +
                  " q=" + List(p.quantiles) + " qv=" + List(p.quantile_values));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mw
