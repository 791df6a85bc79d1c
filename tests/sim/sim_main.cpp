// replayer_sim: runs seeded scenarios of the replayer's engine core in the simulated world
// (docs/simulation.md).
//
//   replayer_sim --scenarios 2000 --minutes 10 --threads 2   the CI run (CTest label simulation)
//   replayer_sim --seed 1234 --minutes 10 --trace             one scenario, replayed exactly
//   replayer_sim --matrix write-fault                          the write-fault matrix
//   replayer_sim --reader-killer --scenarios 200 --minutes 10  the crash-loop guard's run
//   replayer_sim --own-marker --scenarios 200 --minutes 10     a live process's own markers
//
// Exit 0 when every scenario kept every invariant; 1 with the first failing seed, the command
// that replays it and the trace of its last events.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/sim/sim_world.h"

namespace {

struct Totals {
  std::atomic<int64_t> scenarios{0}, checks{0}, events{0}, stored{0}, dlq{0}, dups{0},
      umami_dups{0}, runbook{0}, crashes{0}, batches{0}, batched{0}, unknown_site{0},
      unknown_site_sends{0}, markers_left{0}, own_markers{0}, window_kills{0}, stops_counted{0};
  std::atomic<double> minutes{0};
};

struct Failure {
  uint64_t seed = 0;
  std::string what, trace, scenario;
};

int minutes_opt = 10;
// --reader-killer: one event of every scenario kills the reader that parses it (the crash-loop
// guard's case), and readers are killed from outside inside good redeliveries' marked windows
// (sim::Scenario::reader_killer); off, the scenarios are the seeds' as before.
bool reader_killer_opt = false;
// --unknown-site: every tenth visitor's events are of a website Umami does not hold.
bool unknown_site_opt = false;
// --own-marker: marker deletes fail for a while and the leader, losing its lease as it reads
// redeliveries, takes it back itself (sim::Scenario::own_marker). The seed's own instance
// events are left out (another process must not lead: a marker left behind by a live process
// found by another counts as a stopped reader, a case the guard cannot tell from a crash).
bool own_marker_opt = false;
sim::Scenario Make(uint64_t seed, int minutes) {
  sim::Scenario s = sim::MakeScenario(seed, minutes);
  s.reader_killer = reader_killer_opt;
  s.unknown_site = unknown_site_opt;
  if (own_marker_opt) {
    // Drawn from a generator of its own: the seed's other draws stay as they were.
    sim::Rng r(seed ^ 0x0a11a5eULL);
    s.own_marker = true;
    s.instance_events.clear();
    const auto base = sim::TimePoint{} + std::chrono::hours(1000);
    const double traffic_ms = static_cast<double>(s.traffic.count());
    sim::FaultSpan f;
    f.fault = sim::Fault::kMarkerDeleteFails;
    f.start =
        base + std::chrono::milliseconds(static_cast<int64_t>(r.Uniform(0.1, 0.5) * traffic_ms));
    f.end = f.start + std::chrono::milliseconds(static_cast<int64_t>(r.Uniform(60'000, 240'000)));
    s.faults.push_back(f);
    // The first loss brings redeliveries (after the ack wait), read under markers that stay.
    s.instance_events.push_back(
        {f.start + std::chrono::milliseconds(static_cast<int64_t>(r.Uniform(1000, 10'000))),
         sim::InstanceAction::kLeaseLoss});
  }
  return s;
}
std::string self = "replayer_sim";

bool RunScenario(const sim::Scenario& sc, Totals& t, Failure* failure, bool print_stats) {
  sim::World w(sc);
  std::string why = w.Run();
  const auto& s = w.stats();
  t.scenarios++;
  t.checks += s.invariant_checks;
  t.events += s.published;
  t.stored += s.stored;
  t.dlq += s.dead_lettered;
  t.dups += s.duplicates;
  t.umami_dups += s.umami_duplicates;
  t.runbook += s.good_dead_lettered_runbook;
  t.crashes += s.crashes;
  t.batches += s.batches;
  t.batched += s.batched;
  t.unknown_site += s.unknown_site_events;
  t.unknown_site_sends += s.unknown_site_sends;
  t.markers_left += s.markers_left;
  t.own_markers += s.own_markers;
  t.window_kills += s.window_kills;
  t.stops_counted += s.stops_counted;
  double m = w.simulated_minutes();
  double prev = t.minutes.load();
  while (!t.minutes.compare_exchange_weak(prev, prev + m)) {
  }
  if (print_stats) {
    std::printf(
        "%s\n  published %lld, stored %lld, dead-lettered %lld, bots %lld, duplicates "
        "%lld (excused by crash/lease %lld, by Umami's answers %lld), sends %lld, checks "
        "%lld, redeliveries %lld, takeovers %lld, good events dead-lettered as the "
        "runbook allows %lld, 3.1 visits %lld, batches %lld of %lld events, %.1f simulated "
        "minutes\n",
        sc.Describe().c_str(), (long long)s.published, (long long)s.stored,
        (long long)s.dead_lettered, (long long)s.dropped, (long long)s.duplicates,
        (long long)s.excused_duplicates, (long long)s.umami_duplicates, (long long)s.sends,
        (long long)s.checks, (long long)s.redeliveries, (long long)s.takeovers,
        (long long)s.good_dead_lettered_runbook, (long long)s.visits_split, (long long)s.batches,
        (long long)s.batched, m);
  }
  if (why.empty()) return true;
  if (failure) {
    failure->seed = sc.seed;
    failure->what = why;
    failure->trace = w.Trace();
    failure->scenario = sc.Describe();
  }
  return false;
}

// The write-fault matrix: Umami's database read-only (every send fails, the probe passes) for
// 10 s to 10 min under traffic of 1 to 5,000 visitors at 1 to 1,000 events/s.
std::vector<sim::Scenario> WriteFaultMatrix() {
  std::vector<sim::Scenario> out;
  uint64_t seed = 900'000;
  for (auto version : {sim::Version::k2_10, sim::Version::k3_1}) {
    for (int visitors : {1, 2, 3, 20, 500, 5000}) {
      for (double rate : {1.0, 40.0, 1000.0}) {
        for (int fault_s : {10, 90, 600}) {
          sim::Scenario s = sim::MakeScenario(++seed, 1);
          s.version = version;
          s.visitors = visitors;
          s.rate = rate;
          s.bursts = false;
          s.backlog_times = false;
          s.poison = 0;
          s.processes = 2;
          s.core.processes = {"http://umami-0", "http://umami-1"};
          s.core.max_in_flight = 900;
          s.core.workers = 128;
          s.core.sends_per_process = 32;
          s.core.ack_wait = std::chrono::milliseconds(30'000);
          s.core.send_timeout = std::chrono::milliseconds(30'000);
          s.core.fetch_batch = 100;
          s.core.max_bytes_in_flight = 64ll << 20;
          s.instance_events.clear();
          s.faults.clear();
          sim::FaultSpan f;
          f.fault = sim::Fault::kReadOnly;
          f.process = -1;
          f.start = sim::TimePoint{} + std::chrono::hours(1000) + std::chrono::seconds(60);
          f.end = f.start + std::chrono::seconds(fault_s);
          s.faults.push_back(f);
          s.traffic = std::chrono::seconds(60 + fault_s + 60);
          out.push_back(s);
        }
      }
    }
  }
  // Poison among healthy traffic, on the same processes: still dead-lettered after 4 sends.
  for (int visitors : {3, 50, 2000}) {
    for (double rate : {2.0, 50.0, 500.0}) {
      sim::Scenario s = sim::MakeScenario(++seed, 5);
      s.visitors = visitors;
      s.rate = rate;
      s.poison = 0.02;
      s.faults.clear();
      s.instance_events.clear();
      out.push_back(s);
    }
  }
  return out;
}

void Usage() {
  std::fprintf(stderr,
               "usage: replayer_sim [--scenarios N] [--first SEED] [--minutes M] [--threads T]\n"
               "                    [--reader-killer] [--unknown-site] [--own-marker]\n"
               "                    [--seed SEED [--trace]] [--matrix write-fault [--max-rate R] "
               "[--every K]]\n");
}

}  // namespace

int main(int argc, char** argv) {
  self = argv[0];
  int64_t scenarios = 0;
  uint64_t first = 1;
  int threads = 2;
  bool one = false, trace = false, matrix = false;
  int every = 1;        // --every K: every K-th matrix scenario (the sanitizer build's share)
  double max_rate = 0;  // --max-rate R: only matrix scenarios of at most R events/s
  uint64_t seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        Usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--scenarios") {
      scenarios = std::atoll(next());
    } else if (a == "--first") {
      first = std::strtoull(next(), nullptr, 10);
    } else if (a == "--minutes") {
      minutes_opt = std::atoi(next());
    } else if (a == "--threads") {
      threads = std::max(1, std::atoi(next()));
    } else if (a == "--seed") {
      one = true;
      seed = std::strtoull(next(), nullptr, 10);
    } else if (a == "--max-rate") {
      max_rate = std::atof(next());
    } else if (a == "--every") {
      every = std::max(1, std::atoi(next()));
    } else if (a == "--trace") {
      trace = true;
    } else if (a == "--reader-killer") {
      reader_killer_opt = true;
    } else if (a == "--unknown-site") {
      unknown_site_opt = true;
    } else if (a == "--own-marker") {
      own_marker_opt = true;
    } else if (a == "--matrix") {
      matrix = std::string(next()) == "write-fault";
      if (!matrix) {
        Usage();
        return 2;
      }
    } else {
      Usage();
      return 2;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  Totals totals;
  if (one) {
    Failure f;
    bool ok = RunScenario(Make(seed, minutes_opt), totals, &f, true);
    if (!ok || trace) {
      std::printf("%s\n", ok ? "passed" : ("FAILED: " + f.what).c_str());
      std::printf("last events (time, what, a, b):\n%s", f.trace.empty() ? "" : f.trace.c_str());
    }
    if (ok) std::printf("passed\n");
    return ok ? 0 : 1;
  }
  std::vector<sim::Scenario> list;
  if (matrix) {
    list = WriteFaultMatrix();
    std::vector<sim::Scenario> some;
    for (const auto& sc : list) {
      if (max_rate <= 0 || sc.rate <= max_rate) some.push_back(sc);
    }
    list.clear();
    for (size_t k = 0; k < some.size(); k += every) list.push_back(some[k]);
  } else {
    if (scenarios <= 0) {
      Usage();
      return 2;
    }
  }
  int64_t count = matrix ? static_cast<int64_t>(list.size()) : scenarios;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::vector<Failure> failures;
  auto work = [&] {
    while (true) {
      int64_t k = next++;
      if (k >= count) return;
      {
        std::lock_guard lock(mu);
        if (!failures.empty()) return;
      }
      sim::Scenario sc = matrix ? list[k] : Make(first + k, minutes_opt);
      Failure f;
      if (!RunScenario(sc, totals, &f, matrix)) {
        std::lock_guard lock(mu);
        failures.push_back(f);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!failures.empty()) {
    const Failure& f = failures.front();
    std::printf(
        "simulation FAILED: seed %llu: %s\n%s\nreplay it: %s --seed %llu --minutes %d%s "
        "--trace\nlast events (time, what, a, b):\n%s",
        static_cast<unsigned long long>(f.seed), f.what.c_str(), f.scenario.c_str(), self.c_str(),
        static_cast<unsigned long long>(f.seed), matrix ? 1 : minutes_opt,
        std::string(reader_killer_opt ? " --reader-killer" : "")
            .append(unknown_site_opt ? " --unknown-site" : "")
            .append(own_marker_opt ? " --own-marker" : "")
            .c_str(),
        f.trace.c_str());
    if (matrix) std::printf("(a matrix scenario: its seed replays only through --matrix)\n");
    return 1;
  }
  std::printf(
      "events %lld, stored %lld, dead-lettered %lld, duplicates %lld (by Umami's answers "
      "%lld), good events dead-lettered as the runbook allows %lld, crashes %lld, batches "
      "%lld of %lld events\n",
      (long long)totals.events.load(), (long long)totals.stored.load(),
      (long long)totals.dlq.load(), (long long)totals.dups.load(),
      (long long)totals.umami_dups.load(), (long long)totals.runbook.load(),
      (long long)totals.crashes.load(), (long long)totals.batches.load(),
      (long long)totals.batched.load());
  if (unknown_site_opt) {
    std::printf("events of a website Umami does not hold %lld, of them sent %lld\n",
                (long long)totals.unknown_site.load(), (long long)totals.unknown_site_sends.load());
  }
  if (reader_killer_opt) {
    std::printf(
        "readers killed from outside inside a good redelivery's marked window %lld, redeliveries "
        "read again under a marker counting a stopped reader %lld\n",
        (long long)totals.window_kills.load(), (long long)totals.stops_counted.load());
    // A run that never met the case it is about proves nothing.
    if (totals.window_kills.load() == 0 || totals.stops_counted.load() == 0) {
      std::printf("simulation FAILED: no reader was killed inside a marked window\n");
      return 1;
    }
  }
  if (own_marker_opt) {
    std::printf(
        "marker deletes failed %lld, redeliveries that found their reader's own marker %lld\n",
        (long long)totals.markers_left.load(), (long long)totals.own_markers.load());
    // A run that never met the case it is about proves nothing.
    if (totals.own_markers.load() == 0) {
      std::printf("simulation FAILED: no redelivery found its own process's marker\n");
      return 1;
    }
  }
  std::printf("simulation: %lld scenarios, %.0f simulated minutes, %lld invariant checks, %.1f s\n",
              (long long)totals.scenarios.load(), totals.minutes.load(),
              (long long)totals.checks.load(), secs);
  return 0;
}
