// The services' Prometheus metrics, kept by prometheus-cpp (Debian's prometheus-cpp-dev).
//
// prometheus-cpp's Registry and Family hold every metric, and its TextSerializer writes the
// exposition. This file adds what the services need on top, and nothing that stores a value:
// - a family has fixed label names and its children are looked up by position
//   (`family.With({"http://umami-1:3000", "5xx"})`), so a call site cannot mix up or forget one;
// - registering a family again (a component re-created for a new leadership term) returns the
//   one that exists, so its counts go on; another type or other label names is a bug and throws;
// - collectors that run before each exposition (gauges read from elsewhere, e.g. JetStream);
// - short names at the call sites: Counter::Inc, Gauge::Set/Inc/Dec, Histogram::Observe.
//
// Ownership: the Registry owns every family and child; the references it hands out stay valid
// for the Registry's lifetime, so hot paths look a child up once and keep the reference.
// Thread-safety: every method of Counter, Gauge, Histogram, Family and Registry may be called
// from any thread. Collectors run on the thread that calls Expose().
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace common::metrics {

// A handle on one prometheus::Counter (owned by its prometheus::Family).
class Counter {
 public:
  using Native = prometheus::Counter;
  explicit Counter(Native& c) : c_(c) {}
  // A counter only goes up: v < 0 and NaN are ignored (prometheus-cpp would take NaN).
  void Inc(double v = 1.0) {
    if (v >= 0) c_.Increment(v);
  }
  double Value() const { return c_.Value(); }

 private:
  Native& c_;
};

class Gauge {
 public:
  using Native = prometheus::Gauge;
  explicit Gauge(Native& g) : g_(g) {}
  void Set(double v) { g_.Set(v); }
  void Inc(double v = 1.0) { g_.Increment(v); }
  void Dec(double v = 1.0) { g_.Decrement(v); }
  double Value() const { return g_.Value(); }

 private:
  Native& g_;
};

class Histogram {
 public:
  using Native = prometheus::Histogram;
  explicit Histogram(Native& h) : h_(h) {}
  void Observe(double v) { h_.Observe(v); }
  // What the exposition shows (for tests).
  uint64_t Count() const;
  double Sum() const;

 private:
  Native& h_;
};

// One metric name with fixed label names; a child is created on first use of its label values.
template <typename M>
class Family {
 public:
  Family(prometheus::Family<typename M::Native>& native, std::vector<std::string> label_names,
         std::vector<double> buckets)
      : native_(native), label_names_(std::move(label_names)), buckets_(std::move(buckets)) {}

  // The child for these label values (one per label name, in order). A wrong count is a bug
  // and throws std::invalid_argument.
  M& With(const std::vector<std::string>& label_values);
  M& Get() { return With({}); }
  const std::vector<std::string>& label_names() const { return label_names_; }

 private:
  prometheus::Family<typename M::Native>& native_;
  const std::vector<std::string> label_names_;
  const std::vector<double> buckets_;  // histograms only
  std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // A bad name, a bad or reserved label name (le, quantile, __*), a help text with a control
  // character, or a name registered before with another type or label names: throws
  // std::invalid_argument (a bug, found by the first test that builds the metrics).
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  // upper_bounds: sorted, finite (+Inf is implicit).
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> upper_bounds,
                                  std::vector<std::string> label_names = {});

  // Runs before each exposition, to refresh gauges read from elsewhere (e.g. JetStream).
  void AddCollector(std::function<void()> collector);

  // Runs the collectors, then the whole registry in Prometheus text format (version 0.0.4).
  std::string Expose() const;

  // Every family registered, with or without children (the exposition shows only those with
  // one): for tests that check names and help texts.
  struct FamilyInfo {
    std::string name;
    char type;  // 'c' counter, 'g' gauge, 'h' histogram
    std::string help;
  };
  std::vector<FamilyInfo> Families() const;

 private:
  struct Entry;
  Entry& Add(const std::string& name, const std::string& help, char type,
             const std::vector<std::string>& label_names, bool* existed);

  const std::shared_ptr<prometheus::Registry> native_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  std::vector<std::function<void()>> collectors_;
};

// Bucket bounds: start, start*factor, ... (count bounds).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// A counter's help text with the sentence the services put on every counter: its count starts
// at zero when the process starts (so a restart shows as a drop, which rate() handles).
std::string CountsSinceStart(const std::string& help);

// process_resident_memory_bytes (the name Prometheus's own clients use): this process's resident
// set size, read from /proc/self/statm at each exposition (0 where that file cannot be read). The
// services register it so the dashboard can set their memory beside their byte budgets.
void AddProcessMetrics(Registry& registry);

// Name rules of the exposition format, exposed for tests.
bool ValidMetricName(const std::string& name);
bool ValidLabelName(const std::string& name);

}  // namespace common::metrics
