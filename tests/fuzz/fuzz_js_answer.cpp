// JetStream's answers under libFuzzer: a publish's ack (common/pub_answer.h, read for every
// event and batch published) and an API answer's error and times (platformctl's requests,
// platformctl/nats_admin_request.h). A server's answer is input we do not control either: a
// proxy, a newer server or a client that names our inbox can send anything there. The first
// byte picks the reader.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/pub_answer.h"
#include "platformctl/nats_admin_request.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Split in = fuzz::Select(data, size);
  switch (in.selector % 3) {
    case 0: {
      const common::PubAnswer a = common::ReadPubAnswer(in.rest);
      if (a.kind == common::PubAnswer::Kind::kStored) fuzz::Check(a.err_code == 0);
      break;
    }
    case 1: {
      const auto e = platformctl::nats_admin::ApiError(in.rest, "request");
      if (e) fuzz::Check(!e->message.empty());
      break;
    }
    default: {
      if (const auto t = platformctl::nats_admin::ParseJsTime(in.rest)) {
        fuzz::Check(in.rest.size() >= 20);
      }
      break;
    }
  }
  return 0;
}
