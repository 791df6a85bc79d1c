// OTLP protobuf (an ExportMetricsServiceRequest) -> Batch, with libprotobuf and the messages in
// proto/otlp_metrics.proto.
//
// libprotobuf says only that a parse failed; the decoder then walks the wire format itself
// (otlp_wire.h) to name the byte and the fault, e.g. "protobuf parse error at byte 1234:
// length-delimited field 2 runs past the end of its message".
// Ownership: the decoder owns one request message, cleared and reused between calls so its
// memory is reused. Thread-safety: one decoder per thread.
#pragma once

#include <memory>
#include <string_view>

#include "common/result.h"
#include "metricswriter/otlp_model.h"

namespace mw {

class ProtoDecoder {
 public:
  ProtoDecoder();
  ~ProtoDecoder();
  ProtoDecoder(const ProtoDecoder&) = delete;
  ProtoDecoder& operator=(const ProtoDecoder&) = delete;

  // Fills *out (cleared first). Error kind: invalid.
  common::Status Decode(std::string_view body, Batch* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mw
