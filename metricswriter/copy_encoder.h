// PostgreSQL binary COPY payloads for the four point tables (sql/migrations/0001). Binary, not
// text: no escaping, and the server does not parse floats, which is most of a text COPY's cost.
// Pure; one encoder per thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "metricswriter/otlp_model.h"

namespace mw {

enum PointTable { kNumberTable, kHistogramTable, kExpHistogramTable, kSummaryTable, kTables };

// The COPY statement for a table, columns in the order the encoder writes them.
const char* CopyStatement(PointTable t);

class CopyEncoder {
 public:
  void Begin();  // clears the payloads and writes the file headers
  // Appends every point of `b`; series_ids[i] is the series_id of b.series[i].
  void Add(const Batch& b, const std::vector<int64_t>& series_ids);
  void Finish();  // writes the trailers

  const std::string& payload(PointTable t) const { return data_[t]; }
  size_t rows(PointTable t) const { return rows_[t]; }

 private:
  std::array<std::string, kTables> data_;
  std::array<size_t, kTables> rows_{};
};

}  // namespace mw
