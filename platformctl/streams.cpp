#include "platformctl/streams.h"

#include "platformctl/leaders.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/timefmt.h"
#include "common/topology.h"
#include "platformctl/nats_admin.h"

namespace platformctl {

using platformctl::backlog::StreamReading;
using platformctl::backlog::StreamView;

namespace {

// Our streams first, in the order an operator reads them, then the rest by name.
std::vector<std::string> Order(std::vector<std::string> names) {
  static const std::vector<std::string> kFirst = {
      common::topology::kWebEvents, common::topology::kApiMetrics, common::topology::kWebDlq,
      common::topology::kApiDlq};
  auto rank = [](const std::string& n) {
    auto it = std::find(kFirst.begin(), kFirst.end(), n);
    return it == kFirst.end() ? kFirst.size() : static_cast<size_t>(it - kFirst.begin());
  };
  std::sort(names.begin(), names.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(rank(a), a) < std::make_pair(rank(b), b);
  });
  return names;
}

std::string Rate(const std::optional<double>& r) {
  if (!r) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", *r);
  return buf;
}

std::string Bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f%s" : "%.1f%s", v, units[u]);
  return buf;
}

nlohmann::json Opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json Ts(int64_t ns) {
  return ns > 0 ? nlohmann::json(common::FormatRfc3339(ns)) : nlohmann::json(nullptr);
}

}  // namespace

common::Result<std::vector<StreamReading>> ReadStreams(common::NatsClient& client,
                                                       const std::vector<std::string>& only,
                                                       common::Millis patience) {
  std::vector<std::string> names = only;
  if (names.empty()) {
    auto all = platformctl::nats_admin::StreamNames(client, patience);
    if (!all) return all.error();
    names = *all;
  }
  std::vector<StreamReading> out;
  for (const auto& n : Order(names)) {
    auto r = platformctl::nats_admin::ReadStream(client, n, patience);
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return out;
}

namespace {

// The replayer's word on WEB_EVENTS, from its lease (platformctl leaders reads the same): who
// leads and what it holds blocked. Only the CLI user may read leases; silently nothing else.
void AttachWorkerStatus(common::NatsClient& client, std::vector<StreamView>& views) {
  auto web = std::find_if(views.begin(), views.end(),
                          [](const StreamView& v) { return v.now.name == "WEB_EVENTS"; });
  if (web == views.end()) return;
  auto leaders = ReadLeaders(client);
  if (!leaders) return;
  for (const auto& l : *leaders) {
    if (l.service != "replayer" || !l.holder) continue;
    web->worker = l.holder->Describe();
    web->worker_status = l.holder->status;
  }
}

}  // namespace

common::Result<std::vector<StreamView>> CollectStreams(common::NatsClient& client,
                                                       const StreamsOptions& options) {
  auto first = ReadStreams(client, options.only);
  if (!first) return first.error();
  std::optional<std::vector<StreamReading>> second;
  if (options.interval.count() > 0) {
    std::this_thread::sleep_for(options.interval);
    std::vector<std::string> names;  // the same streams again, even if one appeared meanwhile
    for (const auto& r : *first) names.push_back(r.name);
    auto again = names.empty() ? first : ReadStreams(client, names);
    if (!again) return again.error();
    second = std::move(*again);
  }
  std::vector<StreamView> views;
  for (size_t i = 0; i < first->size(); ++i) {
    if (second)
      views.push_back(platformctl::backlog::Compute((*first)[i], (*second)[i]));
    else
      views.push_back(platformctl::backlog::Compute(std::nullopt, (*first)[i]));
  }
  AttachWorkerStatus(client, views);
  return views;
}

int WatchStreams(common::NatsClient& client, const StreamsOptions& options, common::Millis every,
                 common::StopFlag& stop, bool json, std::ostream& out, std::ostream& err) {
  auto before = ReadStreams(client, options.only);
  if (!before) {
    err << "platformctl: " << before.error().message << "\n";
    return 3;
  }
  auto print = [&](const std::vector<StreamView>& views) {
    if (json) {
      std::ostringstream one;
      PrintStreamsJson(views, one);
      std::string line = one.str();
      for (char& c : line) c = c == '\n' ? ' ' : c;  // one object per line
      out << line << "\n";
    } else {
      PrintStreamsText(views, out);
      out << "\n";
    }
    out.flush();
  };
  std::vector<StreamView> first;
  for (const auto& r : *before) first.push_back(platformctl::backlog::Compute(std::nullopt, r));
  print(first);
  while (!stop.WaitFor(every)) {
    std::vector<std::string> names;  // the same streams, in the same order
    for (const auto& r : *before) names.push_back(r.name);
    auto now = names.empty() ? ReadStreams(client, options.only) : ReadStreams(client, names);
    if (!now) {
      err << "platformctl: a reading failed (" << now.error().message << "); trying again in "
          << every.count() / 1000.0 << " s\n";
      continue;
    }
    std::vector<StreamView> views;
    for (size_t i = 0; i < now->size(); ++i) {
      if (i < before->size() && (*before)[i].name == (*now)[i].name)
        views.push_back(platformctl::backlog::Compute((*before)[i], (*now)[i]));
      else
        views.push_back(platformctl::backlog::Compute(std::nullopt, (*now)[i]));
    }
    AttachWorkerStatus(client, views);
    print(views);
    before = std::move(now);
  }
  return 0;
}

void PrintStreamsText(const std::vector<StreamView>& views, std::ostream& out) {
  if (views.empty()) {
    out << "no streams (run platformctl init)\n";
    return;
  }
  const auto& v0 = views.front();
  out << "read from JetStream at " << common::FormatRfc3339(v0.now.read_at_ns);
  if (v0.interval_seconds)
    out << "; rates over " << Rate(v0.interval_seconds) << "s";
  else
    out << "; one reading, no rates";
  out << "\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-20s %10s %10s  %-24s %9s %8s %8s  %s\n", "STREAM", "HELD",
                "BYTES", "OLDEST", "AGE", "IN/s", "OUT/s", "TIME-TO-CLEAR");
  out << line;
  for (const auto& v : views) {
    std::string clear = v.time_to_clear_seconds ? common::HumanSeconds(*v.time_to_clear_seconds)
                        : v.keeping_up          ? "keeping up"
                        : v.in_rate             ? "not draining"
                                                : "-";
    std::snprintf(line, sizeof(line), "%-20s %10llu %10s  %-24s %9s %8s %8s  %s\n",
                  v.now.name.c_str(), static_cast<unsigned long long>(v.now.messages),
                  Bytes(v.now.bytes).c_str(),
                  v.oldest_ns ? common::FormatRfc3339(*v.oldest_ns).c_str() : "-",
                  v.oldest_age_seconds ? common::HumanSeconds(*v.oldest_age_seconds).c_str() : "-",
                  Rate(v.in_rate).c_str(), Rate(v.out_rate).c_str(), clear.c_str());
    out << line;
    if (v.left_behind.value_or(0) > 0) {
      out << "  LEFT BEHIND " << *v.left_behind
          << ": acked by its consumer, not removed by JetStream; the OLDEST and AGE above are"
             " theirs, not the backlog's (docs/operations.md, Network partitions)\n";
    }
    auto said = [&](const char* k) {
      auto it = v.worker_status.find(k);
      return it == v.worker_status.end() ? int64_t{0} : it->second;
    };
    if (said("blocked_visitors") > 0 || said("sites_unknown") > 0) {
      out << "  " << v.worker << " says: ";
      if (said("blocked_visitors") > 0) {
        out << said("blocked_visitors") << " visitor(s) of " << said("blocked_sites")
            << " site(s) blocked behind an event Umami keeps failing";
        if (v.oldest_age_seconds)
          out << " (oldest held " << common::HumanSeconds(*v.oldest_age_seconds) << ")";
      }
      if (said("sites_unknown") > 0) {
        out << (said("blocked_visitors") > 0 ? "; " : "") << said("sites_unknown")
            << " website(s) Umami does not know, their events dead-lettered unsent";
      }
      if (v.out_rate) out << "; the rest drains at " << Rate(v.out_rate) << "/s";
      out << "\n";
    }
    for (const auto& c : v.consumers) {
      if (c.now.offline) {
        out << "  consumer " << c.now.name
            << "  OFFLINE: its server does not answer (a node down; no numbers)\n";
        continue;
      }
      std::snprintf(
          line, sizeof(line),
          "  consumer %-14s pending %llu  unacked %llu/%lld  redelivered %llu  "
          "delivered/s %s  acked/s %s  last ack %s",
          c.now.name.c_str(), static_cast<unsigned long long>(c.now.pending),
          static_cast<unsigned long long>(c.now.unacked),
          static_cast<long long>(c.now.max_ack_pending),
          static_cast<unsigned long long>(c.now.redelivered), Rate(c.delivery_rate).c_str(),
          Rate(c.ack_rate).c_str(),
          c.now.last_acked_ns > 0 ? common::FormatRfc3339(c.now.last_acked_ns).c_str() : "never");
      out << line;
      if (c.saturated) out << "  SATURATED (unacked at max ack pending)";
      if (c.wedged) out << "  WEDGED (unacked held, no ack over the interval)";
      out << "\n";
      if (c.floor_held) {
        out << "    ACK FLOOR HELD at stream seq " << c.now.ack_floor_stream_seq + 1
            << (v.oldest_age_seconds
                    ? " (oldest held " + common::HumanSeconds(*v.oldest_age_seconds) + ")"
                    : std::string())
            << ": acks go on past it at " << Rate(c.ack_rate)
            << "/s; the messages before them are in work, not waiting (for the replayer: "
               "visitors whose events wait behind one Umami keeps failing, "
               "replayer_lanes_blocked)\n";
      }
    }
  }
}

void PrintStreamsJson(const std::vector<StreamView>& views, std::ostream& out) {
  nlohmann::json root;
  root["streams"] = nlohmann::json::array();
  if (!views.empty()) {
    root["read_at"] = common::FormatRfc3339(views.front().now.read_at_ns);
    root["interval_seconds"] = Opt(views.front().interval_seconds);
  }
  for (const auto& v : views) {
    nlohmann::json s;
    s["name"] = v.now.name;
    s["messages"] = v.now.messages;
    s["bytes"] = v.now.bytes;
    s["first_seq"] = v.now.first_seq;
    s["last_seq"] = v.now.last_seq;
    s["oldest_ts"] = v.oldest_ns ? nlohmann::json(common::FormatRfc3339(*v.oldest_ns)) : nullptr;
    s["oldest_age_seconds"] = Opt(v.oldest_age_seconds);
    s["in_rate"] = Opt(v.in_rate);
    s["out_rate"] = Opt(v.out_rate);
    s["time_to_clear_seconds"] = Opt(v.time_to_clear_seconds);
    s["draining"] = v.draining;
    s["keeping_up"] = v.keeping_up;
    if (!v.worker.empty()) {
      s["worker"] = v.worker;
      s["worker_status"] = v.worker_status;
    }
    s["left_behind"] = v.left_behind ? nlohmann::json(*v.left_behind) : nlohmann::json(nullptr);
    s["read_at"] = common::FormatRfc3339(v.now.read_at_ns);
    s["consumers"] = nlohmann::json::array();
    for (const auto& c : v.consumers) {
      nlohmann::json j;
      j["name"] = c.now.name;
      j["pending"] = c.now.pending;
      j["unacked"] = c.now.unacked;
      j["redelivered"] = c.now.redelivered;
      j["max_ack_pending"] = c.now.max_ack_pending;
      j["waiting_pulls"] = c.now.waiting_pulls;
      j["delivery_rate"] = Opt(c.delivery_rate);
      j["ack_rate"] = Opt(c.ack_rate);
      j["last_delivered_ts"] = Ts(c.now.last_delivered_ns);
      j["last_acked_ts"] = Ts(c.now.last_acked_ns);
      j["saturated"] = c.saturated;
      j["wedged"] = c.wedged;
      j["floor_held"] = c.floor_held;
      j["ack_rate_from"] = c.ack_rate_from_floor ? "ack_floor" : "removed";
      j["offline"] = c.now.offline;
      s["consumers"].push_back(std::move(j));
    }
    root["streams"].push_back(std::move(s));
  }
  out << root.dump(2) << "\n";
}

}  // namespace platformctl
