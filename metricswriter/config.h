// The metricswriter's configuration from the environment (documented in README.md). Read once
// on the main thread at start-up; errors are collected by the ConfigReader.
#pragma once

#include <cstdint>

#include "common/config.h"
#include "metricswriter/writer.h"

namespace mw {

inline constexpr const char* kDefaultMetricsListen = "0.0.0.0:9102";
inline constexpr int64_t kMaxAckPending = 10'000;

WriterOptions ReadWriterOptions(common::ConfigReader& r);

// Everything the metricswriter reads from the environment: what --help lists and what it runs
// with (tests/integration/config_agree.py holds README's table to the same list).
struct ServiceConfig {
  common::CommonConfig common;
  WriterOptions writer;
};
ServiceConfig ReadServiceConfig(common::ConfigReader& r);

}  // namespace mw
