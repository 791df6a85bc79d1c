// The DLQ side of JetStream for platformctl: reading a limits-retention stream without consuming
// it, publishing a batch of messages with one wait for all their acks, and erasing messages
// securely in batches of pipelined requests.
//
// Adapter over nats.c (see nats_client.h); callers see only our types. A StreamBrowser walks
// the stream in sequence order through a push consumer of its own with as many replicas as the
// stream (so one node down neither blocks nor strands it), deleted when the walk ends; message
// gets ($JS.API.STREAM.MSG.GET, next by subject, pipelined) take over when no consumer can be
// had (dlq/nats_walk.cpp). Every request is retried within nats_admin::kClusterPatience. The
// browser borrows the NatsClient, which must outlive it; one thread uses it. EraseAll and GetAll
// may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
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
#include "platformctl/nats_admin_request.h"

typedef struct __natsMsg natsMsg;
typedef struct __natsSubscription natsSubscription;
typedef struct __jsCtx jsCtx;

namespace platformctl::nats_dlq {

// Built on common's types (Result, NatsClient, Headers): used unqualified here.
using namespace common;  // NOLINT(google-build-using-namespace)

// One stored message as the browser saw it. `data` is empty when the browser keeps headers
// only; `size` is the payload size either way.
struct StoredMessage {
  uint64_t seq = 0;
  int64_t time_ns = 0;  // when the stream stored it
  std::string subject;
  Headers headers;  // as stored (Nats-Msg-Id included)
  std::string data;
  uint64_t size = 0;

  std::optional<std::string> Header(std::string_view key) const;
};

struct BrowseSpec {
  std::string stream;
  std::string filter_subject;  // e.g. dlq.web.* or dlq.web.<site>
  uint64_t start_seq = 1;
  // When non-zero: start at the first message stored at or after this time (found by a binary
  // search over message gets; it may start a little earlier: filter by time too).
  int64_t start_time_ns = 0;
  uint64_t end_seq = 0;       // the last sequence to return (0: nothing); later ones end the walk
  bool headers_only = false;  // the payload is dropped as it arrives; only its size is kept
  uint64_t at_most = 0;       // an upper bound of what the walk returns, for progress displays
  int replicas = 1;           // the stream's: its walking consumer gets as many
};

class StreamBrowser {
 public:
  static Result<std::unique_ptr<StreamBrowser>> Open(NatsClient& client, const BrowseSpec& spec);
  ~StreamBrowser();  // removes its consumer
  StreamBrowser(const StreamBrowser&) = delete;
  StreamBrowser& operator=(const StreamBrowser&) = delete;

  // The next matching message up to end_seq, in sequence order; nullopt when the walk is over
  // (its consumer is removed then). Messages erased while the walk runs are simply not
  // returned.
  Result<std::optional<StoredMessage>> Next();

  // spec.at_most: an upper bound for progress displays.
  uint64_t initial_pending() const { return spec_.at_most; }

 private:
  StreamBrowser() = default;
  Status Start();  // a consumer from cursor_ (dlq/nats_walk.cpp says how)
  // Unsubscribes and deletes it, retrying the delete within patience_limit.
  void Stop(Millis patience_limit = nats_admin::kClusterPatience);
  Status Reset();    // a new one from cursor_, or message gets when consumers keep failing
  Status Receive();  // one message of the consumer (or a flow control, a heartbeat)
  Status Fill();     // the next window of message gets
  // The consumer says it has nothing more: believed only when the stream's leader has no match
  // from cursor_ to end_seq either (a message get); otherwise the walk goes on by message gets.
  Status ConsumerSaysDone();

  NatsClient* client_ = nullptr;  // borrowed
  BrowseSpec spec_;
  uint64_t cursor_ = 1;  // the next stream sequence not returned yet
  std::deque<StoredMessage> ready_;
  bool done_ = false;
  // The consumer.
  natsSubscription* sub_ = nullptr;  // owned
  std::string consumer_;             // its name, while it exists
  uint64_t last_cseq_ = 0;
  int quiet_ = 0;   // one-second waits without any message
  int resets_ = 0;  // new consumers since the last message
  // Message gets, when no consumer can be had.
  bool gets_ = false;
  size_t window_ = 1;  // gets in flight at once: doubles while they find messages
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
// within `timeout`; those without an answer are sent again within kClusterPatience (an answer
// lost in an election: a retry that finds the message gone counts as erased, our first request
// did it; JudgeRefusedErase says when the stream is read to know). Result i belongs to seqs[i]:
// NotFound when that message was not there (already erased, expired, never stored); Retryable
// when no answer came.
std::vector<Status> EraseAll(NatsClient& client, const std::string& stream,
                             const std::vector<uint64_t>& seqs, Millis timeout);

// What an erase request's refusal comes to, after `tries` sends of it (pure, for the tests).
// The refusal of a first send stands. A retry's may be the first send's work, its answer lost
// (a DLQ leader change): refused "not found" (ErrorKind::kNotFound) it counts as erased; refused
// as a delete of what the stream does not hold (js_error::kSequenceNotFound, or
// kStreamMsgDeleteFailed, which other store failures answer too) the stream is read first
// (`held`: nullopt until then) and only a message it no longer holds counts as erased. Judged
// by the error's code, never its text.
enum class RefusedErase { kStands, kErased, kReadStream };
RefusedErase JudgeRefusedErase(int tries, const Error& refusal, std::optional<bool> held);

// Whether each of `seqs` is stored in the stream as its leader answers now (message gets,
// pipelined, retried as EraseAll): true stored, false not (NotFound), or the error.
// The message stored at `seq`, headers and payload, as the stream's leader answers now (retried
// as EraseAll); nullopt when there is none.
Result<std::optional<StoredMessage>> GetOne(NatsClient& client, const std::string& stream,
                                            uint64_t seq);

std::vector<Result<bool>> GetAll(NatsClient& client, const std::string& stream,
                                 const std::vector<uint64_t>& seqs, Millis timeout);

// Pure, for the tests: the header block of a stored message ("NATS/1.0\r\nKey: value\r\n...")
// as key/value pairs in order.
Headers ParseHeaderBlock(std::string_view block);

}  // namespace platformctl::nats_dlq
