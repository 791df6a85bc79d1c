// The replayer's shell: the engine core's notes as metrics and log lines. Values that came from
// a message or from Umami are made safe (printable, bounded) before they reach a log line.
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "replayer/classifier.h"
#include "replayer/engine_state.h"
#include "replayer/event_rules.h"

namespace replayer {
namespace {

// Everything a note carries as text may hold a message's value or another server's answer.
std::string Safe(const std::string& s) { return common::log::Escaped(s, 300); }

std::string FailureClass(int status) {
  if (status == 0) return "network";
  if (status >= 400 && status < 500) return "4xx";
  if (status >= 500) return "5xx";
  return "other";
}

}  // namespace

void Engine::State::Observe(const Note& n) {
  static const std::string kEvery = "(every process: the database they share)";
  const std::string& url = n.process >= 0 ? cfg.umami_urls[n.process] : kEvery;
  TimePoint now = Clock::now();
  switch (n.kind) {
    case Note::Kind::kFetched:
      m.fetched.Inc(static_cast<double>(n.count));
      if (n.status > 0) m.redeliveries_received.Inc(n.status);
      break;
    case Note::Kind::kFetchFailed:
      if (int64_t left_out = 0; fetch_warn.Allow(now, &left_out)) {
        spdlog::warn("fetch from WEB_EVENTS failed (retrying): {}{}", Safe(n.text),
                     common::LeftOut(left_out));
      }
      break;
    case Note::Kind::kStored: {
      m.stored.Inc();
      double now_s = static_cast<double>(common::NowUnixNs()) / 1e9;
      m.last_stored_timestamp.Set(now_s);
      m.age_at_store_seconds.Observe(now_s - static_cast<double>(n.accepted_at_ms) / 1000.0);
      break;
    }
    case Note::Kind::kDroppedByUmami:
      m.dropped_by_umami.Inc();
      break;
    case Note::Kind::kDuplicateSkipped:
      m.duplicates_skipped.Inc();
      spdlog::debug("seq {} was stored before: acked, not sent again", n.seq);
      break;
    case Note::Kind::kDeadLettered:
      m.dead_lettered.With({n.code}).Inc();
      spdlog::warn("event moved to the dlq: reason=\"{}\" subject={} seq={} last_answer=\"{}\"",
                   Safe(n.text), Safe(n.subject), n.seq, Safe(n.detail));
      break;
    case Note::Kind::kSendDone:
      send_seconds[n.process]->Observe(n.seconds);
      if (n.count > 1 && n.status == 1) {  // answered as a batch
        m.batches.Inc();
        m.batched_events.Inc(static_cast<double>(n.count));
      }
      break;
    case Note::Kind::kBatchRoute:
      m.batch_route.With({url}).Set(n.status);
      if (n.status) {
        spdlog::info("umami process {} answers POST /api/batch: a visitor's events go in batches",
                     url);
      } else {
        spdlog::info(
            "umami process {} has no usable POST /api/batch ({}): events go one by one to "
            "/api/send (asked again in 10 minutes)",
            url, Safe(n.text));
      }
      break;
    case Note::Kind::kSendFailed:
      m.send_failures.With({url, FailureClass(n.status)}).Inc();
      spdlog::debug("send of seq {} to {} failed: {}", n.seq, url, Safe(n.text));
      break;
    case Note::Kind::kSendStuck:
      if (!n.first) break;  // once per process until it answers again
      spdlog::warn(
          "a send to {} (seq {}) had no answer from the HTTP client within the send "
          "timeout: given up as failed",
          url, n.seq);
      break;
    case Note::Kind::kOutageRetried:
      m.outage_retries.Inc();
      break;
    case Note::Kind::kWriteFaultRetried:
      m.write_fault_retries.Inc();
      break;
    case Note::Kind::kProcessUp:
      m.process_up.With({url}).Set(1);
      spdlog::info("umami process {} passes its health checks", url);
      break;
    case Note::Kind::kProcessDown:
      m.process_up.With({url}).Set(0);
      spdlog::warn("umami process {} fails its health checks: treated as down ({})", url,
                   Safe(n.text));
      break;
    case Note::Kind::kWriteFaultBegan:
      if (n.process >= 0) {
        m.write_fault.With({url}).Set(1);
      } else {
        for (const auto& u : cfg.umami_urls) m.write_fault.With({u}).Set(1);
      }
      spdlog::warn(
          "umami process {} cannot write ({} visitors failed since it last stored an "
          "event, its checks passing): failures no longer count, retries every 30 s",
          url, n.count);
      break;
    case Note::Kind::kWriteFaultEnded:
      for (int i = 0; i < static_cast<int>(cfg.umami_urls.size()); ++i) {
        if (n.process < 0 || n.process == i) {
          m.write_fault.With({cfg.umami_urls[i]}).Set(core.ProcessWriteFault(i) ? 1 : 0);
        }
      }
      if (n.text.empty()) {
        spdlog::info("umami process {} stores again: write fault over, parked events retry now",
                     url);
      } else {
        spdlog::info("umami process {}: write fault over, {}", url, Safe(n.text));
      }
      break;
    case Note::Kind::kSiteUnknown:
      spdlog::warn(
          "umami does not know website {} ({}: {}): its events go to WEB_DLQ unsent, reason "
          "\"umami does not know website …\"; one is sent again every {} s (a replayed one at "
          "once) and the first stored ends this",
          Safe(n.text), Safe(n.subject), Safe(n.detail),
          std::chrono::duration_cast<std::chrono::seconds>(kSiteRecheck).count());
      break;
    case Note::Kind::kSiteKnown:
      spdlog::info("umami stores events of website {} again ({} s after it did not know it)",
                   Safe(n.text), static_cast<int64_t>(n.seconds));
      break;
    case Note::Kind::kCheckDone:
      spdlog::debug("health check of {}: {} in {:.3f} s{}{}", url, n.status ? "passed" : "failed",
                    n.seconds, n.text.empty() ? "" : ": ", Safe(n.text));
      break;
    case Note::Kind::kCheckTimedOut:
      spdlog::warn(
          "health check of {} had no complete answer within {} s (the send timeout + 5 s): "
          "counted as failed{}{}",
          url, (cfg.send_timeout + milliseconds(5000)).count() / 1000, n.text.empty() ? "" : " (",
          n.text.empty() ? "" : Safe(n.text) + ")");
      break;
    case Note::Kind::kCheckStuck:
      spdlog::warn(
          "a health check of {} has had no answer from the HTTP client for {:.0f} s "
          "(more than REPLAYER_SEND_TIMEOUT): the client, not Umami, is stuck; newer "
          "checks go on",
          url, n.seconds);
      break;
    case Note::Kind::kTokenIgnored:
      m.tokens_ignored.With({url}).Inc();
      if (n.first) {
        spdlog::warn(
            "umami process {} answered a stored event with {}: no cache token kept "
            "(logged once per process; replayer_cache_tokens_ignored_total counts them)",
            url, Safe(n.text));
      }
      break;
    case Note::Kind::kGuardFailed:
      if (int64_t left_out = 0; guard_warn.Allow(now, &left_out)) {
        spdlog::warn("duplicate guard record for seq {} failed, writing it again: {}{}", n.seq,
                     Safe(n.text), common::LeftOut(left_out));
      }
      break;
    case Note::Kind::kLookupFailed:
      if (int64_t left_out = 0; lookup_warn.Allow(now, &left_out)) {
        spdlog::warn("{} (seq {}){}", Safe(n.text), n.seq, common::LeftOut(left_out));
      }
      break;
    case Note::Kind::kDlqPublishFailed:
      m.dlq_publish_failures.With({n.code}).Inc();
      if (n.first) {
        spdlog::error(
            "could not move seq {} to WEB_DLQ ({}): {}; retrying {} (logged once per "
            "cause; replayer_dlq_publish_failures_total counts every failure)",
            n.seq, Safe(n.code), Safe(n.text),
            n.code == "too_large" ? "every 60 s until an operator makes room" : "every 5 s");
      }
      break;
    case Note::Kind::kRedeliveryAdopted:
      spdlog::debug("seq {} delivered again while held: the newest delivery is kept", n.seq);
      break;
    case Note::Kind::kReleased:
      if (n.count > 0 && n.status) spdlog::info("released {} held events for redelivery", n.count);
      if (n.count > 0 && !n.status) {
        spdlog::info("left {} held events to the next leader (they return after the ack wait)",
                     n.count);
      }
      break;
  }
}

}  // namespace replayer
