#include "platformctl/backlog.h"

#include <algorithm>

namespace platformctl::backlog {

std::optional<double> Rate(uint64_t before, uint64_t after, double interval_seconds) {
  if (!(interval_seconds > 0)) return std::nullopt;
  if (after <= before) return 0.0;
  return static_cast<double>(after - before) / interval_seconds;
}

uint64_t Unclaimed(const StreamReading& r, const ConsumerReading& c) {
  const uint64_t known = c.pending + c.unacked;
  return r.messages > known ? r.messages - known : 0;
}

namespace {

// The one consumer of a work queue, when it answered; nullptr otherwise.
const ConsumerReading* OnlyConsumer(const StreamReading& r) {
  if (!r.work_queue || r.consumers.size() != 1 || r.consumers[0].offline) return nullptr;
  return &r.consumers[0];
}

std::optional<uint64_t> LeftBehind(const StreamReading& before, const StreamReading& now) {
  const ConsumerReading* b = OnlyConsumer(before);
  const ConsumerReading* n = OnlyConsumer(now);
  if (b == nullptr || n == nullptr || b->name != n->name) return std::nullopt;
  if (now.messages == 0 || before.messages == 0 || before.first_seq != now.first_seq ||
      before.first_seq > b->ack_floor_stream_seq) {
    return 0;
  }
  return std::max<uint64_t>(1, std::min(Unclaimed(before, *b), Unclaimed(now, *n)));
}

}  // namespace

StreamView Compute(const std::optional<StreamReading>& before, const StreamReading& now) {
  StreamView v;
  if (before) v.left_behind = LeftBehind(*before, now);
  const uint64_t waiting = now.messages - std::min(now.messages, v.left_behind.value_or(0));
  v.now = now;
  if (now.messages > 0) {
    v.oldest_ns = now.first_ns;
    double age = static_cast<double>(now.read_at_ns - now.first_ns) / 1e9;
    v.oldest_age_seconds = age < 0 ? 0 : age;
  }
  if (before) {
    double dt = static_cast<double>(now.read_at_ns - before->read_at_ns) / 1e9;
    if (dt > 0) {
      v.interval_seconds = dt;
      v.in_rate = Rate(before->last_seq, now.last_seq, dt);
      // Removed = arrived - growth of what is held. A purge or a restart can make it odd;
      // the floor keeps it from going negative.
      uint64_t arrived = now.last_seq >= before->last_seq ? now.last_seq - before->last_seq : 0;
      double removed = static_cast<double>(arrived) + static_cast<double>(before->messages) -
                       static_cast<double>(now.messages);
      v.out_rate = removed > 0 ? removed / dt : 0.0;
    }
  }
  if (waiting == 0) {
    v.draining = true;
    v.time_to_clear_seconds = 0;
  } else if (v.in_rate && v.out_rate && *v.out_rate > *v.in_rate) {
    v.draining = true;
    v.time_to_clear_seconds = static_cast<double>(waiting) / (*v.out_rate - *v.in_rate);
  }
  const ConsumerReading* only_now = OnlyConsumer(now);
  const ConsumerReading* only_before = before ? OnlyConsumer(*before) : nullptr;
  if (!v.draining && only_now && only_before && only_now->name == only_before->name &&
      only_now->pending == 0 && only_before->pending == 0 && v.out_rate && *v.out_rate > 0) {
    v.keeping_up = true;
  }
  for (const auto& c : now.consumers) {
    ConsumerView cv;
    cv.now = c;
    cv.saturated = c.max_ack_pending > 0 && c.unacked >= static_cast<uint64_t>(c.max_ack_pending);
    if (before && v.interval_seconds) {
      for (const auto& b : before->consumers) {
        if (b.name != c.name) continue;
        cv.delivery_rate = Rate(b.delivered_seq, c.delivered_seq, *v.interval_seconds);
        cv.ack_rate = Rate(b.ack_floor_seq, c.ack_floor_seq, *v.interval_seconds);
        cv.wedged = c.unacked > 0 && b.unacked > 0 && c.ack_floor_seq == b.ack_floor_seq &&
                    c.last_acked_ns == b.last_acked_ns;
        if (only_now == &c && only_before != nullptr && only_before->name == c.name) {
          cv.ack_rate = v.out_rate;
          cv.ack_rate_from_floor = false;
          cv.floor_held = c.unacked > 0 && c.ack_floor_stream_seq == b.ack_floor_stream_seq &&
                          v.out_rate && *v.out_rate > 0;
        }
      }
    }
    v.consumers.push_back(std::move(cv));
  }
  return v;
}

}  // namespace platformctl::backlog
