// The DLQ side of JetStream for platformctl: reading a limits-retention stream without consuming
// it, publishing a batch of messages with one wait for all their acks, and erasing messages
// securely in batches of pipelined requests.
//
// Adapter over nats.c (see nats_client.h); callers see only our types. A StreamBrowser walks
// the stream in sequence order through an ephemeral ordered consumer (no acks, nothing is
// removed); it owns that subscription and unsubscribes in its destructor (the server deletes
// the consumer then, or by itself after the process died). It borrows the NatsClient, which must
// outlive it. One thread uses a StreamBrowser; EraseAll may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/result.h"

typedef struct __natsSubscription natsSubscription;
typedef struct __natsMsg natsMsg;
typedef struct __jsCtx jsCtx;

namespace core::nats_dlq {

// One stored message as the browser saw it. `data` is empty when the browser reads headers
// only; `size` is the payload size either way.
struct StoredMessage {
  uint64_t seq = 0;
  int64_t time_ns = 0;  // when the stream stored it
  std::string subject;
  Headers headers;  // as stored (Nats-Msg-Id included), minus the browser's own Nats-Msg-Size
  std::string data;
  uint64_t size = 0;

  std::optional<std::string> Header(std::string_view key) const;
};

struct BrowseSpec {
  std::string stream;
  std::string filter_subject;  // e.g. dlq.web.* or dlq.web.<site>
  uint64_t start_seq = 1;
  // When non-zero: start at the first message stored at or after this time (found by sequence;
  // it may start a little earlier where erased messages leave gaps: filter by time too).
  int64_t start_time_ns = 0;
  uint64_t end_seq = 0;       // the last sequence to return (0: nothing); later ones end the walk
  bool headers_only = false;  // the payload never leaves the server (list)
};

class StreamBrowser {
 public:
  static Result<std::unique_ptr<StreamBrowser>> Open(NatsClient& client, const BrowseSpec& spec);
  ~StreamBrowser();
  StreamBrowser(const StreamBrowser&) = delete;
  StreamBrowser& operator=(const StreamBrowser&) = delete;

  // The next matching message up to end_seq, in sequence order; nullopt when the walk is over.
  // Messages erased while the walk runs are simply not returned.
  Result<std::optional<StoredMessage>> Next();

  // Matching messages from the start the server reported when the walk began (later arrivals
  // included): an upper bound for progress displays.
  uint64_t initial_pending() const { return initial_pending_; }

 private:
  StreamBrowser() = default;
  NatsClient* client_ = nullptr;     // borrowed
  natsSubscription* sub_ = nullptr;  // owned
  BrowseSpec spec_;
  uint64_t initial_pending_ = 0;
  bool done_ = false;
};

// Publishes a batch without waiting between messages, then waits for every acknowledgement:
// one round trip for the batch instead of one per message. Result i belongs to message i; a
// message whose ack did not come within `timeout` is an error (it may still have been stored:
// its msg id lets the stream's duplicate window catch a second publish).
// Owns its own JetStream context (nats.c keeps one async-ack handler per context) and borrows
// the NatsClient. One thread calls PublishAll at a time; the ack handler runs on a nats.c thread.
class BatchPublisher {
 public:
  static Result<std::unique_ptr<BatchPublisher>> Create(NatsClient& client);
  ~BatchPublisher();
  BatchPublisher(const BatchPublisher&) = delete;
  BatchPublisher& operator=(const BatchPublisher&) = delete;

  std::vector<Result<PubAck>> PublishAll(const std::vector<OutMessage>& batch, Millis timeout);

 private:
  BatchPublisher() = default;
  friend struct BatchPublisherAccess;
  void Acked(natsMsg* msg, Result<PubAck> result);

  jsCtx* js_ = nullptr;  // owned
  std::mutex mu_;
  std::unordered_map<natsMsg*, size_t> index_;  // messages of the current batch awaiting acks
  std::vector<std::optional<Result<PubAck>>> results_;
};

// Removes the messages at `seqs` and overwrites their stored bytes (JetStream's erase, not the
// plain delete), with the requests pipelined: sent together, the answers collected as they come
// within `timeout`. Result i belongs to seqs[i]: NotFound when that message is not there
// (already erased, expired, never stored); Retryable when no answer came.
std::vector<Status> EraseAll(NatsClient& client, const std::string& stream,
                             const std::vector<uint64_t>& seqs, Millis timeout);

}  // namespace core::nats_dlq
