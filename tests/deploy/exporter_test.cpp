// StreamGauges: readings of JetStream become the gauges the alert rules read.
#include <catch2/catch.hpp>
#include <string>

#include "common/metrics.h"
#include "platformctl/exporter.h"

using platformctl::backlog::ConsumerReading;
using platformctl::backlog::StreamReading;

namespace {

constexpr int64_t kSecond = 1'000'000'000;

StreamReading Web(int64_t read_at_s, uint64_t messages, uint64_t last_seq) {
  StreamReading r;
  r.name = "WEB_EVENTS";
  r.read_at_ns = read_at_s * kSecond;
  r.messages = messages;
  r.bytes = messages * 100;
  r.max_bytes = 256 * 1024;
  r.last_seq = last_seq;
  r.first_seq = last_seq - messages + 1;
  r.first_ns = (read_at_s - 90) * kSecond;  // the oldest held message is 90 s old
  ConsumerReading c;
  c.name = "replayer";
  c.pending = messages - 3;
  c.unacked = 3;
  c.max_ack_pending = 1000;
  c.redelivered = 1;
  c.delivered_seq = 40;
  c.ack_floor_seq = 37;
  c.last_acked_ns = (read_at_s - 1) * kSecond;
  r.consumers.push_back(c);
  return r;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("a reading becomes stream and consumer gauges, pending and unacked apart", "[exporter]") {
  common::metrics::Registry registry;
  platformctl::StreamGauges gauges(registry);
  StreamReading dlq;
  dlq.name = "WEB_DLQ";
  dlq.read_at_ns = 1000 * kSecond;
  gauges.Record({Web(1000, 10, 50), dlq}, 0.25);
  std::string out = registry.Expose();
  CHECK(Has(out, "jetstream_stream_messages{stream=\"WEB_EVENTS\"} 10"));
  CHECK(Has(out, "jetstream_stream_last_seq{stream=\"WEB_EVENTS\"} 50"));
  // The storage limit beside the bytes held (StreamNearlyFull divides them); -1: unlimited.
  CHECK(Has(out, "jetstream_stream_bytes{stream=\"WEB_EVENTS\"} 1000"));
  CHECK(Has(out, "jetstream_stream_max_bytes{stream=\"WEB_EVENTS\"} 262144"));
  CHECK(Has(out, "jetstream_stream_max_bytes{stream=\"WEB_DLQ\"} -1"));
  CHECK(Has(out, "jetstream_stream_removed_messages{stream=\"WEB_EVENTS\"} 40"));
  CHECK(Has(out, "jetstream_stream_first_seq{stream=\"WEB_EVENTS\"} 41"));
  CHECK(Has(out, "jetstream_stream_oldest_message_age_seconds{stream=\"WEB_EVENTS\"} 90"));
  CHECK(Has(out, "jetstream_stream_oldest_message_timestamp_seconds{stream=\"WEB_EVENTS\"} 910"));
  // An empty stream has no oldest message: its age reads 0, not the age of an old timestamp.
  CHECK(Has(out, "jetstream_stream_messages{stream=\"WEB_DLQ\"} 0"));
  CHECK(Has(out, "jetstream_stream_oldest_message_age_seconds{stream=\"WEB_DLQ\"} 0"));
  CHECK(Has(out, "jetstream_stream_consumers{stream=\"WEB_EVENTS\"} 1"));
  CHECK(Has(out, "jetstream_consumer_pending{consumer=\"replayer\",stream=\"WEB_EVENTS\"} 7"));
  CHECK(Has(out, "jetstream_consumer_unacked{consumer=\"replayer\",stream=\"WEB_EVENTS\"} 3"));
  CHECK(Has(
      out, "jetstream_consumer_max_ack_pending{consumer=\"replayer\",stream=\"WEB_EVENTS\"} 1000"));
  CHECK(Has(out, "jetstream_consumer_redelivered{consumer=\"replayer\",stream=\"WEB_EVENTS\"} 1"));
  CHECK(Has(out,
            "jetstream_consumer_ack_floor_consumer_seq{consumer=\"replayer\",stream="
            "\"WEB_EVENTS\"} 37"));
  CHECK(Has(out,
            "jetstream_consumer_last_ack_floor_timestamp_seconds{consumer=\"replayer\","
            "stream=\"WEB_EVENTS\"} 999"));
  CHECK(Has(out, "jetstream_read_timestamp_seconds 1000"));
  CHECK(Has(out, "jetstream_read_duration_seconds 0.25"));
  CHECK(Has(out, "jetstream_read_ok 1"));
  CHECK(gauges.last_read_ns() == 1000 * kSecond);
}

// prometheus-cpp writes a sample's labels in name order, and NaN as "Nan" (Prometheus reads it
// in any case).
TEST_CASE("a deleted consumer or stream reads NaN instead of its last numbers", "[exporter]") {
  common::metrics::Registry registry;
  platformctl::StreamGauges gauges(registry);
  gauges.Record({Web(1000, 10, 50)}, 0.1);
  auto later = Web(1015, 4, 60);
  later.consumers.clear();
  gauges.Record({later}, 0.1);
  std::string out = registry.Expose();
  CHECK(Has(out, "jetstream_stream_messages{stream=\"WEB_EVENTS\"} 4"));
  CHECK(Has(out, "jetstream_stream_removed_messages{stream=\"WEB_EVENTS\"} 56"));
  CHECK(Has(out, "jetstream_consumer_pending{consumer=\"replayer\",stream=\"WEB_EVENTS\"} Nan"));
  CHECK(Has(out, "jetstream_consumer_unacked{consumer=\"replayer\",stream=\"WEB_EVENTS\"} Nan"));
  CHECK(Has(out, "jetstream_stream_consumers{stream=\"WEB_EVENTS\"} 0"));

  gauges.Record({}, 0.1);  // the stream itself is gone
  out = registry.Expose();
  CHECK(Has(out, "jetstream_stream_messages{stream=\"WEB_EVENTS\"} Nan"));
  CHECK(Has(out, "jetstream_stream_oldest_message_age_seconds{stream=\"WEB_EVENTS\"} Nan"));
}

TEST_CASE("a failed reading keeps the last numbers and says so", "[exporter]") {
  common::metrics::Registry registry;
  platformctl::StreamGauges gauges(registry);
  gauges.Record({Web(1000, 10, 50)}, 0.1);
  gauges.RecordFailure();
  gauges.RecordFailure();
  std::string out = registry.Expose();
  CHECK(Has(out, "jetstream_read_ok 0"));
  CHECK(Has(out, "jetstream_read_failures_total 2"));
  CHECK(Has(out, "jetstream_read_timestamp_seconds 1000"));  // when the numbers were read
  CHECK(Has(out, "jetstream_stream_messages{stream=\"WEB_EVENTS\"} 10"));
}

TEST_CASE("a work queue's left-behind messages are a gauge from two readings", "[exporter]") {
  common::metrics::Registry registry;
  platformctl::StreamGauges gauges(registry);
  // One message held that the consumer acked long ago (its floor is at 50), nothing else.
  auto stuck = [](int64_t at_s) {
    StreamReading r = Web(at_s, 1, 50);
    r.work_queue = true;
    r.first_seq = 20;
    r.consumers[0].pending = 0;
    r.consumers[0].unacked = 0;
    r.consumers[0].ack_floor_stream_seq = 50;
    return r;
  };
  gauges.Record({stuck(1000)}, 0.1);
  CHECK(Has(registry.Expose(), "jetstream_stream_left_behind_messages{stream=\"WEB_EVENTS\"} 0"));
  gauges.Record({stuck(1015)}, 0.1);
  CHECK(Has(registry.Expose(), "jetstream_stream_left_behind_messages{stream=\"WEB_EVENTS\"} 1"));
  // A reading where the oldest is a message still to deliver: none left behind.
  auto waiting = Web(1030, 10, 60);
  waiting.work_queue = true;
  waiting.consumers[0].ack_floor_stream_seq = 49;
  gauges.Record({waiting}, 0.1);
  CHECK(Has(registry.Expose(), "jetstream_stream_left_behind_messages{stream=\"WEB_EVENTS\"} 0"));
}
