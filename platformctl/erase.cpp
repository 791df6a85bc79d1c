#include "platformctl/erase.h"

#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "platformctl/json_out.h"

namespace platformctl::erase {
namespace {

using Clock = std::chrono::steady_clock;

std::string Who(const Request& r) {
  if (!r.web()) return "tenant " + dlq::Printable(r.tenant);
  std::string s = "site " + dlq::Printable(r.site);
  if (r.visitor) s += ", visitor " + dlq::Printable(*r.visitor);
  return s;
}

}  // namespace

int RunErase(dlq::RunEnv& env, const Request& r, bool json) {
  const dlq::QueueInfo q = dlq::InfoFor(r.web() ? dlq::Queue::kWeb : dlq::Queue::kApi);
  // A tenant's messages all sit under its key; a site's may also sit under _invalid (see
  // erase_match.h), so the whole web DLQ is read.
  const std::string filter = r.web() ? q.dlq_prefix + "*" : q.dlq_prefix + r.tenant;
  auto walk = dlq::OpenWalk(env.client, q, filter, 1, 0, std::numeric_limits<uint64_t>::max(),
                            /*headers_only=*/!r.web());
  if (!walk) return dlq::Fail(env, walk.error());

  dlq::RunSummary summary;
  dlq::ErasureFacts facts;
  dlq::EraseBatch eraser(env, q, summary, facts);
  auto before = dlq::ReplicasBefore(env, q);
  dlq::Progress progress(env.err, env.progress);
  const auto start = Clock::now();
  uint64_t looked_at = 0;
  dlq::ForEachInWalk(env, *walk, summary, looked_at, [&](platformctl::nats_dlq::StoredMessage& m) {
    std::string_view key = std::string_view(m.subject).substr(q.dlq_prefix.size());
    Match match = Matches(r, key, m.data);
    if (match == Match::kNo) return true;
    if (match == Match::kUnreadable) {
      summary.Add(m.seq, dlq::Outcome::kSkipped,
                  "not JSON, so its visitor is unknown: kept (erase the whole site with "
                  "platformctl erase --site if it must go)");
      return true;
    }
    if (!eraser.Add(dlq::EntryOf(q, m))) return false;
    progress.Show(dlq::ProgressLine(summary, dlq::RunKind::kErase, q, looked_at,
                                    walk->browser->initial_pending(), dlq::SecondsSince(start)));
    return true;
  });
  if (!summary.stopped()) eraser.Flush();
  progress.Clear();

  const std::string downstream =
      r.web() ? "events still queued in WEB_EVENTS are not touched here: the downstream erasure "
                "(Umami) removes them once the replayer has stored them"
              : "batches still queued in API_METRICS are not touched here: the downstream "
                "erasure removes them once the metricswriter has stored them";
  dlq::ErasureReport report = dlq::FinishErasure(env, q, before, facts);
  if (json) {
    auto j = nlohmann::json::parse(
        dlq::ErasureSummaryJson(summary, dlq::RunKind::kErase, q, Who(r), walk->end_seq, report));
    j["who"] = Who(r);
    j["note"] = downstream;
    env.out << platformctl::DumpJson(j) << "\n";
    return summary.complete() && report.ok() ? 0 : 1;
  }
  // "Erased" here means overwritten by the stream: where every copy stands is reported below.
  env.out << "erase " << Who(r) << ": " << summary.count(dlq::Outcome::kErased) << " message"
          << (summary.count(dlq::Outcome::kErased) == 1 ? "" : "s") << " of " << q.dlq_stream
          << " erased (looked at " << looked_at << ", up to seq " << walk->end_seq << ")\n";
  env.out << "note: " << downstream << "\n";
  return dlq::PrintErasure(env, summary, dlq::RunKind::kErase, q, report);
}

}  // namespace platformctl::erase
