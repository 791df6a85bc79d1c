#include "common/metrics.h"

#include <prometheus/text_serializer.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace common::metrics {

uint64_t Histogram::Count() const { return h_.Collect().histogram.sample_count; }

double Histogram::Sum() const { return h_.Collect().histogram.sample_sum; }

namespace {

prometheus::Labels ToLabels(const std::vector<std::string>& names,
                            const std::vector<std::string>& values) {
  prometheus::Labels labels;
  for (size_t i = 0; i < names.size(); ++i) labels.emplace(names[i], values[i]);
  return labels;
}

template <typename M>
typename M::Native& AddNative(prometheus::Family<typename M::Native>& family,
                              const prometheus::Labels& labels, const std::vector<double>&) {
  return family.Add(labels);
}

template <>
prometheus::Histogram& AddNative<Histogram>(prometheus::Family<prometheus::Histogram>& family,
                                            const prometheus::Labels& labels,
                                            const std::vector<double>& buckets) {
  return family.Add(labels, prometheus::Histogram::BucketBoundaries(buckets));
}

}  // namespace

template <typename M>
M& Family<M>::With(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    throw std::invalid_argument("metric used with the wrong number of label values");
  }
  std::lock_guard lock(mu_);
  auto& slot = children_[label_values];
  if (!slot) {
    slot =
        std::make_unique<M>(AddNative<M>(native_, ToLabels(label_names_, label_values), buckets_));
  }
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

bool ValidMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool ValidLabelName(const std::string& name) {
  // "le" and "quantile" are the histogram's and summary's own labels.
  if (name.empty() || name.rfind("__", 0) == 0 || name == "le" || name == "quantile") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) out.push_back(v);
  return out;
}

std::string CountsSinceStart(const std::string& help) {
  return help + " Counts since this process started (resets on restart).";
}

void AddProcessMetrics(Registry& registry) {
  Gauge& rss = registry
                   .AddGauge("process_resident_memory_bytes",
                             "Resident memory size of this process in bytes (/proc/self/statm).")
                   .Get();
  registry.AddCollector([&rss] {
    std::ifstream statm("/proc/self/statm");
    long long size = 0, resident = 0;
    const long page = sysconf(_SC_PAGESIZE);
    if (statm >> size >> resident && page > 0) {
      rss.Set(static_cast<double>(resident) * static_cast<double>(page));
    } else {
      rss.Set(0);
    }
  });
}

struct Registry::Entry {
  char type = 0;  // 'c', 'g', 'h'
  std::string help;
  std::vector<std::string> label_names;
  std::unique_ptr<Family<Counter>> counters;
  std::unique_ptr<Family<Gauge>> gauges;
  std::unique_ptr<Family<Histogram>> histograms;
};

Registry::Registry()
    : native_(std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Throw)) {
}

Registry::~Registry() = default;

Registry::Entry& Registry::Add(const std::string& name, const std::string& help, char type,
                               const std::vector<std::string>& label_names, bool* existed) {
  if (!ValidMetricName(name)) throw std::invalid_argument("bad metric name: " + name);
  for (const auto& l : label_names) {
    if (!ValidLabelName(l)) throw std::invalid_argument("bad label name: " + l + " on " + name);
  }
  // prometheus-cpp 1.0 writes the help text as it is: a line break or a backslash would need
  // escaping it does not do. Our help texts are sentences; anything else is a bug.
  for (char c : help) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '\\') {
      throw std::invalid_argument("help text of " + name + " has a control character or '\\'");
    }
  }
  auto it = entries_.find(name);
  if (it != entries_.end()) {
    // The same family again (a component re-created for a new leadership term): the one that
    // exists, so its counts go on. A different shape is a bug.
    if (it->second->type != type || it->second->label_names != label_names) {
      throw std::invalid_argument("metric registered twice with another type or labels: " + name);
    }
    *existed = true;
    return *it->second;
  }
  *existed = false;
  auto& e = entries_[name];
  e = std::make_unique<Entry>();
  e->type = type;
  e->help = help;
  e->label_names = label_names;
  return *e;
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  bool existed = false;
  auto& e = Add(name, help, 'c', label_names, &existed);
  if (!existed) {
    auto& native = prometheus::BuildCounter().Name(name).Help(help).Register(*native_);
    e.counters =
        std::make_unique<Family<Counter>>(native, std::move(label_names), std::vector<double>{});
  }
  return *e.counters;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  bool existed = false;
  auto& e = Add(name, help, 'g', label_names, &existed);
  if (!existed) {
    auto& native = prometheus::BuildGauge().Name(name).Help(help).Register(*native_);
    e.gauges =
        std::make_unique<Family<Gauge>>(native, std::move(label_names), std::vector<double>{});
  }
  return *e.gauges;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> upper_bounds,
                                          std::vector<std::string> label_names) {
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) || (i > 0 && upper_bounds[i] <= upper_bounds[i - 1])) {
      throw std::invalid_argument("histogram bounds of " + name +
                                  " must be finite and strictly increasing");
    }
  }
  std::lock_guard lock(mu_);
  bool existed = false;
  auto& e = Add(name, help, 'h', label_names, &existed);
  if (!existed) {
    auto& native = prometheus::BuildHistogram().Name(name).Help(help).Register(*native_);
    e.histograms = std::make_unique<Family<Histogram>>(native, std::move(label_names),
                                                       std::move(upper_bounds));
  }
  return *e.histograms;
}

std::vector<Registry::FamilyInfo> Registry::Families() const {
  std::lock_guard lock(mu_);
  std::vector<FamilyInfo> out;
  for (const auto& [name, e] : entries_) out.push_back({name, e->type, e->help});
  return out;
}

void Registry::AddCollector(std::function<void()> collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string Registry::Expose() const {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (const auto& c : collectors) c();
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, native_->Collect());
  return out.str();
}

}  // namespace common::metrics
