// The soak (issue 25): steady web and metric traffic for SOAK_MINUTES on the partition tests'
// topology (three NATS nodes, two replayers, two metricswriters, each in its own network
// namespace; a real Umami and PostgreSQL), with a fault every SOAK_FAULT_EVERY_S drawn from:
// kill -9 of a service or a NATS node (back after 5 s), the leading replayer or metricswriter
// cut from every NATS node (40 s), a NATS node isolated from the other two (40 s), 30 % loss and
// 200 ms delay on a leader's link (60 s). Every 10 s it writes a row of samples.csv (rates in
// and out, held messages and the oldest one's age, dead letters, duplicates, unaccounted
// messages, RSS and CPU of every process); faults.csv lists the faults. After the traffic it
// heals everything, drains, and prints the ledger: lost (of the publishes JetStream
// acknowledged; the others are listed, with whether each is missing) must be 0.
// Hidden from the default run ([.][soak]); bench/soak runs it and draws the report.
//
//   SOAK_MINUTES=60 SOAK_EVENTS_PER_S=25 SOAK_BATCHES_PER_S=5 SOAK_FAULT_EVERY_S=120
//   SOAK_SEED=1 SOAK_OUT=<dir for samples.csv, faults.csv, ledger.txt>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "platformctl/nats_admin.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/partition/partition_fixture.h"
#include "tests/support/queue_judge.h"
#include "tests/support/web_events.h"

using partition_test::PartitionFixture;
using partition_test::WallNs;
using Clock = std::chrono::steady_clock;

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : fallback;
}

constexpr const char* kProcs[] = {"r1", "r2", "w1", "w2", "n1", "n2", "n3"};

// CPU seconds (user + system) and RSS in MiB of a process, from /proc; {0, 0} when gone.
std::pair<double, double> ProcReading(pid_t pid) {
  if (pid <= 0) return {0, 0};
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return {0, 0};
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  double rss_kib = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss_kib = std::stod(line.substr(6));
  }
  return {ticks / static_cast<double>(sysconf(_SC_CLK_TCK)), rss_kib / 1024.0};
}

struct StreamNow {
  uint64_t held = 0;
  double oldest_s = 0;
  uint64_t left_behind = 0;  // acked, not removed by JetStream (platformctl/backlog.h)
};

// `previous` (optional) holds each stream's last reading: left-behind messages need two.
StreamNow ReadNow(common::NatsClient& client, const std::string& stream,
                  std::map<std::string, platformctl::backlog::StreamReading>* previous = nullptr) {
  auto r = platformctl::nats_admin::ReadStream(client, stream);
  if (!r) return {};
  StreamNow out;
  out.held = r->messages;
  if (r->messages > 0 && r->first_ns > 0) {
    out.oldest_s = static_cast<double>(r->read_at_ns - r->first_ns) / 1e9;
  }
  if (previous != nullptr) {
    auto before = previous->find(stream);
    if (before != previous->end()) {
      out.left_behind = platformctl::backlog::Compute(before->second, *r).left_behind.value_or(0);
    }
    (*previous)[stream] = *r;
  }
  return out;
}

}  // namespace

TEST_CASE("soak: steady traffic with kills, node restarts and partitions loses nothing",
          "[.][soak]") {
  const int minutes = EnvInt("SOAK_MINUTES", 60);
  const int eps = EnvInt("SOAK_EVENTS_PER_S", 25);
  const int bps = EnvInt("SOAK_BATCHES_PER_S", 5);
  const int fault_every = EnvInt("SOAK_FAULT_EVERY_S", 120);
  const char* out_env = std::getenv("SOAK_OUT");
  const std::string out_dir = out_env != nullptr && *out_env != 0 ? out_env : "soak-out";
  testsupport::Run("mkdir -p '" + out_dir + "'");
  std::string why;
  auto f = PartitionFixture::Make(&why);
  if (!f) FAIL("the soak needs network namespaces: " << why);
  auto observer = f->Connect({1, 2, 3}, "soak-observer");
  auto publisher = f->Connect({1, 2, 3}, "soak-load");
  const int seconds = minutes * 60;
  cluster_test::Load load(*publisher, f->sites,
                          {"s", eps * seconds, bps * seconds, static_cast<double>(seconds), 3});
  std::mt19937 rng(static_cast<unsigned>(EnvInt("SOAK_SEED", 1)));

  std::ofstream samples(out_dir + "/samples.csv");
  samples << "t_s,events_published,batches_published,events_stored,batches_stored,web_held,"
             "web_oldest_s,api_held,api_oldest_s,web_dlq,api_dlq,duplicates,"
             "events_unaccounted,batches_unaccounted,replayer_leader,writer_leader,"
             "web_left_behind,api_left_behind";
  for (const char* p : kProcs) samples << "," << p << "_rss_mib," << p << "_cpu_pct";
  samples << "\n";
  std::ofstream faults(out_dir + "/faults.csv");
  faults << "start_s,end_s,fault\n";

  const auto began = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - began).count(); };
  std::map<std::string, double> last_cpu;
  std::map<std::string, platformctl::backlog::StreamReading> last_reading;
  double last_t = 0;
  auto sample = [&] {
    const double t = since();
    auto ledger = f->ledger();
    const std::string db_umami = f->stack().Env("UMAMI_DATABASE_URL");
    int64_t stored = testsupport::QueryInt(
        db_umami, "SELECT count(DISTINCT url_path) FROM website_event WHERE url_path LIKE '/s-%'");
    int64_t batches = ledger.StoredBatches();
    StreamNow web = ReadNow(*observer, "WEB_EVENTS", &last_reading);
    StreamNow api = ReadNow(*observer, "API_METRICS", &last_reading);
    StreamNow wdlq = ReadNow(*observer, "WEB_DLQ");
    StreamNow adlq = ReadNow(*observer, "API_DLQ");
    // Published = acked by the stream; each is stored, held (a work queue drops a message at
    // its ack) or dead-lettered. A message stored but not yet acked counts twice, so the
    // difference is floored at 0; the final ledger is exact.
    const int published = load.published();
    const double share = static_cast<double>(eps) / (eps + bps);
    const auto ev_pub = static_cast<int64_t>(published * share + 0.5);
    const int64_t ba_pub = published - ev_pub;
    int64_t ev_gap = std::max<int64_t>(
        0, ev_pub - stored - static_cast<int64_t>(web.held) - static_cast<int64_t>(wdlq.held));
    int64_t ba_gap = std::max<int64_t>(
        0, ba_pub - batches - static_cast<int64_t>(api.held) - static_cast<int64_t>(adlq.held));
    samples << static_cast<int64_t>(t) << "," << ev_pub << "," << ba_pub << "," << stored << ","
            << batches << "," << web.held << "," << web.oldest_s << "," << api.held << ","
            << api.oldest_s << "," << wdlq.held << "," << adlq.held << ","
            << ledger.DuplicateEvents() << "," << ev_gap << "," << ba_gap << ","
            << f->Leader('r', 0) << "," << f->Leader('w', 0) << "," << web.left_behind << ","
            << api.left_behind;
    for (const char* p : kProcs) {
      pid_t pid = p[0] == 'n' ? f->NodePid(p[1] - '0') : f->ServicePid(p);
      auto [cpu, rss] = ProcReading(pid);
      double pct = 0;
      auto it = last_cpu.find(p);
      if (it != last_cpu.end() && t > last_t && cpu >= it->second) {
        pct = 100.0 * (cpu - it->second) / (t - last_t);
      }
      last_cpu[p] = cpu;
      samples << "," << rss << "," << pct;
    }
    samples << "\n";
    samples.flush();
    last_t = t;
  };

  double next_fault = fault_every;
  double fault_ends = -1;
  std::string fault_name;
  double fault_start = 0;
  int fault_count = 0;
  auto end_fault = [&] {
    f->net().HealAll();
    faults << static_cast<int64_t>(fault_start) << "," << static_cast<int64_t>(since()) << ","
           << '"' << fault_name << "\"\n";  // names hold commas, never quotes
    faults.flush();
    fault_ends = -1;
  };
  int tick = 0;
  while (since() < seconds - 10) {
    std::this_thread::sleep_until(began + std::chrono::seconds(10 * ++tick));
    sample();
    if (fault_ends > 0 && since() >= fault_ends) end_fault();
    if (fault_ends > 0 || since() < next_fault || since() > seconds - 70) continue;
    next_fault += fault_every;
    ++fault_count;
    fault_start = since();
    const std::string lr = f->Leader('r', 5000);
    const std::string lw = f->Leader('w', 5000);
    const int node = 1 + static_cast<int>(rng() % 3);
    switch (rng() % 7) {
      case 0:
      case 1: {  // kill -9 a service, back after 5 s
        const char* victims[] = {"r1", "r2", "w1", "w2"};
        std::string v = victims[rng() % 4];
        f->KillService(v);
        std::this_thread::sleep_for(std::chrono::seconds(5));
        f->StartService(v);
        fault_name = "kill -9 " + v;
        fault_ends = since();
        end_fault();
        break;
      }
      case 2:  // kill -9 a NATS node, back after 5 s
        f->KillNode(node);
        std::this_thread::sleep_for(std::chrono::seconds(5));
        f->StartNode(node);
        fault_name = "kill -9 nats n" + std::to_string(node);
        fault_ends = since();
        end_fault();
        break;
      case 3:  // the leading replayer cut from every node
        if (lr.empty()) break;
        for (int j = 1; j <= 3; ++j) f->net().Cut(lr, PartitionFixture::NodeHost(j));
        fault_name = lr + " (leading replayer) cut from NATS, 40 s";
        fault_ends = since() + 40;
        break;
      case 4:  // the leading metricswriter cut from every node
        if (lw.empty()) break;
        for (int j = 1; j <= 3; ++j) f->net().Cut(lw, PartitionFixture::NodeHost(j));
        fault_name = lw + " (leading metricswriter) cut from NATS, 40 s";
        fault_ends = since() + 40;
        break;
      case 5:  // a NATS node isolated from the other two
        for (int j = 1; j <= 3; ++j) {
          if (j != node) {
            f->net().Cut(PartitionFixture::NodeHost(node), PartitionFixture::NodeHost(j));
          }
        }
        fault_name = "n" + std::to_string(node) + " isolated from the other NATS nodes, 40 s";
        fault_ends = since() + 40;
        break;
      default: {  // loss and delay on a leader's link
        std::string who = (rng() % 2 == 0 || lw.empty()) ? lr : lw;
        if (who.empty()) break;
        f->net().Degrade(who, 0.30, 200);
        fault_name = who + "'s link: 30 % loss, 200 ms delay, 60 s";
        fault_ends = since() + 60;
        break;
      }
    }
  }
  if (fault_ends > 0) end_fault();
  load.Join();
  // The drain, still sampled, until the consumers have nothing left to deliver or unacked
  // (PartitionFixture::Drained); what the streams hold then is counted as left behind.
  const double drain_from = since();
  auto drained = [&] {
    return f->Drained(*observer, "WEB_EVENTS") && f->Drained(*observer, "API_METRICS");
  };
  while (!drained() && since() - drain_from < 900) {
    std::this_thread::sleep_until(began + std::chrono::seconds(10 * ++tick));
    sample();
  }
  const bool web_drained = f->WaitDrained(*observer, "WEB_EVENTS", 60'000);
  const bool api_drained = f->WaitDrained(*observer, "API_METRICS", 60'000);
  f->WaitSettled(120'000);
  sample();
  const auto web_left = f->Held(*observer, "WEB_EVENTS");
  const auto api_left = f->Held(*observer, "API_METRICS");

  auto ledger = f->ledger();
  const auto missing_events = ledger.MissingEvents(load.event_ids());
  const auto missing_batches = ledger.MissingBatches(load.batch_ids());
  const auto web_dlq = static_cast<int64_t>(ReadNow(*observer, "WEB_DLQ").held);
  const auto api_dlq = static_cast<int64_t>(ReadNow(*observer, "API_DLQ").held);
  // A publish JetStream never acknowledged (the test's publisher gave up after its timeout, e.g.
  // while its node was cut off) was never accepted: the edge sends such a message again, and
  // nothing was ours to lose. Lost counts only the acknowledged ones; the others are a figure
  // of their own, and whether each is missing is printed below.
  const std::set<std::string>& never_acked = load.unacknowledged_ids();
  auto acknowledged = [&](const std::vector<std::string>& ids) {
    size_t n = 0;
    for (const auto& id : ids) n += never_acked.count(id) == 0 ? 1 : 0;
    return n;
  };
  const size_t web_acked = acknowledged(load.event_ids());
  const size_t api_acked = acknowledged(load.batch_ids());
  const int64_t lost_events =
      testsupport::judge::Count("web events", web_acked, acknowledged(missing_events), 0, web_dlq)
          .Lost();
  const int64_t lost_batches = testsupport::judge::Count("metric batches", api_acked,
                                                         acknowledged(missing_batches), 0, api_dlq)
                                   .Lost();
  const auto sends = partition_test::CountHandovers(f->Sends());
  const auto inserts = partition_test::CountHandovers(f->Inserts());
  const auto rterms = partition_test::CheckTerms(f->Terms('r'));
  const auto wterms = partition_test::CheckTerms(f->Terms('w'));
  char text[4096];
  std::snprintf(
      text, sizeof text,
      "soak ledger: %d min, %d events/s, %d batches/s, %d faults (one every %d s), seed %d\n"
      "  web events:     published %zu (acknowledged %zu), stored %zu distinct, duplicates "
      "%lld, dead-lettered %lld, lost %lld (of the acknowledged)\n"
      "  metric batches: published %zu (acknowledged %zu), stored %lld, dead-lettered %lld, "
      "lost %lld (of the acknowledged)\n"
      "  replayer lease terms: %s; sends seen by Umami: %s\n"
      "  metricswriter lease terms: %s; batch rows: %s\n"
      "  publishes retried: %d, longest publish %lld ms; drained %.0f s after the traffic "
      "ended (web %s, metrics %s)\n"
      "  held in the streams after every ack (acked, not removed by JetStream): web %llu, "
      "metrics %llu\n",
      minutes, eps, bps, fault_count, fault_every, EnvInt("SOAK_SEED", 1), load.event_ids().size(),
      web_acked, load.event_ids().size() - missing_events.size(),
      static_cast<long long>(ledger.DuplicateEvents()), static_cast<long long>(web_dlq),
      static_cast<long long>(lost_events), load.batch_ids().size(), api_acked,
      static_cast<long long>(ledger.StoredBatches()), static_cast<long long>(api_dlq),
      static_cast<long long>(lost_batches), rterms.Describe().c_str(), sends.Describe().c_str(),
      wterms.Describe().c_str(), inserts.Describe().c_str(), load.retried(),
      static_cast<long long>(load.longest_ms()), since() - drain_from, web_drained ? "yes" : "NO",
      api_drained ? "yes" : "NO", static_cast<unsigned long long>(web_left),
      static_cast<unsigned long long>(api_left));
  // The publishes JetStream never acknowledged (the test's publisher gave up after its
  // timeout) were never accepted: the edge sends such a message again. Which of the missing are
  // among them says whether a "lost" one was ours to lose.
  std::string unacked =
      "  publishes never acknowledged: " + std::to_string(load.failures().size()) + "\n";
  for (size_t i = 0; i < load.failures().size() && i < 20; ++i) {
    unacked += "    " + load.failures()[i] + "\n";
  }
  std::string missing = "  missing:";
  for (const auto* ids : {&missing_events, &missing_batches}) {
    for (size_t i = 0; i < ids->size() && i < 20; ++i) missing += " " + (*ids)[i];
  }
  const std::string report = std::string(text) + unacked + missing + "\n";
  std::ofstream(out_dir + "/ledger.txt") << report;
  std::printf("%s", report.c_str());
  std::fflush(stdout);
  INFO(f->Report());
  CHECK(web_drained);
  CHECK(api_drained);
  CHECK(lost_events == 0);
  CHECK(lost_batches == 0);
  CHECK(web_dlq == 0);
  CHECK(api_dlq == 0);
  // Left behind (acked, not removed): seen on 2.9.10 only; a failure on the supported servers.
  CHECK(web_left == 0);
  CHECK(api_left == 0);
  CHECK(rterms.overlaps == 0);
  CHECK(wterms.overlaps == 0);
}
