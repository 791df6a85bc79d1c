// A small Prometheus metrics registry: counters, gauges and histograms with labels, and the text
// exposition format (version 0.0.4).
//
// Ownership: the Registry owns every family and every child; the references it hands out stay
// valid for the Registry's lifetime, so hot paths look a child up once and keep the reference.
// Thread-safety: every method of Counter, Gauge, Histogram, Family and Registry may be called from
// any thread. Collectors run on the thread that calls Expose().
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace core::metrics {

class Counter {
 public:
  void Inc(double v = 1.0);  // v < 0 is a bug and is ignored: a counter only goes up
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Dec(double v = 1.0) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // sorted, finite; +Inf is implicit
  void Observe(double v);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

enum class Type { kCounter, kGauge, kHistogram };

// One metric name with its label names; children are created on first use of a label set.
template <typename M>
class Family {
 public:
  using Factory = std::function<std::unique_ptr<M>()>;
  Family(std::vector<std::string> label_names, Factory factory)
      : label_names_(std::move(label_names)), factory_(std::move(factory)) {}

  // The child for these label values (one per label name, in order). A wrong count is a bug.
  M& With(const std::vector<std::string>& label_values);
  M& Get() { return With({}); }

  const std::vector<std::string>& label_names() const { return label_names_; }
  // Calls fn(label_values, child) for each child, in label order.
  void ForEach(const std::function<void(const std::vector<std::string>&, const M&)>& fn) const;

 private:
  const std::vector<std::string> label_names_;
  const Factory factory_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

// Adding a name that exists with the same type and label names returns the existing family
// (the first registration's help and histogram bounds stay); another type or labels throws.
class Registry {
 public:
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> upper_bounds,
                                  std::vector<std::string> label_names = {});

  // Runs before each exposition, to refresh gauges read from elsewhere (e.g. JetStream).
  void AddCollector(std::function<void()> collector);

  // The whole registry in Prometheus text format.
  std::string Expose() const;

 private:
  struct Entry {
    std::string name;
    std::string help;
    Type type;
    std::unique_ptr<Family<Counter>> counters;
    std::unique_ptr<Family<Gauge>> gauges;
    std::unique_ptr<Family<Histogram>> histograms;
  };
  Entry& Add(const std::string& name, const std::string& help, Type type,
             const std::vector<std::string>& label_names, bool* existed);

  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::vector<std::function<void()>> collectors_;
};

// Bucket bounds: start, start*factor, ... (count bounds).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// A counter's help text with the sentence the services put on every counter: its count starts
// at zero when the process starts (so a restart shows as a drop, which rate() handles).
std::string CountsSinceStart(const std::string& help);

// Exposition helpers, exposed for tests.
std::string FormatValue(double v);
std::string EscapeLabelValue(const std::string& v);
std::string EscapeHelp(const std::string& v);
bool ValidMetricName(const std::string& name);
bool ValidLabelName(const std::string& name);

}  // namespace core::metrics
