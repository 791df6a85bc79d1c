// The replayer's shell: executes the engine core's commands against NATS and Umami and feeds
// their outcomes back (docs/replayer.md, "Engine core"). No decision is made here.
#include "replayer/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/dead_letter.h"
#include "common/nats_stream.h"
#include "common/timefmt.h"
#include "common/topology.h"
#include "replayer/engine_state.h"
#include "replayer/umami_reply.h"

namespace replayer {
namespace {

constexpr milliseconds kMaxWait{100};  // the longest the engine thread waits in one poll
// Finished messages wait for at most this many, or this long, before they are freed (Run()).
constexpr size_t kFreeBatch = 256;
constexpr milliseconds kFreeEvery{50};

CoreConfig CoreConfigOf(const ReplayerConfig& c) {
  CoreConfig k;
  k.processes = c.umami_urls;
  k.workers = c.workers;
  k.sends_per_process = c.sends_per_process;
  k.max_in_flight = c.max_in_flight;
  k.max_bytes_in_flight = c.max_bytes_in_flight;
  k.max_message_bytes = c.max_message_bytes;
  k.fetch_batch = c.fetch_batch;
  k.ack_wait = c.ack_wait;
  k.send_timeout = c.send_timeout;
  k.check_cache = c.check_cache;
  k.batch_max = c.batch_max;
  return k;
}

PubOutcome OutcomeOf(const common::Status& st) {
  if (st) return {};
  // The server refuses a message over its max payload or a stream's max message size:
  // retrying the same bytes cannot help. Judged by the error's codes, not its words. Any other
  // failure (a 429 from a busy 2.11+ server included) is retried after a delay.
  const bool too_large = common::IsMessageTooLarge(st.error());
  return {too_large ? PubOutcome::Kind::kTooLarge : PubOutcome::Kind::kFailed, st.error().message};
}

}  // namespace

ReplayerConfig ReadReplayerConfig(common::ConfigReader& r) {
  ReplayerConfig c;
  c.umami_urls = r.UrlList("UMAMI_URLS", "http://127.0.0.1:3000", {"http", "https"});
  c.workers = static_cast<int>(r.Int("REPLAYER_WORKERS", c.workers, 1, 4096));
  c.sends_per_process =
      static_cast<int>(r.Int("REPLAYER_SENDS_PER_PROCESS", c.sends_per_process, 1, 4096));
  c.max_in_flight = static_cast<int>(r.Int("REPLAYER_MAX_IN_FLIGHT", c.max_in_flight, 1, 100000));
  c.max_bytes_in_flight =
      r.Size("REPLAYER_MAX_BYTES_IN_FLIGHT", c.max_bytes_in_flight, 2 << 20, int64_t{1} << 40);
  c.ack_wait =
      r.Duration("REPLAYER_ACK_WAIT", c.ack_wait, common::Millis(3000), common::Millis(600'000));
  c.send_timeout = r.Duration("REPLAYER_SEND_TIMEOUT", c.send_timeout, common::Millis(100),
                              common::Millis(120'000));
  c.batch_max = static_cast<int>(r.Int("REPLAYER_BATCH_MAX", c.batch_max, 0, 500));
  return c;
}

Engine::State::State(common::NatsClient& n, ReplayerConfig c, ReplayerMetrics& mm)
    : nats(n), cfg(std::move(c)), m(mm), core(CoreConfigOf(cfg)) {
  for (const auto& url : cfg.umami_urls) {
    send_urls.push_back(url + "/api/send");
    batch_urls.push_back(url + "/api/batch");
    send_seconds.push_back(&m.send_seconds.With({url}));
  }
}

Engine::Engine(common::NatsClient& nats, ReplayerConfig config, ReplayerMetrics& metrics)
    : s_(std::make_unique<State>(nats, std::move(config), metrics)) {}

Engine::~Engine() {
  s_->workers.reset();
  // The publisher's completions reach into the inbox and the HTTP pool: it must go (waiting for
  // its last acks) while they still exist, whatever the members' order.
  s_->publisher.reset();
}

common::ConsumerSpec ConsumerSpecFor(const ReplayerConfig& cfg) {
  common::ConsumerSpec spec;
  spec.stream = common::topology::kWebEvents;
  spec.durable = "replayer";
  spec.filter_subject = std::string(common::topology::kWebEventsSubjectPrefix) + "*";
  spec.ack_wait = cfg.ack_wait;
  // Above the in-flight limit, so the server never stops delivering before we do.
  spec.max_ack_pending = cfg.max_in_flight + 100;
  // Room in nats.c for what one fetch asks for (at most the byte budget) plus one message as big
  // as a server allows (64 MiB), so a fetch is never dropped as a slow consumer's.
  spec.pending_bytes_limit = cfg.max_bytes_in_flight + (int64_t{64} << 20);
  return spec;
}

common::Status Engine::Start() {
  auto& s = *s_;
  const common::ConsumerSpec spec = ConsumerSpecFor(s.cfg);
  auto consumer = common::PullConsumer::Bind(s.nats, spec);
  if (!consumer) return consumer.error();
  s.consumer = std::move(*consumer);
  auto stored = common::KvBucket::Bind(s.nats, common::topology::kStoredIdsBucket);
  if (!stored) return stored.error();
  s.stored_ids = std::move(*stored);
  auto visits = common::KvBucket::Bind(s.nats, common::topology::kVisitStateBucket);
  if (!visits) return visits.error();
  s.visit_bucket = std::move(*visits);
  s.crash_guard = common::CrashGuard::Bind(s.nats, spec.durable, s.cfg.instance);
  if (!s.acks_nats) {
    common::NatsClient::Options o;
    o.client_name = "replayer acks";
    o.send_asap = false;
    o.request_timeout_ms = s.nats.request_timeout_ms();
    auto acks = s.nats.Sibling(o);
    if (!acks) return acks.error();
    s.acks_nats = std::move(*acks);
  }
  auto publisher =
      common::AsyncPublisher::Create(*s.acks_nats, [this](uint64_t tag, const common::Status& st) {
        if (tag == 0) {
          if (!st) s_->WarnVisitNotSaved(st.error().message);
          return;
        }
        s_->inbox.Put(PubDone{tag, OutcomeOf(st)});
        s_->http.Wakeup();
      });
  if (!publisher) return publisher.error();
  s.publisher = std::move(*publisher);
  for (const auto& url : s.cfg.umami_urls) {
    s.m.process_up.With({url}).Set(0);
    // At 0 from the start, so the dashboard's write-fault panel reads 0, not "no data".
    s.m.write_fault.With({url}).Set(0);
  }
  return common::Status::Ok();
}

void Engine::Run(common::StopFlag& stop) {
  auto& s = *s_;
  s.workers = std::make_unique<Workers>(*s.consumer, *s.stored_ids, *s.visit_bucket, *s.crash_guard,
                                        s.inbox, [&s] { s.http.Wakeup(); });
  s.core.Start(Clock::now());
  s.Execute();
  bool told = false;
  bool lease_lost = false;
  TimePoint last_gauges{};
  while (!s.core.Done()) {
    TimePoint now = Clock::now();
    if (!told && stop.stopping()) {
      told = true;
      if (stop.expired()) {
        spdlog::warn(
            "the lease is lost: no new fetches or sends; {} held events are left to the "
            "next leader once the sends under way are answered",
            s.core.held());
        lease_lost = true;
        s.core.OnLeadershipLost(now);
      } else {
        spdlog::info("stopping: no new fetches or sends; finishing {} held events", s.core.held());
        s.core.OnStop(now);
      }
      s.Execute();
    }
    s.DrainInbox();
    now = Clock::now();
    if (now >= s.wake_at) {
      s.core.OnTimer(now);
      s.Execute();
    }
    if (now - last_gauges >= milliseconds(1000)) {
      s.UpdateGauges();
      last_gauges = now;
    }
    if (s.core.Done()) break;
    // Finished messages are freed in batches: nats.c hands each freed message to its
    // collector thread and wakes that thread whenever it sleeps, and a wake-up paid once per
    // turn of this loop (a few events each) was still 4-5 % of this thread in perf: the
    // signal, and the collector's lock contended while it empties the list.
    if (s.freed.size() >= kFreeBatch || (!s.freed.empty() && now - s.last_free >= kFreeEvery)) {
      s.freed.clear();
      s.last_free = now;
    }
    auto wait = std::chrono::duration_cast<milliseconds>(s.wake_at - Clock::now());
    wait = std::clamp(wait, milliseconds(0), kMaxWait);
    s.responses.clear();
    s.http.Poll(wait, s.responses);
    for (auto& r : s.responses) s.OnHttp(std::move(r));
  }
  // Messages delivered to this process that the core never held: a fetch it no longer waited
  // for (its stop grace ran out while one was under way), and what a fetch that stopped
  // waiting left in nats.c (the server's answer read after the fetch's time was up, on a loaded
  // machine; the next fetch would have taken them). They go as the core's did, handed back on
  // a stop and left to the next leader on a lost lease, or they would wait out the ack wait
  // unread (CI: 99 of a SIGTERM test's 867). Once the fetch thread has ended, and once what the
  // server sent before a round trip has been read.
  s.workers.reset();
  s.inbox.Take(s.inbox_batch);
  std::vector<common::Message> unread;
  for (auto& f : s.inbox_batch.fetched) {
    for (auto& msg : f.messages) unread.push_back(std::move(msg));
  }
  s.inbox_batch.clear();
  // The server counts a message delivered when the consumer hands it to the connection, and
  // it may still be on its way: taken until none has come for 300 ms (the core already waited
  // 600 ms after the last fetch's answer), 2 s at most.
  if (!lease_lost) {  // (a lost lease leaves them to the next leader, and NATS may be away)
    (void)s.nats.Flush(2000);
    const auto settle_until = Clock::now() + milliseconds(2000);
    auto quiet_since = Clock::now();
    while (Clock::now() < settle_until && Clock::now() - quiet_since < milliseconds(300)) {
      auto more = s.consumer->TakeUnclaimed();
      if (!more.empty()) quiet_since = Clock::now();
      for (auto& msg : more) unread.push_back(std::move(msg));
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  if (!unread.empty()) {
    if (!lease_lost) {
      for (auto& msg : unread) (void)msg.Nak(milliseconds(0));
    }
    spdlog::info("{} {} events delivered after the held ones were released",
                 lease_lost ? "left" : "released", unread.size());
  }
  // Acks written on the coalescing connection, and the naks on this one, reach the server
  // before this term ends.
  if (s.acks_nats) {
    if (auto st = s.acks_nats->Flush(5000); !st) {
      spdlog::warn("flushing acks: {} (their events are redelivered and skipped by the guard)",
                   st.error().message);
    }
  }
  if (auto st = s.nats.Flush(5000); !st) {
    spdlog::warn("releasing held events: {} (they return after the ack wait)", st.error().message);
  }
  s.freed.clear();
  s.messages.clear();
  s.UpdateGauges();
}

void Engine::State::DrainInbox() {
  Inbox::Batch& in = inbox_batch;
  inbox.Take(in);
  in.published.insert(in.published.end(), failed_now.begin(), failed_now.end());
  failed_now.clear();
  TimePoint now = Clock::now();
  for (auto& f : in.fetched) {
    for (size_t i = 0; i < f.messages.size(); ++i) {
      messages.emplace(f.deliveries[i].ref, std::move(f.messages[i]));
    }
    core.OnFetched(std::move(f.deliveries), f.error, now);
    Execute();
  }
  for (auto& g : in.guards) {
    core.OnGuardAnswer(g.lookup_id, g.answer, now);
    Execute();
  }
  for (auto& v : in.visits) {
    core.OnVisitAnswer(v.lane, v.answer, v.value, now);
    Execute();
  }
  for (auto& p : in.published) {
    core.OnPublished(p.tag, p.outcome, now);
    Execute();
  }
}

void Engine::State::OnHttp(HttpResponse r) {
  HttpAnswer a{r.status, std::move(r.body), std::move(r.error), r.seconds};
  TimePoint now = Clock::now();
  if (r.tag & kCheckTag) {
    uint64_t id = (r.tag & ~kCheckTag) >> 1;
    core.OnCheckAnswer(id, (r.tag & 1) ? CheckPart::kProbe : CheckPart::kHeartbeat, a, now);
  } else {
    core.OnSendAnswer(r.tag, a, now);
  }
  Execute();
}

void Engine::State::Execute() {
  core.Take(out);
  LookupJob job;
  for (auto& c : out.commands) {
    if (auto* g = std::get_if<GuardLookupCmd>(&c)) {
      job.guards.push_back(std::move(*g));
    } else if (auto* v = std::get_if<VisitLookupCmd>(&c)) {
      job.visits.push_back(std::move(*v));
    } else {
      ExecuteCommand(c);
    }
  }
  if (!job.guards.empty() || !job.visits.empty()) workers->LookUp(std::move(job));
  for (const auto& n : out.notes) Observe(n);
  // Finished messages wait in `freed` to be freed in a batch (Run()).
}

void Engine::State::ExecuteCommand(Command& c) {
  std::visit(
      [this](auto& cmd) {
        using T = std::decay_t<decltype(cmd)>;
        if constexpr (std::is_same_v<T, FetchCmd>) {
          workers->Fetch(cmd);
        } else if constexpr (std::is_same_v<T, SendCmd>) {
          HttpRequest r;
          r.tag = cmd.send_id;
          r.url = cmd.batch ? batch_urls[cmd.process] : send_urls[cmd.process];
          r.post = true;
          r.body = std::move(cmd.body);
          r.headers = std::move(cmd.headers);
          r.timeout = cmd.timeout;
          http.Submit(std::move(r));
        } else if constexpr (std::is_same_v<T, CheckCmd>) {
          const std::string& url = cfg.umami_urls[cmd.process];
          HttpRequest hb;
          hb.tag = kCheckTag | (cmd.check_id << 1);
          hb.url = url + "/api/heartbeat";
          hb.timeout = cmd.timeout;
          http.Submit(std::move(hb));
          HttpRequest probe;
          probe.tag = kCheckTag | (cmd.check_id << 1) | 1;
          probe.url = url + "/api/send";
          probe.post = true;
          probe.body = ProbeBody();
          probe.timeout = cmd.timeout;
          probe.headers.emplace_back("Content-Type", "application/json");
          probe.headers.emplace_back(
              "User-Agent",
              "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120 Safari/537.36");
          http.Submit(std::move(probe));
        } else if constexpr (std::is_same_v<T, AckCmd>) {
          auto it = messages.find(cmd.ref);
          if (it == messages.end()) return;
          if (auto st = it->second.AckOn(*acks_nats); !st) {
            spdlog::warn("ack of seq {} failed (a redelivery is recognised): {}",
                         it->second.stream_seq(), st.error().message);
          }
          freed.push_back(std::move(it->second));
          messages.erase(it);
        } else if constexpr (std::is_same_v<T, InProgressCmd>) {
          auto it = messages.find(cmd.ref);
          if (it != messages.end()) (void)it->second.InProgress();
        } else if constexpr (std::is_same_v<T, NakCmd>) {
          auto it = messages.find(cmd.ref);
          if (it == messages.end()) return;
          (void)it->second.Nak(cmd.delay);
          freed.push_back(std::move(it->second));
          messages.erase(it);
        } else if constexpr (std::is_same_v<T, ForgetCmd>) {
          auto it = messages.find(cmd.ref);
          if (it == messages.end()) return;
          freed.push_back(std::move(it->second));
          messages.erase(it);
        } else if constexpr (std::is_same_v<T, PutGuardCmd>) {
          common::OutMessage put;
          put.subject = "$KV." + std::string(common::topology::kStoredIdsBucket) + "." + cmd.key;
          put.data = std::move(cmd.value);
          Publish(put, cmd.pub_id);
        } else if constexpr (std::is_same_v<T, PutVisitCmd>) {
          common::OutMessage put;
          put.subject = "$KV." + std::string(common::topology::kVisitStateBucket) + "." + cmd.key;
          put.data = std::move(cmd.value);
          Publish(put, 0);
        } else if constexpr (std::is_same_v<T, DeadLetterCmd>) {
          auto it = messages.find(cmd.ref);
          if (it == messages.end()) {
            failed_now.push_back({cmd.pub_id, {PubOutcome::Kind::kFailed, "message not held"}});
            return;
          }
          const common::Message& msg = it->second;
          common::dead_letter::Origin origin{std::string(msg.subject()), msg.stream(),
                                             msg.stream_seq(), std::string(msg.data()),
                                             msg.AllHeaders()};
          Publish(common::dead_letter::Build(origin, cmd.reason, cmd.detail), cmd.pub_id);
        } else if constexpr (std::is_same_v<T, ArmTimerCmd>) {
          wake_at = cmd.at;
        }
      },
      c);
}

void Engine::State::Publish(const common::OutMessage& msg, uint64_t tag) {
  if (auto st = publisher->Publish(msg, tag); !st) {
    if (tag == 0) {
      WarnVisitNotSaved(st.error().message);
    } else {
      failed_now.push_back({tag, OutcomeOf(st)});
      http.Wakeup();
    }
  }
}

void Engine::State::WarnVisitNotSaved(const std::string& why) {
  std::lock_guard lock(visit_warn_mu);
  int64_t left_out = 0;
  if (!visit_warn.Allow(Clock::now(), &left_out)) return;
  spdlog::warn(
      "visit state not saved to KV (kept in memory; after a restart or a change of leader that "
      "visitor's next event begins a new visit): {}{}",
      why, common::LeftOut(left_out));
}

void Engine::OnStatus(StatusSink sink) { s_->status_sink = std::move(sink); }

void Engine::State::UpdateGauges() {
  m.held.Set(core.held());
  m.held_bytes.Set(static_cast<double>(core.held_bytes()));
  m.sending.Set(core.sends_in_flight());
  m.lanes_active.Set(static_cast<double>(core.lanes_active()));
  m.lanes_blocked.Set(static_cast<double>(core.lanes_blocked()));
  m.sites_unknown.Set(static_cast<double>(core.sites_unknown()));
  if (status_sink) {
    std::map<std::string, int64_t> st = {
        {"blocked_visitors", static_cast<int64_t>(core.lanes_blocked())},
        {"blocked_sites", static_cast<int64_t>(core.lanes_blocked_sites())},
        {"sites_unknown", static_cast<int64_t>(core.sites_unknown())}};
    if (st != status_said) {
      status_sink(st);
      status_said = std::move(st);
    }
  }
}

}  // namespace replayer
