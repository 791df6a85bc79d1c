#include "platformctl/queue_move.h"

#include "common/dead_letter.h"
#include "common/nats_stream.h"
#include "common/timefmt.h"

namespace platformctl::queue {

std::string Operator(const std::string& nats_user, const std::string& login,
                     const std::string& host) {
  auto or_unknown = [](const std::string& s) {
    return s.empty() ? std::string("unknown") : dlq::Printable(s.substr(0, 64));
  };
  return "NATS user " + or_unknown(nats_user) + ", " + or_unknown(login) + "@" + or_unknown(host);
}

common::Status CheckRequest(const MoveRequest& r) {
  if (r.seq == 0) return common::Error::Invalid("--seq: a stream sequence is 1 or more");
  if (r.why.empty()) return common::Error::Invalid("--why: say why the message is moved");
  if (r.why.size() > kMaxWhyBytes) {
    return common::Error::Invalid("--why: at most " + std::to_string(kMaxWhyBytes) + " bytes");
  }
  if (dlq::Printable(r.why) != r.why) {
    return common::Error::Invalid("--why: one line of text, no control characters");
  }
  return common::Status::Ok();
}

common::OutMessage PlanMove(const MoveRequest& r, const nats_dlq::StoredMessage& m,
                            const std::string& origin_stream, int64_t now_ns) {
  common::dead_letter::Origin origin;
  origin.subject = m.subject;
  origin.stream = origin_stream;
  origin.stream_seq = m.seq;
  origin.payload = m.data;
  origin.headers = m.headers;
  return common::dead_letter::Build(
      origin, kMovedReason,
      "by " + r.operator_ + " at " + common::FormatRfc3339(now_ns) + ": " + r.why);
}

int RunQueueMove(common::NatsClient& client, const MoveRequest& r, std::ostream& out,
                 std::ostream& err) {
  const dlq::QueueInfo q = dlq::InfoFor(r.queue);
  const std::string at = q.origin_stream + " sequence " + std::to_string(r.seq);
  auto got = nats_dlq::GetOne(client, q.origin_stream, r.seq);
  if (!got) {
    err << "platformctl: cannot read " << at << ": " << got.error().message
        << "; nothing was moved\n";
    return 1;
  }
  if (!*got) {
    err << "platformctl: " << at << " is not there (stored already, dead-lettered, expired, "
        << "or never held); nothing was moved\n";
    return 1;
  }
  const common::OutMessage dl = PlanMove(r, **got, q.origin_stream, common::NowUnixNs());
  auto ack = common::PublishSync(client, dl);
  if (!ack) {
    err << "platformctl: the copy of " << at << " was not stored in " << q.dlq_stream << ": "
        << ack.error().message << "; nothing was moved\n";
    return 1;
  }
  auto erased = nats_dlq::EraseAll(client, q.origin_stream, {r.seq},
                                   common::Millis(client.request_timeout_ms()));
  const std::string copy = q.dlq_stream + " sequence " + std::to_string(ack->seq) +
                           (ack->duplicate ? " (stored by an earlier try)" : "");
  if (!erased[0].ok() && erased[0].error().kind != common::ErrorKind::kNotFound) {
    err << "platformctl: " << at << " was copied to " << copy << " but is still in "
        << q.origin_stream << ": " << erased[0].error().message
        << "; run the same command again (the copy is not made twice)\n";
    return 1;
  }
  out << "moved " << at << " (" << dlq::Printable((*got)->subject) << ") to " << copy
      << ", reason \"" << kMovedReason << "\"; erased from " << q.origin_stream << "\n";
  return 0;
}

}  // namespace platformctl::queue
