#include "tests/support/metrics_scrape.h"

#include <sstream>

#include "tests/support/test_stack.h"

namespace testsupport {

std::string Scrape(int port) { return ScrapeUrl("http://127.0.0.1:" + std::to_string(port)); }

std::string ScrapeUrl(const std::string& base_url) {
  return Capture("curl -s --max-time 2 " + base_url + "/metrics 2>/dev/null");
}

double MetricSum(const std::string& text, const std::string& name, const std::string& labels) {
  std::istringstream in(text);
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0) continue;
    char next = line.size() > name.size() ? line[name.size()] : ' ';
    if (next != ' ' && next != '{') continue;
    if (!labels.empty() && line.find(labels) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

}  // namespace testsupport
