// Test support: reading a service's /metrics (Prometheus text) on 127.0.0.1:<port>.
// Plain functions, any thread.
#pragma once

#include <string>

namespace testsupport {

// The /metrics text ("" when nothing answers within 2 s).
std::string Scrape(int port);

// The sum of the samples of `name` (exactly that name, with or without labels) whose label set
// contains `labels` (e.g. "reason=\"poison\""; empty: every sample); 0 when there is none.
double MetricSum(const std::string& text, const std::string& name, const std::string& labels = "");

}  // namespace testsupport
