// dlq_seed: fills WEB_DLQ and API_DLQ with dead letters shaped like the services' (for trying
// platformctl dlq by hand, and for the example session in docs/operations.md). Not a test.
//
//   NATS_URL=nats://127.0.0.1:14222 dlq_seed [web_count [api_count]]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/dead_letter.h"
#include "common/nats_async.h"
#include "common/nats_client.h"

int main(int argc, char** argv) {
  common::NatsLibraryGuard guard;
  const int web = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int api = argc > 2 ? std::atoi(argv[2]) : 20;
  common::CommonConfig c;
  const char* url = std::getenv("NATS_URL");
  c.nats_urls = {url ? url : "nats://127.0.0.1:14222"};
  auto client = common::NatsClient::Connect(c, {});
  if (!client) {
    std::fprintf(stderr, "dlq_seed: %s\n", client.error().message.c_str());
    return 3;
  }
  std::atomic<int> ok{0}, bad{0};
  auto pub = common::AsyncPublisher::Create(
      **client, [&](uint64_t, const common::Status& s) { (s.ok() ? ok : bad).fetch_add(1); });
  if (!pub) return 1;
  const char* sites[] = {"3f6a1c2e", "8d0b7e41", "c5e29a07"};
  for (int i = 0; i < web + api; ++i) {
    common::dead_letter::Origin o;
    std::string reason, detail;
    if (i < web) {
      std::string site = sites[i % 10 == 0 ? 1 : i % 7 == 0 ? 2 : 0];
      o.subject = "web.events." + site;
      o.stream = "WEB_EVENTS";
      o.payload = R"({"id":"e-)" + std::to_string(i) + R"(","website":")" + site +
                  R"(","visitor":"vk-)" + std::to_string(i % 97) +
                  R"(","accepted_at":1764427800123,"type":"event","payload":{"url":"/"}})";
      o.headers.emplace_back("Nats-Msg-Id", "e-" + std::to_string(i));
      reason = i % 10 == 0 ? "no usable visitor key"
               : i % 7 == 0
                   ? "more than 64 events of this visitor were held behind an event umami keeps "
                     "failing"
                   : "umami failed this event 4 times while its health checks passed";
      detail = "status 500";
    } else {
      o.subject = "api.metrics.acme";
      o.stream = "API_METRICS";
      o.payload = "\x0a\x03garbled";
      o.headers.emplace_back("Nats-Msg-Id", "b-" + std::to_string(i));
      o.headers.emplace_back("Content-Type", "application/x-protobuf");
      reason = "cannot decode the OTLP protobuf batch";
    }
    o.stream_seq = static_cast<uint64_t>(1000 + i);
    if (!(*pub)->Publish(common::dead_letter::Build(o, reason, detail), i).ok()) return 1;
  }
  // Waits for every publish's answer (the ack handler counts them), polled every 10 ms.
  while (ok + bad < web + api) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::printf("dlq_seed: %d dead letters published, %d failed\n", ok.load(), bad.load());
  return bad == 0 ? 0 : 1;
}
