// What a partition test reads while it runs and afterwards (partition_fixture.h): a stream's
// drain sampled on a thread of its own (DrainWatch), and the handovers and lease terms of the
// services, from Umami's and PostgreSQL's records and the services' logs. Pure but for the
// watch's reads.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "platformctl/nats_admin.h"
#include "tests/partition/partition_fixture.h"

namespace partition_test {
namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

DrainWatch::DrainWatch(std::unique_ptr<common::NatsClient> client, std::string stream)
    : client_(std::move(client)), stream_(std::move(stream)) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      auto r = platformctl::nats_admin::ReadStream(*client_, stream_);
      if (r) {
        std::lock_guard lock(mu_);
        samples_.push_back({WallNs(), r->last_seq - r->messages, r->messages});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
}

DrainWatch::~DrainWatch() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

DrainWatch::Stall DrainWatch::LongestStall(int64_t from_ns) const {
  std::lock_guard lock(mu_);
  Stall best;
  if (samples_.empty()) return best;
  Sample last_move = samples_.front();
  for (const Sample& s : samples_) {
    if (s.left == last_move.left) continue;
    // Messages left between last_move and s; before that, none did for this long.
    double gap = static_cast<double>(s.at_ns - last_move.at_ns) / 1e9;
    if (s.at_ns > from_ns && last_move.held > 0 && gap > best.seconds) {
      best.seconds = gap;
      best.began_s = static_cast<double>(last_move.at_ns - from_ns) / 1e9;
    }
    last_move = s;
  }
  // Still stalled at the last sample.
  const Sample& end = samples_.back();
  double open = static_cast<double>(end.at_ns - last_move.at_ns) / 1e9;
  if (end.held > 0 && end.at_ns > from_ns && open > best.seconds) {
    best.seconds = open;
    best.began_s = static_cast<double>(last_move.at_ns - from_ns) / 1e9;
  }
  return best;
}

std::string Handovers::Describe() const {
  std::string out = std::to_string(count) + " handover(s)";
  if (count > 0) out += ", shortest gap " + Fmt("%.1f s", shortest_gap_s);
  out += ", gaps under 1 s: " + std::to_string(close) +
         ", old leader's still unanswered at a handover: " + std::to_string(under_way);
  return out;
}

Handovers CountHandovers(std::vector<Act> acts, int64_t from_ns) {
  std::sort(acts.begin(), acts.end(),
            [](const Act& a, const Act& b) { return a.start_ns < b.start_ns; });
  Handovers h;
  for (size_t i = 1; i < acts.size(); ++i) {
    if (acts[i].who == acts[i - 1].who || acts[i].start_ns < from_ns) continue;
    ++h.count;
    double gap = static_cast<double>(acts[i].start_ns - acts[i - 1].start_ns) / 1e9;
    if (h.shortest_gap_s < 0 || gap < h.shortest_gap_s) h.shortest_gap_s = gap;
    if (gap < 1.0) ++h.close;
    for (size_t k = i; k-- > 0 && acts[k].who == acts[i - 1].who;) {
      if (acts[k].end_ns > acts[i].start_ns) ++h.under_way;
    }
  }
  return h;
}

std::string TermCheck::Describe() const {
  std::string out = std::to_string(handovers) + " handover(s)";
  if (handovers > 0)
    out += ", shortest gap from the old term's end " + Fmt("%.1f s", shortest_gap_s);
  return out + ", overlapping terms: " + std::to_string(overlaps);
}

TermCheck CheckTerms(std::vector<Term> terms, int64_t from_ns) {
  std::sort(terms.begin(), terms.end(),
            [](const Term& a, const Term& b) { return a.begin_ns < b.begin_ns; });
  TermCheck c;
  for (size_t i = 1; i < terms.size(); ++i) {
    const Term& old = terms[i - 1];
    const Term& now = terms[i];
    if (now.begin_ns < from_ns) continue;
    if (old.who != now.who) ++c.handovers;
    if (old.end_ns == 0 || old.end_ns > now.begin_ns) {
      ++c.overlaps;
      continue;
    }
    if (old.who == now.who) continue;
    double gap = static_cast<double>(now.begin_ns - old.end_ns) / 1e9;
    if (c.shortest_gap_s < 0 || gap < c.shortest_gap_s) c.shortest_gap_s = gap;
  }
  return c;
}

}  // namespace partition_test
