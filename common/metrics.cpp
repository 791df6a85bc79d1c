#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace core::metrics {

void Counter::Inc(double v) {
  if (!(v >= 0)) return;
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1])) {
      throw std::invalid_argument("histogram bounds must be finite and strictly increasing");
    }
  }
}

void Histogram::Observe(double v) {
  // The first bucket whose upper bound is >= v; NaN lands in +Inf only.
  size_t i = std::isnan(v)
                 ? bounds_.size()
                 : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                       bounds_.begin());
  std::lock_guard lock(mu_);
  counts_[i]++;
  sum_ += v;
  count_++;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

template <typename M>
M& Family<M>::With(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    throw std::invalid_argument("metric used with the wrong number of label values");
  }
  std::lock_guard lock(mu_);
  auto& slot = children_[label_values];
  if (!slot) slot = factory_();
  return *slot;
}

template <typename M>
void Family<M>::ForEach(
    const std::function<void(const std::vector<std::string>&, const M&)>& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [labels, child] : children_) fn(labels, *child);
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
  if (name.empty() || name.rfind("__", 0) == 0 || name == "le" || name == "quantile") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Prefer the shortest form that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof(shorter), "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
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

Registry::Entry& Registry::Add(const std::string& name, const std::string& help, Type type,
                               const std::vector<std::string>& label_names, bool* existed) {
  if (!ValidMetricName(name)) throw std::invalid_argument("bad metric name: " + name);
  for (const auto& l : label_names) {
    if (!ValidLabelName(l)) throw std::invalid_argument("bad label name: " + l + " on " + name);
  }
  auto it = entries_.find(name);
  if (it != entries_.end()) {
    // Registering the same family again (a component re-created for a new leadership term)
    // returns the one that exists, so its counts go on; a different shape is a bug.
    const Entry& e = it->second;
    const std::vector<std::string>* names = e.counters     ? &e.counters->label_names()
                                            : e.gauges     ? &e.gauges->label_names()
                                            : e.histograms ? &e.histograms->label_names()
                                                           : nullptr;
    if (e.type != type || names == nullptr || *names != label_names) {
      throw std::invalid_argument("metric registered twice with another type or labels: " + name);
    }
    *existed = true;
    return it->second;
  }
  *existed = false;
  auto& e = entries_[name];
  e.name = name;
  e.help = help;
  e.type = type;
  return e;
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  bool existed = false;
  auto& e = Add(name, help, Type::kCounter, label_names, &existed);
  if (existed) return *e.counters;
  e.counters = std::make_unique<Family<Counter>>(std::move(label_names),
                                                 [] { return std::make_unique<Counter>(); });
  return *e.counters;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  bool existed = false;
  auto& e = Add(name, help, Type::kGauge, label_names, &existed);
  if (existed) return *e.gauges;
  e.gauges = std::make_unique<Family<Gauge>>(std::move(label_names),
                                             [] { return std::make_unique<Gauge>(); });
  return *e.gauges;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> upper_bounds,
                                          std::vector<std::string> label_names) {
  Histogram probe(upper_bounds);  // validates the bounds before anything is registered
  std::lock_guard lock(mu_);
  bool existed = false;
  auto& e = Add(name, help, Type::kHistogram, label_names, &existed);
  if (existed) return *e.histograms;
  e.histograms = std::make_unique<Family<Histogram>>(
      std::move(label_names),
      [b = std::move(upper_bounds)] { return std::make_unique<Histogram>(b); });
  return *e.histograms;
}

void Registry::AddCollector(std::function<void()> collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

namespace {

std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + EscapeLabelValue(extra_value) + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

std::string Registry::Expose() const {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (const auto& c : collectors) c();

  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, e] : entries_) {
    out += "# HELP " + name + " " + EscapeHelp(e.help) + "\n";
    switch (e.type) {
      case Type::kCounter:
        out += "# TYPE " + name + " counter\n";
        e.counters->ForEach([&](const auto& labels, const Counter& c) {
          out += name + LabelSet(e.counters->label_names(), labels) + " " + FormatValue(c.Value()) +
                 "\n";
        });
        break;
      case Type::kGauge:
        out += "# TYPE " + name + " gauge\n";
        e.gauges->ForEach([&](const auto& labels, const Gauge& g) {
          out += name + LabelSet(e.gauges->label_names(), labels) + " " + FormatValue(g.Value()) +
                 "\n";
        });
        break;
      case Type::kHistogram:
        out += "# TYPE " + name + " histogram\n";
        e.histograms->ForEach([&](const auto& labels, const Histogram& h) {
          const auto& ln = e.histograms->label_names();
          auto s = h.Read();
          for (size_t i = 0; i < s.upper_bounds.size(); ++i) {
            out += name + "_bucket" + LabelSet(ln, labels, "le", FormatValue(s.upper_bounds[i])) +
                   " " + std::to_string(s.cumulative[i]) + "\n";
          }
          out += name + "_bucket" + LabelSet(ln, labels, "le", "+Inf") + " " +
                 std::to_string(s.cumulative.back()) + "\n";
          out += name + "_sum" + LabelSet(ln, labels) + " " + FormatValue(s.sum) + "\n";
          out += name + "_count" + LabelSet(ln, labels) + " " + std::to_string(s.count) + "\n";
        });
        break;
    }
  }
  return out;
}

}  // namespace core::metrics
