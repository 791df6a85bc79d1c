// bench/service_memory: the batch and event shapes it queues (see service_memory.cpp).
// Plain functions of their arguments; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "metricswriter/proto/otlp_metrics.pb.h"

namespace bench_shapes {

// A metricswriter batch: one gauge of `points` points, each with `attrs` string attributes of
// `attr_len` characters. distinct: every point a series of its own (its first attribute's value
// unique in the run), else the values repeat every 1,000 points (few series).
struct OtlpShape {
  const char* name;
  bool json = false;
  int batches = 0;
  int points = 0;
  int attrs = 0;
  int attr_len = 16;
  bool distinct = false;
};

inline std::string AttrValue(const OtlpShape& s, int64_t point, int a) {
  const int64_t key = s.distinct && a == 0 ? point : (point * 7 + a) % 1000;
  std::string v = "v" + std::to_string(key) + "-";
  if (static_cast<int>(v.size()) < s.attr_len) v.append(s.attr_len - v.size(), 'r');
  return v;
}

// `first_point`: the run-wide number of the batch's first point (distinct series, timestamps).
inline std::string ProtoBody(const OtlpShape& s, int batch, int64_t first_point, int64_t t) {
  mw::otlp::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  auto* a = rm->mutable_resource()->add_attributes();
  a->set_key("service.name");
  a->mutable_value()->set_string_value("mem-" + std::to_string(batch % 10));
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("bench");
  auto* m = sm->add_metrics();
  m->set_name("memory.value");
  m->set_unit("1");
  auto* g = m->mutable_gauge();
  g->mutable_data_points()->Reserve(s.points);
  for (int p = 0; p < s.points; ++p) {
    auto* dp = g->add_data_points();
    for (int k = 0; k < s.attrs; ++k) {
      auto* kv = dp->add_attributes();
      kv->set_key("attr." + std::to_string(k));
      kv->mutable_value()->set_string_value(AttrValue(s, first_point + p, k));
    }
    dp->set_start_time_unix_nano(static_cast<uint64_t>(t));
    dp->set_time_unix_nano(static_cast<uint64_t>(t + first_point + p));
    dp->set_as_double(p * 0.25);
  }
  return req.SerializeAsString();
}

inline std::string JsonBody(const OtlpShape& s, int batch, int64_t first_point, int64_t t) {
  std::string out;
  out.reserve(static_cast<size_t>(s.points) * (130 + (40 + s.attr_len) * s.attrs) + 256);
  out += R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":)";
  out += R"({"stringValue":"mem-)" + std::to_string(batch % 10) + R"("}}]},)";
  out += R"("scopeMetrics":[{"scope":{"name":"bench"},"metrics":[{"name":"memory.value",)";
  out += R"("unit":"1","gauge":{"dataPoints":[)";
  for (int p = 0; p < s.points; ++p) {
    if (p > 0) out += ',';
    out += R"({"attributes":[)";
    for (int k = 0; k < s.attrs; ++k) {
      if (k > 0) out += ',';
      out += R"({"key":"attr.)" + std::to_string(k) + R"(","value":{"stringValue":")" +
             AttrValue(s, first_point + p, k) + R"("}})";
    }
    out += R"(],"startTimeUnixNano":")" + std::to_string(t) + R"(","timeUnixNano":")" +
           std::to_string(t + first_point + p) + R"(","asDouble":)" + std::to_string(p) + ".25}";
  }
  out += "]}}]}]}]}";
  return out;
}

// A replayer event's data: `keys` keys of 490 characters each (92: about 46 KB an event).
inline std::string EventData(int keys) {
  if (keys <= 0) return R"({"plan":"pro"})";
  std::string data = "{";
  for (int k = 0; k < keys; ++k) {
    data += std::string(k == 0 ? "" : ",") + "\"k" + std::to_string(k) + "\":\"" +
            std::string(490, 'x') + "\"";
  }
  return data + "}";
}

}  // namespace bench_shapes
