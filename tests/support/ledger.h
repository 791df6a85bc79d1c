// Test support: what the stores hold of a test's messages. Umami's web events are counted by
// the id each test event carries as its URL path ("/<id>"; Umami gives a stored event an id of
// its own); the metricswriter's batches by batch id (= Nats-Msg-Id), at most one row each
// (primary key), tenant t1.
// Plain queries through psql: any thread, no state beyond the two URLs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace testsupport {

class Ledger {
 public:
  Ledger(std::string umami_db_url, std::string metrics_db_url)
      : umami_db_(std::move(umami_db_url)), metrics_db_(std::move(metrics_db_url)) {}

  int64_t StoredEvents(const std::string& id_prefix = "") const;
  std::vector<std::string> MissingEvents(const std::vector<std::string>& ids) const;
  // Rows beyond the first of any event (whose id starts with id_prefix).
  int64_t DuplicateEvents(const std::string& id_prefix = "") const;
  int64_t StoredBatches() const;
  int64_t StoredPoints() const;
  std::vector<std::string> MissingBatches(const std::vector<std::string>& ids) const;

 private:
  std::string umami_db_;
  std::string metrics_db_;
};

}  // namespace testsupport
