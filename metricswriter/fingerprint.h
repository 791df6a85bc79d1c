// The series fingerprint: a 128-bit hash of everything that names a series (tenant, type, name,
// unit, temporality, monotonicity, resource, scope and point attributes; not the description).
// Stored in metrics.series.fingerprint (UNIQUE), so it must never change between releases: the
// unit tests pin a value. MurmurHash3 x64-128 (public domain), seed 0. Pure; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "metricswriter/otlp_model.h"

namespace mw {

struct Fingerprint {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const Fingerprint&) const = default;
  std::string Bytes() const;  // 16 bytes, big-endian hi then lo
};

struct FingerprintHash {
  size_t operator()(const Fingerprint& f) const { return static_cast<size_t>(f.lo ^ f.hi); }
};

Fingerprint Murmur3x64_128(std::string_view data);

// The fingerprint of batch.series[index] for `tenant`. `scratch` is reused between calls.
Fingerprint SeriesFingerprint(std::string_view tenant, const Batch& batch, size_t index,
                              std::string* scratch);

}  // namespace mw
