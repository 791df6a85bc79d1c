// Consuming from and publishing to JetStream streams.
//
// Adapter over nats.c (see nats_client.h); callers see only our types.
// Ownership: a Message owns its nats.c message and frees it in its destructor; a PullConsumer
// owns its subscription. Both borrow the NatsClient, which must outlive them.
// Thread-safety: one PullConsumer is fetched from by one thread at a time. A Message may be
// moved to another thread and acked there, but only one thread may use a given Message.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/message.h"
#include "common/nats_client.h"
#include "common/result.h"

typedef struct __natsMsg natsMsg;
typedef struct __natsSubscription natsSubscription;

namespace common {

// A message delivered by a pull consumer.
class Message {
 public:
  explicit Message(natsMsg* msg);  // takes ownership
  ~Message();
  Message(Message&& other) noexcept;
  Message& operator=(Message&& other) noexcept;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  std::string_view subject() const;
  std::string_view data() const;
  std::optional<std::string> Header(const std::string& key) const;
  // The header's first value without a copy; valid while this message lives.
  std::optional<std::string_view> HeaderView(const char* key) const;
  Headers AllHeaders() const;
  // The bytes the headers take (names, values, ": " and CRLF each): AllHeaders()'s size
  // without building it, for budgets counted on every message.
  size_t HeaderBytes() const;

  // The reply subject: for a JetStream delivery its ack subject ("$JS.ACK...").
  std::string_view reply() const;
  // From the ack subject, either format (common/ack_subject.h): origin stream, stream sequence,
  // delivery count, time the stream stored it. Empty and 0 for a message that has none.
  const std::string& stream() const { return stream_; }
  uint64_t stream_seq() const { return stream_seq_; }
  uint64_t num_delivered() const { return num_delivered_; }
  int64_t timestamp_ns() const { return timestamp_ns_; }

  Status Ack();  // fire-and-forget: one write, no round trip
  // The same ack written on another connection, e.g. one that coalesces writes (JetStream takes
  // an ack from any connection). Not for a message already acked, nak'ed or terminated.
  Status AckOn(NatsClient& client);
  Status AckSync();          // waits for the server to confirm
  Status Nak(Millis delay);  // redeliver after delay (0 = now)
  Status InProgress();       // resets the ack wait timer
  Status Term();             // never redeliver

 private:
  // Every (name, value) pair of the headers, in nats.c's order; the pointers live for the call.
  void ForEachHeader(const std::function<void(const char*, const char*)>& fn) const;

  natsMsg* msg_ = nullptr;
  std::string stream_;
  uint64_t stream_seq_ = 0;
  uint64_t num_delivered_ = 0;
  int64_t timestamp_ns_ = 0;
};

struct ConsumerSpec {
  std::string stream;
  std::string durable;
  std::string filter_subject;  // required by nats.c: the stream's subject for all of it
  Millis ack_wait{30'000};
  int64_t max_ack_pending = 1000;
  int64_t max_deliver = -1;  // unlimited: outages must not exhaust deliveries
  // Bytes nats.c may hold for this subscription before it drops messages as a slow consumer
  // (0: nats.c's default, 64 MiB). A consumer that fetches by bytes sets it above what it asks
  // for at once, so a fetch can never overflow it.
  int64_t pending_bytes_limit = 0;
};

// What a fetch bounded by bytes got.
struct Fetched {
  std::vector<Message> messages;
  // Nothing came because the next message is bigger than max_bytes: the server keeps it for a
  // fetch with room for it (e.g. one message and no byte limit).
  bool next_exceeds_max_bytes = false;
};

// A durable pull consumer, created if absent (an existing one is bound as it is).
class PullConsumer {
 public:
  static Result<std::unique_ptr<PullConsumer>> Bind(NatsClient& client, const ConsumerSpec& spec);
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;

  // Up to `batch` messages, waiting at most `timeout`. No message in time = an empty vector.
  // Messages nats.c already holds (answers to an earlier request that came late) are returned
  // first, on their own.
  // While the connection is down both Fetch()es fail at once (retryable) and ask for nothing:
  // nats.c would keep a pull request made then and send it on reconnect, when no fetch waits
  // for it any more, and the server would hand it a batch that then sits unacked for an ack
  // wait (measured: every message published during a 20 s cut, 30 s late).
  Result<std::vector<Message>> Fetch(int batch, Millis timeout);

  // Up to `batch` messages of at most `max_bytes` bytes in all (0 = no byte limit), as the
  // server counts them (subject, reply subject, headers and payload), waiting at most
  // `timeout`; returns what is there at once, else waits for the first. Messages nats.c
  // received for an earlier request after it stopped waiting are returned first, on their own
  // (no request goes out then), and count against max_bytes.
  Result<Fetched> Fetch(int batch, int64_t max_bytes, Millis timeout);

  // The messages nats.c received for an earlier request that no Fetch() returned, without
  // asking the server: a fetch that stopped waiting (its time was up on a loaded machine) before
  // nats.c had read what the server sent leaves them for the next Fetch(). At a stop there is no
  // next one, and they are this process's all the same (delivered, unacked): hand them back, or
  // they wait out the ack wait. Read what the server sent first (NatsClient::Flush).
  std::vector<Message> TakeUnclaimed();

 private:
  PullConsumer() = default;
  // Takes up to `max` messages (and about max_bytes, 0 = any) that nats.c already holds for
  // this subscription, without asking the server; returns how many.
  size_t TakeHeld(std::vector<Message>* out, int max, int64_t max_bytes);
  Status RefuseWhileDisconnected() const;
  natsSubscription* sub_ = nullptr;     // owned
  const NatsClient* client_ = nullptr;  // borrowed: outlives the consumer
  std::string what_;
};

struct PubAck {
  std::string stream;
  uint64_t seq = 0;
  bool duplicate = false;  // the stream already had this msg id: nothing was stored
};

// Publishes and waits for the stream's acknowledgement.
Result<PubAck> PublishSync(NatsClient& client, const OutMessage& message);

// Whether a publish (PublishSync's error) was refused for the message's size: above the
// server's max payload (nats.c refuses it before sending) or the stream's max message size.
// Retrying cannot help until an operator raises a limit.
bool IsMessageTooLarge(const Error& publish_error);

}  // namespace common
