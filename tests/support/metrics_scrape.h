// Test support: reading a service's /metrics (Prometheus text).
// Plain functions, any thread.
#pragma once

#include <string>

namespace testsupport {

// The /metrics text ("" when nothing answers within 2 s).
std::string Scrape(int port);
// The same from any address: "http://10.77.0.21:9464".
std::string ScrapeUrl(const std::string& base_url);

// The sum of the samples of `name` (exactly that name, with or without labels) whose label set
// contains `labels` (e.g. "reason=\"poison\""; empty: every sample); 0 when there is none.
double MetricSum(const std::string& text, const std::string& name, const std::string& labels = "");

}  // namespace testsupport
