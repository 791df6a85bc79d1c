// Scenarios from a seed, the traffic they bring, the end of a run and the ledger's last word.
#include <algorithm>
#include <cstdio>

#include "replayer/classifier.h"
#include "tests/sim/sim_internal.h"

namespace sim {
namespace {

milliseconds Ms(double v) { return milliseconds(static_cast<int64_t>(v)); }

}  // namespace

Scenario MakeScenario(uint64_t seed, int minutes) {
  Rng r(seed);
  Scenario s;
  s.seed = seed;
  s.traffic = milliseconds(int64_t{minutes} * 60'000);
  s.version = r.Chance(0.5) ? Version::k3_1 : Version::k2_10;
  s.processes = static_cast<int>(r.Int(1, 4));
  s.visitors = static_cast<int>(r.LogUniform(1, 5000));
  s.sites = static_cast<int>(r.Int(1, 3));
  s.rate = r.LogUniform(0.2, 60);
  s.bursts = r.Chance(0.3);
  s.backlog_times = r.Chance(0.25);
  s.poison = r.Chance(0.3) ? 0 : r.LogUniform(0.001, 0.08);
  auto& c = s.core;
  for (int i = 0; i < s.processes; ++i) c.processes.push_back("http://umami-" + std::to_string(i));
  c.max_in_flight = static_cast<int>(r.LogUniform(20, 900));
  c.workers = static_cast<int>(r.Int(4, 128));
  c.sends_per_process = static_cast<int>(r.Int(2, 32));
  c.ack_wait = Ms(r.Uniform(3000, 30'000));
  c.send_timeout = Ms(r.Uniform(5000, 30'000));
  c.fetch_batch = static_cast<int>(r.Int(10, 100));
  c.max_bytes_in_flight = r.Chance(0.2) ? 64 * 1024 : 64ll << 20;
  c.max_message_bytes = 16 * 1024;
  // Batches where Umami has /api/batch (3.1): mostly the default, sometimes small, sometimes off.
  c.batch_max = r.Chance(0.15) ? 0 : r.Chance(0.6) ? 20 : static_cast<int>(r.Int(2, 20));
  int faults = static_cast<int>(r.Int(0, 5));
  for (int i = 0; i < faults; ++i) {
    FaultSpan f;
    static const Fault kinds[] = {
        Fault::kDown,      Fault::kHung,     Fault::kSlow,     Fault::kDbDown,  Fault::kReadOnly,
        Fault::kHalfWrite, Fault::kOddReply, Fault::kKvDown,   Fault::kDlqDown, Fault::kFetchDown,
        Fault::kReadOnly,  Fault::kDbDown,   Fault::kAcksLost, Fault::kNoBatch};
    f.fault = kinds[r.Int(0, sizeof kinds / sizeof kinds[0] - 1)];
    bool whole = f.fault == Fault::kDbDown || f.fault == Fault::kReadOnly ||
                 f.fault == Fault::kHalfWrite || f.fault == Fault::kKvDown ||
                 f.fault == Fault::kDlqDown || f.fault == Fault::kFetchDown ||
                 f.fault == Fault::kAcksLost;
    // Database faults hit every process (they share one database); process faults one.
    f.process = whole || r.Chance(0.3) ? -1 : static_cast<int>(r.Int(0, s.processes - 1));
    double len =
        f.fault == Fault::kHalfWrite ? r.Uniform(2000, 30'000) : r.LogUniform(10'000, 240'000);
    auto start = Ms(r.Uniform(0, static_cast<double>(s.traffic.count()) * 0.8));
    f.start = TimePoint{} + std::chrono::hours(1000) + start;
    f.end = f.start + Ms(len);
    s.faults.push_back(f);
  }
  int events = static_cast<int>(r.Int(0, 3));
  for (int i = 0; i < events; ++i) {
    InstanceEvent e;
    double roll = r.Uniform();
    e.action = roll < 0.5    ? InstanceAction::kCrash
               : roll < 0.75 ? InstanceAction::kLeaseLoss
                             : InstanceAction::kStop;
    e.at = TimePoint{} + std::chrono::hours(1000) +
           Ms(r.Uniform(0, static_cast<double>(s.traffic.count())));
    s.instance_events.push_back(e);
  }
  return s;
}

std::string Scenario::Describe() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "seed %llu: umami %s x%d, %d visitors on %d sites, %.2f events/s%s%s, poison "
                "%.3f, in flight %d, workers %d/%d per process, ack wait %llds, send timeout "
                "%llds, batches of %d",
                static_cast<unsigned long long>(seed), version == Version::k3_1 ? "3.1" : "2.10",
                processes, visitors, sites, rate, bursts ? " in bursts" : "",
                backlog_times ? ", accepted_at jumping" : "", poison, core.max_in_flight,
                core.workers, core.sends_per_process,
                static_cast<long long>(core.ack_wait.count() / 1000),
                static_cast<long long>(core.send_timeout.count() / 1000), core.batch_max);
  std::string out = buf;
  TimePoint base = TimePoint{} + std::chrono::hours(1000);
  for (const auto& f : faults) {
    std::snprintf(buf, sizeof buf, "; %s on %s %.0f-%.0fs", FaultName(f.fault),
                  f.process < 0 ? "all" : ("process " + std::to_string(f.process)).c_str(),
                  std::chrono::duration<double>(f.start - base).count(),
                  std::chrono::duration<double>(f.end - base).count());
    out += buf;
  }
  for (const auto& e : instance_events) {
    std::snprintf(buf, sizeof buf, "; %s at %.0fs",
                  e.action == InstanceAction::kCrash       ? "crash"
                  : e.action == InstanceAction::kLeaseLoss ? "lease loss"
                                                           : "SIGTERM",
                  std::chrono::duration<double>(e.at - base).count());
    out += buf;
  }
  return out;
}

std::string World::MakeBody(int index, uint64_t seq) const {
  const EventRecord& r = events_[index];
  std::string site = "0000000" + std::to_string(r.site) + "-aaaa-4bbb-8ccc-000000000000";
  std::string ua = "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0";
  std::string type = "event";
  std::string payload = R"("hostname":"example.com","url":"/p)" + std::to_string(index % 50) +
                        R"(","title":"Page","language":"en-US","screen":"1920x1080")";
  switch (r.kind) {
    case Kind::kGood:
      if (index % 3 == 0) payload += R"(,"name":"signup","data":{"plan":"pro","seats":12})";
      break;
    case Kind::kBot:
      ua = "Googlebot/2.1 (+http://www.google.com/bot.html)";
      break;
    case Kind::kValidation:
      payload += R"(,"name":")" + std::string(60, 'n') + "\"";
      break;
    case Kind::kIdentify:
      type = "identify";
      payload += R"(,"data":{"plan":"team"})";
      break;
    case Kind::kLongUrl:
      payload = R"("hostname":"example.com","url":"/)" + std::string(600, 'u') + "\"";
      break;
    case Kind::kHalfWrite:
      payload += index % 2 ? R"(,"name":"buy","data":{"amount":1e21})"
                           : R"(,"name":"buy","data":{"when":"2024-13-01T00:00:00"})";
      break;
    case Kind::kMalformed:
      return index % 2
                 ? "{\"id\":\"e" + std::to_string(seq) + "\",\"website\":"
                 : R"({"website":"w","visitor":"","type":"event","accepted_at":1,"payload":{}})";
    case Kind::kHeaderPoison:
      ua = "Mozilla/5.0\\r\\nX-Smuggled: 1";
      break;
    case Kind::kReaderKiller:
      break;  // a good event's body: what kills its reader is not in the model's parser
    case Kind::kUnknownSite:
      break;  // a good event's body, of a site (index sc_.sites) Umami does not hold
  }
  return "{\"id\":\"e" + std::to_string(seq) + "\",\"website\":\"" + site + "\",\"visitor\":\"v" +
         std::to_string(r.visitor) + "\",\"accepted_at\":" + std::to_string(r.accepted_ms) +
         ",\"ip\":\"203.0.113." + std::to_string(r.visitor % 250) + "\",\"user_agent\":\"" + ua +
         "\",\"type\":\"" + type + "\",\"payload\":{" + payload + "}}";
}

void World::ScheduleTraffic() {
  // One publish schedules the next: a Poisson stream, faster in bursts.
  // The steps are members: a lambda holding a shared_ptr to itself would never be freed.
  visitor_clocks_.assign(sc_.visitors, 0);
  traffic_step_ = [this] {
    std::vector<int64_t>* clocks = &visitor_clocks_;
    TimePoint end = start_ + sc_.traffic;
    bool over = now_ >= end;
    if (over && Quiet()) return;
    EventRecord r;
    if (over) {
      // After the traffic: a trickle of good events from visitors of their own, as live
      // traffic never stops (a write fault ends with the next event stored).
      r.visitor = sc_.visitors + static_cast<int>(events_.size() % 1000);
      r.kind = Kind::kGood;
    } else {
      r.visitor = static_cast<int>(rng_.Int(0, sc_.visitors - 1));
      r.kind = Kind::kGood;
      if (rng_.Chance(sc_.poison)) {
        static const Kind kinds[] = {Kind::kBot,         Kind::kValidation, Kind::kIdentify,
                                     Kind::kLongUrl,     Kind::kHalfWrite,  Kind::kMalformed,
                                     Kind::kHeaderPoison};
        r.kind = kinds[rng_.Int(0, 6)];
      } else if (rng_.Chance(0.02)) {
        r.kind = Kind::kBot;
      }
    }
    // With reader_killer, one event kills the reader that parses it (issue 35: a message every
    // leader died on in turn); not drawn from the generator, so the scenario's draws stay as
    // its seed made them until the first crash.
    if (sc_.reader_killer && !over && events_.size() == 100) r.kind = Kind::kReaderKiller;
    r.site = r.visitor % sc_.sites;
    // With unknown_site, every tenth visitor is of a website Umami does not hold (drawn from no
    // generator: the scenario's draws stay as its seed made them).
    if (sc_.unknown_site && !over && r.visitor % 10 == 9 && r.kind != Kind::kReaderKiller) {
      r.site = sc_.sites;
      r.kind = Kind::kUnknownSite;
      ++stats_.unknown_site_events;
    }
    int64_t wall = wall_start_ms_ + std::chrono::duration_cast<milliseconds>(now_ - start_).count();
    if (sc_.backlog_times && !over && r.visitor < static_cast<int>(clocks->size())) {
      // An edge backlog: the visitor's events span hours of accepted_at, published in minutes.
      int64_t& c = (*clocks)[r.visitor];
      c += static_cast<int64_t>(rng_.Exp(3 * kMinute));
      if (rng_.Chance(0.2)) c += rng_.Int(31, 200) * kMinute;
      r.accepted_ms = wall_start_ms_ - 12 * 60 * kMinute + c;
    } else {
      r.accepted_ms = wall;
    }
    r.lane = "0000000" + std::to_string(r.site) + "-aaaa-4bbb-8ccc-000000000000\nv" +
             std::to_string(r.visitor);
    bool poison_lane =
        r.kind == Kind::kValidation ||
        (sc_.version == Version::k2_10 && (r.kind == Kind::kIdentify || r.kind == Kind::kLongUrl));
    if (poison_lane) poison_lanes_.insert(r.lane);
    events_.push_back(std::move(r));
    Publish(static_cast<int>(events_.size()) - 1);
    double rate = over ? 0.05 : sc_.rate;
    if (sc_.bursts && !over) {
      auto in_minute = std::chrono::duration_cast<milliseconds>(now_ - start_).count() % 60'000;
      rate *= in_minute < 10'000 ? 5.0 : 0.2;
    }
    At(now_ + milliseconds(std::max<int64_t>(1, static_cast<int64_t>(rng_.Exp(1000.0 / rate)))),
       traffic_step_);
  };
  At(now_ + milliseconds(10), traffic_step_);
  At(start_ + sc_.traffic, [this] { traffic_over_ = true; });
  // The end: every second after the traffic, see whether all is quiet.
  end_check_ = [this] {
    if (traffic_over_ && Quiet()) {
      healed_ = true;
      healed_done_ = true;
      FinalChecks();
      while (!actions_.empty()) actions_.pop();
      return;
    }
    At(now_ + std::chrono::seconds(1), end_check_);
  };
  At(start_ + sc_.traffic, end_check_);
}

void World::ScheduleFaults() {
  for (size_t i = 0; i < sc_.faults.size(); ++i) {
    const FaultSpan& f = sc_.faults[i];
    bool checks_fail = f.fault == Fault::kDown || f.fault == Fault::kHung ||
                       f.fault == Fault::kSlow || f.fault == Fault::kDbDown;
    if (!checks_fail) continue;
    // A process that recovers takes sends again within a bounded time: a check begun in the
    // fault given up after the send timeout + 5 s, 2 s to the next one, its answer cached 3 s,
    // plus margin.
    const milliseconds bound = sc_.core.send_timeout + std::chrono::seconds(15);
    At(f.end + bound, [this, i, bound] {
      const FaultSpan& fi = sc_.faults[i];
      for (size_t j = 0; j < sc_.faults.size(); ++j) {
        const FaultSpan& g = sc_.faults[j];
        bool overlaps = g.end > fi.end - bound - std::chrono::seconds(5) && g.start < now_;
        if (j != i && overlaps) return;  // not a clean recovery
      }
      if (leader_ < 0 || !inst_[leader_]->core || inst_[leader_]->stopping) return;
      ++stats_.invariant_checks;
      for (int p = 0; p < sc_.processes; ++p) {
        if (fi.process >= 0 && p != fi.process) continue;
        if (!inst_[leader_]->core->ProcessUp(p)) {
          Fail("umami process " + std::to_string(p) + " recovered from " + FaultName(fi.fault) +
               " " + std::to_string(bound.count() / 1000) + " s ago and still counts as down");
          return;
        }
      }
    });
  }
  for (const auto& e : sc_.instance_events) {
    At(e.at, [this, e] {
      int target = e.action == InstanceAction::kCrash && rng_.Chance(0.3) && leader_ >= 0
                       ? 1 - leader_
                       : leader_;
      if (target >= 0) CrashOrLose(target, e.action);
    });
  }
}

bool World::Quiet() const { return acked_ == msgs_.size(); }

void World::FinalChecks() {
  for (size_t i = 0; i < events_.size() && failure_.empty(); ++i) {
    const EventRecord& r = events_[i];
    ++stats_.invariant_checks;
    std::string what = std::string(KindName(r.kind)) + " event seq " + std::to_string(i + 1);
    bool poison_sent =
        r.kind == Kind::kValidation ||
        (sc_.version == Version::k2_10 && (r.kind == Kind::kIdentify || r.kind == Kind::kLongUrl));
    bool at_once = r.kind == Kind::kHalfWrite || r.kind == Kind::kMalformed ||
                   r.kind == Kind::kHeaderPoison || r.kind == Kind::kReaderKiller;
    // Both can happen only while two instances acted at once (a lease lost with the send under
    // way) or after a crash in the window, or after WEB_DLQ stored a copy whose answer was lost:
    // those are excused and counted.
    if (r.dlq > 0 && r.ok_rows > 0 && r.excuses == 0 && r.dlq_answer_lost == 0) {
      Fail(what + " is both stored and in WEB_DLQ");
    }
    if (r.ok_rows > 1 + r.excuses) {
      Fail(what + " was stored " + std::to_string(r.ok_rows) + " times, " +
           std::to_string(r.excuses) + " of them explained by a crash or lease loss");
    }
    if (at_once && (r.dlq == 0 || r.sends > 0)) Fail(what + " did not go to WEB_DLQ at once");
    if (r.kind == Kind::kUnknownSite) {
      if (r.dlq == 0) Fail(what + " never went to WEB_DLQ");
      if (r.rows > 0) Fail(what + " was stored by a Umami that does not hold its website");
      continue;
    }
    if (poison_sent) {
      if (r.dlq == 0) Fail(what + " never went to WEB_DLQ");
      if (r.dlq_reason == replayer::kFailedReason && r.sends < replayer::kMaxFailures) {
        Fail(what + " was dead-lettered after " + std::to_string(r.sends) + " sends");
      }
    }
    if (r.kind == Kind::kBot && r.dlq == 0 && r.dropped == 0) Fail(what + " was never answered");
    bool storable = !poison_sent && !at_once && r.kind != Kind::kBot;
    if (storable && r.rows == 0 && r.dlq == 0)
      Fail(what + " is lost: neither stored nor in WEB_DLQ");
    if (r.rows > 1) {
      stats_.duplicates += r.rows - 1;
      stats_.excused_duplicates += std::min(r.ok_rows - 1 > 0 ? r.ok_rows - 1 : 0, r.excuses);
      stats_.umami_duplicates += r.rows - r.ok_rows;
    }
    if (r.ok_rows > 0) ++stats_.stored;
    if (r.dropped > 0) ++stats_.dropped;
  }
  // Umami 3.1's visits: a visit never spans more than an hour and a half of the visitor's
  // events (30 minutes from its start with a token, plus the hour a tokenless start shares).
  for (const auto& [visit, span] : visits_) {
    ++stats_.invariant_checks;
    if (span.second - span.first > 90 * kMinute) {
      Fail("a 3.1 visit spans " + std::to_string((span.second - span.first) / kMinute) +
           " minutes of its visitor's events");
      break;
    }
  }
  stats_.visits_split = static_cast<int64_t>(visits_.size());
}

}  // namespace sim
