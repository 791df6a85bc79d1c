#include "metricswriter/fingerprint.h"

#include <bit>
#include <cstring>

namespace mw {
namespace {

uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t Load64(const unsigned char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  // Little-endian, whatever the host (one load on x86: a byte loop showed in the profile).
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

}  // namespace

std::string Fingerprint::Bytes() const {
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<char>(hi >> (56 - 8 * i));
    out[static_cast<size_t>(8 + i)] = static_cast<char>(lo >> (56 - 8 * i));
  }
  return out;
}

Fingerprint Murmur3x64_128(std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t len = data.size();
  const size_t blocks = len / 16;
  constexpr uint64_t c1 = 0x87c37b91114253d5ULL;
  constexpr uint64_t c2 = 0x4cf5ad432745937fULL;
  uint64_t h1 = 0, h2 = 0;
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k1 = Load64(p + i * 16);
    uint64_t k2 = Load64(p + i * 16 + 8);
    k1 *= c1;
    k1 = Rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = Rotl(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= c2;
    k2 = Rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = Rotl(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  const unsigned char* tail = p + blocks * 16;
  uint64_t k1 = 0, k2 = 0;
  size_t rest = len & 15;
  for (size_t i = rest; i > 8; --i) k2 ^= static_cast<uint64_t>(tail[i - 1]) << (8 * (i - 9));
  if (rest > 8) {
    k2 *= c2;
    k2 = Rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
  }
  for (size_t i = std::min<size_t>(rest, 8); i > 0; --i) {
    k1 ^= static_cast<uint64_t>(tail[i - 1]) << (8 * (i - 1));
  }
  if (rest > 0) {
    k1 *= c1;
    k1 = Rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
  }
  h1 ^= len;
  h2 ^= len;
  h1 += h2;
  h2 += h1;
  h1 = Fmix(h1);
  h2 = Fmix(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

Fingerprint SeriesFingerprint(std::string_view tenant, const Batch& b, size_t index,
                              std::string* s) {
  const SeriesView series = b.SeriesAt(index);
  const Scope& scope = b.scopes[series.scope];
  // NUL separates the parts: decoded text never holds one (NULs are replaced), so the encoding
  // is unambiguous.
  const std::string_view parts[] = {tenant,
                                    MetricTypeName(series.type),
                                    series.name,
                                    series.unit,
                                    TemporalityName(series.temporality),
                                    series.monotonic ? "1" : "0",
                                    b.resources[series.resource],
                                    scope.name,
                                    scope.version,
                                    scope.attributes,
                                    series.attributes};
  size_t size = 0;
  for (auto part : parts) size += part.size() + 1;
  s->resize(size);  // written in place: no append per part
  char* out = s->data();
  for (auto part : parts) {
    std::memcpy(out, part.data(), part.size());
    out += part.size();
    *out++ = '\0';
  }
  return Murmur3x64_128(*s);
}

}  // namespace mw
