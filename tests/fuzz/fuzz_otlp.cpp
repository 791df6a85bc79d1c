// The OTLP decoders under libFuzzer: fuzz_otlp_json (metricswriter/otlp_json.h) and
// fuzz_otlp_proto (otlp_proto.h, this file built with MW_FUZZ_PROTO). How they are built and run:
// tests/fuzz/CMakeLists.txt. An input that fails belongs in corpus/<target>/ (every test run
// replays it) and, as a named case, in the decoder's unit tests.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "metricswriter/otlp_json.h"
#include "metricswriter/otlp_proto.h"
#include "tests/fuzz/fuzz_check.h"

#if defined(MW_FUZZ_PROTO)
using Decoder = mw::ProtoDecoder;
#else
using Decoder = mw::JsonDecoder;
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Decoder decoder;
  static mw::Batch batch;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  if (decoder.Decode(body, &batch).ok()) {
    // Every index a point holds must be in range: the store trusts them.
    for (const auto& p : batch.numbers) {
      if (p.series >= batch.series.size()) fuzz::Fail();
    }
    for (const auto& s : batch.series) {
      if (s.metric >= batch.metrics.size() ||
          size_t{s.attributes_at} + s.attributes_size > batch.attribute_text.size()) {
        fuzz::Fail();
      }
    }
    for (const auto& m : batch.metrics) {
      if (m.resource >= batch.resources.size() || m.scope >= batch.scopes.size()) {
        fuzz::Fail();
      }
    }
    (void)mw::DescribePoints(batch);
  }
  return 0;
}
