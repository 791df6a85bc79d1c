// OTLP/JSON (an ExportMetricsServiceRequest) -> Batch, with simdjson's DOM parser.
//
// Accepts what real exporters write: 64-bit integers as numbers or decimal strings, doubles as
// numbers (whole ones printed as integers), null (JavaScript's NaN/±Infinity) or the strings
// "NaN"/"Infinity"/"-Infinity" (Go protojson), enums as integers or names, lowerCamelCase or
// snake_case field names, unknown fields ignored, every AnyValue kind (bytes as base64).
// A JSON null for a double is stored as NaN: JSON.stringify writes NaN and ±Infinity as null and
// the difference is lost before it reaches us.
// Ownership: the decoder owns its parser and a padded copy buffer, reused between calls.
// Thread-safety: one decoder per thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "metricswriter/otlp_model.h"

namespace mw {

class JsonDecoder {
 public:
  JsonDecoder();
  ~JsonDecoder();
  JsonDecoder(const JsonDecoder&) = delete;
  JsonDecoder& operator=(const JsonDecoder&) = delete;

  // Fills *out (cleared first). Error (kind invalid) says what is wrong and where, e.g.
  // "JSON: resourceMetrics[0].scopeMetrics[0].metrics[3].sum.dataPoints[1].asInt: expected an
  // integer".
  common::Status Decode(std::string_view body, Batch* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mw
