#include "tests/support/ledger.h"

#include <set>

#include "tests/support/web_events.h"

namespace testsupport {

int64_t Ledger::StoredEvents(const std::string& id_prefix) const {
  return QueryInt(umami_db_,
                  "SELECT count(*) FROM website_event WHERE url_path LIKE '/" + id_prefix + "%'");
}

std::vector<std::string> Ledger::MissingEvents(const std::vector<std::string>& ids) const {
  auto rows = Query(umami_db_, "SELECT DISTINCT url_path FROM website_event");
  std::set<std::string> stored(rows.begin(), rows.end());
  std::vector<std::string> missing;
  for (const auto& id : ids) {
    if (stored.count("/" + id) == 0) missing.push_back(id);
  }
  return missing;
}

int64_t Ledger::DuplicateEvents(const std::string& id_prefix) const {
  const std::string where = id_prefix.empty() ? "" : " WHERE url_path LIKE '/" + id_prefix + "%'";
  return QueryInt(umami_db_,
                  "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM website_event" +
                      where + " GROUP BY url_path HAVING count(*) > 1) d");
}

int64_t Ledger::StoredBatches() const {
  return QueryInt(metrics_db_, "SELECT count(*) FROM metrics.batches");
}

int64_t Ledger::StoredPoints() const {
  return QueryInt(metrics_db_, "SELECT count(*) FROM metrics.number_points");
}

std::vector<std::string> Ledger::MissingBatches(const std::vector<std::string>& ids) const {
  auto rows = Query(metrics_db_, "SELECT batch_id FROM metrics.batches WHERE tenant = 't1'");
  std::set<std::string> stored(rows.begin(), rows.end());
  std::vector<std::string> missing;
  for (const auto& id : ids) {
    if (stored.count(id) == 0) missing.push_back(id);
  }
  return missing;
}

}  // namespace testsupport
