// The replayer's shell: the fetch thread and the lookup thread. Each carries out the requests the
// engine thread hands it and puts the answers in the inbox; neither decides anything.
#include <spdlog/spdlog.h>

#include "common/dead_letter.h"
#include "replayer/engine_state.h"

namespace replayer {

void Engine::State::StartWorkers() {
  {
    std::lock_guard lock(work_mu);
    workers_stop = false;
  }
  fetcher = std::thread([this] { FetchLoop(); });
  looker = std::thread([this] { LookupLoop(); });
}

void Engine::State::StopWorkers() {
  {
    std::lock_guard lock(work_mu);
    workers_stop = true;
  }
  work_cv.notify_all();
  if (fetcher.joinable()) fetcher.join();
  if (looker.joinable()) looker.join();
}

void Engine::State::FetchLoop() {
  while (true) {
    FetchCmd req;
    {
      std::unique_lock lock(work_mu);
      work_cv.wait(lock, [&] { return workers_stop || fetch_request.has_value(); });
      if (workers_stop) return;
      req = *fetch_request;
      fetch_request.reset();
    }
    Fetched f;
    auto batch = consumer->Fetch(req.max_messages, kFetchWait);
    if (!batch) {
      f.error = batch.error().message;
      // A failing fetch is answered at once; the core waits a moment before the next one.
    } else {
      f.messages = std::move(*batch);
      f.deliveries.reserve(f.messages.size());
      for (const auto& msg : f.messages) {
        Delivery d;
        d.stream_seq = msg.stream_seq();
        d.num_delivered = msg.num_delivered();
        auto headers = msg.AllHeaders();
        int64_t bytes = static_cast<int64_t>(msg.data().size());
        for (const auto& [k, v] : headers) bytes += static_cast<int64_t>(k.size() + v.size() + 4);
        d.bytes = bytes;
        d.replayed = msg.Header(core::dead_letter::kReplay).has_value();
        d.subject = std::string(msg.subject());
        // Parsing is pure and the costliest step of the intake: done here, beside the engine.
        d.parsed = Parse(msg.data(), msg.Header("Nats-Msg-Id").value_or(""));
        f.deliveries.push_back(std::move(d));
      }
    }
    for (auto& d : f.deliveries) d.ref = ++next_ref;
    {
      std::lock_guard lock(inbox.mu);
      inbox.fetched.push_back(std::move(f));
    }
    http.Wakeup();
  }
}

void Engine::State::LookupLoop() {
  while (true) {
    LookupJob job;
    {
      std::unique_lock lock(work_mu);
      work_cv.wait(lock, [&] { return workers_stop || !lookup_jobs.empty(); });
      if (workers_stop) return;
      job = std::move(lookup_jobs.front());
      lookup_jobs.pop_front();
      // Everything queued goes out together: the KV reads are request/reply round trips.
      while (!lookup_jobs.empty()) {
        auto& more = lookup_jobs.front();
        for (auto& g : more.guards) job.guards.push_back(std::move(g));
        for (auto& v : more.visits) job.visits.push_back(std::move(v));
        lookup_jobs.pop_front();
      }
    }
    std::vector<GuardAnswer> guards;
    std::vector<VisitAnswer> visits;
    auto answer = [](const core::Result<std::optional<core::KvValue>>& r) {
      if (!r) return Lookup::kError;
      return r->has_value() ? Lookup::kFound : Lookup::kAbsent;
    };
    if (!job.guards.empty()) {
      std::vector<std::string> keys;
      for (const auto& g : job.guards) keys.push_back(g.key);
      auto got = stored_ids->GetMany(keys);
      for (size_t i = 0; i < got.size(); ++i) {
        guards.push_back({job.guards[i].lookup_id, answer(got[i])});
      }
    }
    if (!job.visits.empty()) {
      std::vector<std::string> keys;
      for (const auto& v : job.visits) keys.push_back(v.key);
      auto got = visit_bucket->GetMany(keys);
      for (size_t i = 0; i < got.size(); ++i) {
        auto a = answer(got[i]);
        visits.push_back({job.visits[i].lane, a, a == Lookup::kFound ? (*got[i])->value : ""});
      }
    }
    {
      std::lock_guard lock(inbox.mu);
      for (auto& g : guards) inbox.guards.push_back(g);
      for (auto& v : visits) inbox.visits.push_back(std::move(v));
    }
    http.Wakeup();
  }
}

}  // namespace replayer
