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

// A size as written in the environment: a number of bytes, or a number followed by KiB, MiB or
// GiB ("64MiB"). nullopt when it is neither.
std::optional<int64_t> ParseBytes(std::string_view text);

}  // namespace mw
