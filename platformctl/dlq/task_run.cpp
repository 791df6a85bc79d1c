#include "platformctl/dlq/task_run.h"

#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "common/nats_kv.h"
#include "common/timefmt.h"
#include "common/topology.h"
#include "platformctl/dlq/subject.h"
#include "platformctl/dlq/task_store.h"
#include "platformctl/nats_admin_request.h"

namespace platformctl::dlq {
namespace {

using common::ErrorKind;

int64_t NowMs() { return common::NowUnixNs() / 1'000'000; }

// The last DLQ sequence the task finished (every one up to it is done), as messages say it.
uint64_t Reached(const TaskRecord& t) { return t.next_seq > 0 ? t.next_seq - 1 : 0; }

std::string RateText(double rate) {
  if (rate <= 0) return "-";
  std::ostringstream o;
  o << std::setprecision(rate < 10 ? 2 : 6) << rate << "/s";
  return o.str();
}

std::string RunnerName() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "unknown") + ":" + std::to_string(getpid());
}

std::string Time(int64_t ms) { return ms > 0 ? common::FormatRfc3339(ms * 1'000'000) : "-"; }

int Refuse(RunEnv& env, const std::string& why) {
  env.err << "platformctl: " << why << "\n";
  return 2;
}

int FailTask(RunEnv& env, const common::Error& e) {
  return e.kind == ErrorKind::kInvalid ? Refuse(env, e.message) : Fail(env, e);
}

// Keeps a task's record current while RunReplay runs it: progress and a heartbeat at least
// every kTaskHeartbeatMs, by compare-and-set, so a cancel or a take-over in between is seen.
class Keeper {
 public:
  Keeper(RunEnv& env, common::KvBucket& kv, task_store::Loaded l)
      : env_(env), kv_(kv), t_(std::move(l.t)), rev_(l.rev), base_(t_) {}

  ReplayOptions Hook(ReplayOptions o) {
    json_ = o.json;
    last_line_ms_ = NowMs();
    o.started = [this](uint64_t end_seq) {
      if (t_.end_seq == 0) t_.end_seq = end_seq;
      std::string why;
      Write(why, true);
    };
    o.progress = [this](uint64_t next_seq, const RunSummary& s, bool settled, std::string& why) {
      if (settled) {
        t_.next_seq = next_seq;
        Count(s);
      }
      return Write(why, false);
    };
    o.published = [this](uint64_t first, uint64_t last, const RunSummary& s, uint64_t stored,
                         uint64_t dups) {
      // Written before the batch's DLQ copies are erased: a runner that dies now leaves them
      // counted, and the run that resumes publishes them again without counting them twice.
      t_.next_seq = std::max(t_.next_seq, first);
      t_.counted_through = std::max(t_.counted_through, last);
      Count(s);
      t_.replayed += stored;
      t_.already += dups;
      std::string why;
      Write(why, true);
    };
    o.finished = [this](const RunSummary& s, bool whole, uint64_t next_seq) {
      t_.next_seq = std::max(t_.next_seq, next_seq);
      Count(s);
      Finish(s, whole);
    };
    return o;
  }

  const TaskRecord& record() const { return t_; }
  bool lost() const { return lost_; }

 private:
  void Count(const RunSummary& s) {
    t_.replayed = base_.replayed + s.counted(Outcome::kReplayed);
    t_.already = base_.already + s.counted(Outcome::kAlreadyThere);
    t_.skipped = base_.skipped + s.counted(Outcome::kSkipped);
    t_.failed = base_.failed + s.counted(Outcome::kFailed);
  }

  // Every kProgressEveryMs, a line on stdout when it is no terminal (a terminal has the
  // progress line on stderr): what a task run under nohup or a container leaves in its log.
  void ProgressLine(int64_t now) {
    if (env_.progress || now - last_line_ms_ < kProgressEveryMs) return;
    last_line_ms_ = now;
    if (json_) {
      nlohmann::json j = {{"task", t_.name},         {"state", TaskStateName(t_.state)},
                          {"next_seq", t_.next_seq}, {"end_seq", t_.end_seq},
                          {"replayed", t_.replayed}, {"already", t_.already},
                          {"skipped", t_.skipped},   {"failed", t_.failed},
                          {"at", Time(now)}};
      env_.out << nlohmann::json{{"progress", j}}.dump() << "\n";
    } else {
      env_.out << "progress " << Time(now) << ": task " << t_.name << " at seq " << Reached(t_)
               << " of " << t_.end_seq << ", replayed " << t_.replayed << ", already there "
               << t_.already << ", skipped " << t_.skipped << ", failed " << t_.failed << "\n";
    }
    env_.out.flush();
  }

  // False (with why) when the record says stop: cancelled, or another runner took it over.
  bool Write(std::string& why, bool force) {
    if (cancelled_ || lost_) {
      why = stop_why_;  // seen by an earlier write whose answer was not asked for
      return false;
    }
    int64_t now = NowMs();
    if (!force && now - t_.updated_ms < kTaskHeartbeatMs) return true;
    ProgressLine(now);
    t_.updated_ms = now;
    auto rev = kv_.Update(t_.name, EncodeTask(t_), rev_);
    if (rev) {
      rev_ = *rev;
      return true;
    }
    if (rev.error().kind == ErrorKind::kRetryable) return true;  // NATS away: the run will tell
    return Reload(why);
  }

  // Someone else wrote the record: a cancel, or a resume that counted this runner gone.
  bool Reload(std::string& why) {
    auto l = task_store::Load(kv_, t_.name);
    if (!l || !*l) {
      why = stop_why_ = "the task's record could not be read back: stopped";
      lost_ = true;
      return false;
    }
    if ((*l)->t.runner != t_.runner) {
      why = stop_why_ = "taken over by " + (*l)->t.runner + ": stopped here";
      lost_ = true;
      return false;
    }
    rev_ = (*l)->rev;
    if ((*l)->t.state == TaskState::kCancelling) {
      cancelled_ = true;
      t_.note = (*l)->t.note;
      why = stop_why_ = "cancelled" + (t_.note.empty() ? std::string() : " (" + t_.note + ")");
      return false;
    }
    std::string again;
    return Write(again, true);
  }

  void Finish(const RunSummary& s, bool whole) {
    if (lost_) return;
    if (cancelled_) {
      t_.state = TaskState::kCancelled;
    } else if (whole) {
      t_.state = TaskState::kDone;
      t_.note.clear();
    } else {
      t_.state = TaskState::kStopped;
      t_.note = s.stopped() ? *s.stopped() : "stopped";
    }
    for (int tries = 0; tries < 3; ++tries) {
      t_.updated_ms = NowMs();
      auto rev = kv_.Update(t_.name, EncodeTask(t_), rev_);
      if (rev) return;
      auto l = task_store::Load(kv_, t_.name);
      if (!l || !*l || (*l)->t.runner != t_.runner) break;
      rev_ = (*l)->rev;
      if ((*l)->t.state == TaskState::kCancelling) {
        t_.state = TaskState::kCancelled;
        t_.note = (*l)->t.note;
      }
    }
    env_.err << "platformctl: task " << t_.name << ": its final state (" << TaskStateName(t_.state)
             << ") could not be recorded; `dlq task list` shows it as running until its runner "
                "counts as gone\n";
  }

  RunEnv& env_;
  common::KvBucket& kv_;
  TaskRecord t_;
  uint64_t rev_;
  TaskRecord base_;  // the counts before this run (a resumed task's earlier runs)
  bool cancelled_ = false;
  bool lost_ = false;
  std::string stop_why_;  // why the run stops, once cancelled_ or lost_
  bool json_ = false;
  int64_t last_line_ms_ = 0;
  static constexpr int64_t kProgressEveryMs = 5'000;
};

int RunTask(RunEnv& env, common::KvBucket& kv, task_store::Loaded l, ReplayOptions o) {
  auto q = ParseQueue(l.t.queue);
  auto sel = Selection::Parse(l.t.selection);
  if (!q || !sel) return Refuse(env, "task " + l.t.name + ": its selection no longer parses");
  QueueInfo info = InfoFor(*q);
  o.rate = l.t.rate;
  o.to_subject = l.t.to_subject;
  o.start_seq = l.t.next_seq;
  o.end_seq = l.t.end_seq;
  o.count_above = l.t.counted_through;
  const bool json = o.json;
  Keeper keeper(env, kv, std::move(l));
  int rc = RunReplay(env, info, *sel, keeper.Hook(std::move(o)));
  const TaskRecord& t = keeper.record();
  if (!json) {
    env.out << "task " << t.name << ": " << TaskStateName(t.state) << ", reached seq " << Reached(t)
            << " of " << t.end_seq << "; in all its runs: replayed " << t.replayed
            << ", already there " << t.already << ", skipped " << t.skipped << ", failed "
            << t.failed << "\n";
    if (t.state == TaskState::kStopped || t.state == TaskState::kCancelled) {
      env.out << "resume it with: platformctl dlq task resume " << t.name << "\n";
    }
  }
  return rc == 0 && (t.state == TaskState::kDone || keeper.lost()) ? rc : std::max(rc, 1);
}

}  // namespace

int RunTaskStart(RunEnv& env, const TaskStart& start) {
  if (!ValidTaskName(start.name)) {
    return Refuse(env, "--task '" + Printable(start.name) +
                           "' is not a task name (1 to 64 of A-Z, a-z, 0-9, '-', '_')");
  }
  // Before the record is written: a refused destination must leave no task holding the DLQ.
  if (auto to = CheckToSubject(env.client, start.queue, start.replay.to_subject); !to) {
    return FailTask(env, to.error());
  }
  auto kv = task_store::OpenBucket(env);
  if (!kv) return FailTask(env, kv.error());
  if (!start.allow_parallel) {
    auto all = task_store::LoadAll(**kv);
    if (!all) return FailTask(env, all.error());
    auto blocking = BlockingTasks(*all, start.queue.name);
    if (!blocking.empty()) {
      std::string names;
      for (const auto& n : blocking) names += (names.empty() ? "" : ", ") + n;
      return Refuse(env, "task " + names + " still holds " + start.queue.dlq_stream +
                             " (resume or cancel it first; --allow-parallel runs beside it)");
    }
  }
  TaskRecord t;
  t.name = start.name;
  t.queue = start.queue.name;
  t.selection = start.spec;
  t.describe = start.describe;
  t.rate = start.replay.rate;
  t.to_subject = start.replay.to_subject;
  t.state = TaskState::kRunning;
  t.runner = RunnerName();
  t.started_ms = t.updated_ms = NowMs();
  t.parallel = start.allow_parallel;
  auto rev = task_store::WriteTask(**kv, t, std::nullopt);
  if (!rev) {
    if (rev.error().kind == ErrorKind::kRetryable) return Fail(env, rev.error());
    return Refuse(env, "a task named " + t.name +
                           " exists (see platformctl dlq task list; resume it, or choose another "
                           "name)");
  }
  if (!start.replay.json) env.out << "task " << t.name << " started by " << t.runner << "\n";
  return RunTask(env, **kv, task_store::Loaded{std::move(t), *rev}, start.replay);
}

int RunTaskResume(RunEnv& env, const std::string& name, bool json) {
  auto kv = task_store::OpenBucket(env);
  if (!kv) return FailTask(env, kv.error());
  auto l = task_store::Load(**kv, name);
  if (!l) return FailTask(env, l.error());
  if (!*l) return Refuse(env, "no task named " + Printable(name));
  std::string refusal = ResumeRefusal((*l)->t, NowMs());
  if (!refusal.empty()) return Refuse(env, "task " + name + " cannot be resumed: " + refusal);
  if ((*l)->t.state == TaskState::kCancelled && !(*l)->t.parallel) {
    // A cancelled task let go of its DLQ: another task may hold it now.
    auto all = task_store::LoadAll(**kv);
    if (!all) return FailTask(env, all.error());
    auto blocking = ResumeBlockedBy((*l)->t, *all);
    if (!blocking.empty()) {
      std::string names;
      for (const auto& n : blocking) names += (names.empty() ? "" : ", ") + n;
      return Refuse(env, "task " + name + " cannot be resumed now: task " + names +
                             " holds its DLQ (when that one is done or cancelled: platformctl "
                             "dlq task resume " +
                             name + ")");
    }
  }
  // A record written by an earlier version, or by hand, may hold a destination refused now;
  // checked before taking the task over, so it stays as it was and can be cancelled.
  if (auto q = ParseQueue((*l)->t.queue)) {
    auto to = CheckToSubject(env.client, InfoFor(*q), (*l)->t.to_subject);
    if (!to && to.error().kind == ErrorKind::kInvalid) {
      return Refuse(env, "task " + name + " cannot be resumed: " + to.error().message +
                             " (cancel it: platformctl dlq task cancel " + name + ")");
    }
    if (!to) return Fail(env, to.error());
  }
  task_store::Loaded taken = std::move(**l);
  std::string previous = taken.t.runner;
  taken.t.state = TaskState::kRunning;
  taken.t.runner = RunnerName();
  taken.t.updated_ms = NowMs();
  taken.t.note = "resumed from " + previous + " after seq " + std::to_string(Reached(taken.t));
  auto rev = task_store::WriteTask(**kv, taken.t, taken.rev);
  if (!rev) {
    if (rev.error().kind == ErrorKind::kRetryable) return Fail(env, rev.error());
    return Refuse(env, "task " + name +
                           " changed meanwhile (another platformctl resumed or "
                           "cancelled it): look again with dlq task list");
  }
  taken.rev = *rev;
  if (!json) env.out << "task " << name << " resumed by " << taken.t.runner << "\n";
  ReplayOptions o;
  o.json = json;
  return RunTask(env, **kv, std::move(taken), o);
}

int RunTaskCancel(RunEnv& env, const std::string& name, int64_t wait_ms) {
  auto kv = task_store::OpenBucket(env);
  if (!kv) return FailTask(env, kv.error());
  auto l = task_store::Load(**kv, name);
  if (!l) return FailTask(env, l.error());
  if (!*l) return Refuse(env, "no task named " + Printable(name));
  task_store::Loaded cur = std::move(**l);
  const int64_t now = NowMs();
  if (cur.t.state == TaskState::kCancelled) {
    env.out << "task " << name << " is cancelled already\n";
    return 0;
  }
  if (cur.t.state == TaskState::kDone)
    return Refuse(env, "task " + name + " is done: nothing to cancel");
  const bool live = !RunnerGone(cur.t, now) && cur.t.state != TaskState::kStopped;
  cur.t.note = "cancelled by " + RunnerName() + " at " + Time(now);
  cur.t.state = live ? TaskState::kCancelling : TaskState::kCancelled;
  if (!live) cur.t.updated_ms = now;
  auto rev = task_store::WriteTask(**kv, cur.t, cur.rev);
  if (!rev) {
    if (rev.error().kind == ErrorKind::kRetryable) return Fail(env, rev.error());
    return Refuse(env, "task " + name + " changed meanwhile: look again with dlq task list");
  }
  if (!live) {
    env.out << "task " << name << " cancelled (no runner was working on it) at seq "
            << Reached(cur.t) << " of " << cur.t.end_seq << "\n";
    return 0;
  }
  env.out << "task " << name << ": asked its runner " << cur.t.runner
          << " to stop after its current batch\n";
  const int64_t until = now + wait_ms;
  while (NowMs() < until && !env.stop.stopping()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto again = task_store::Load(**kv, name);
    if (again && *again && (*again)->t.state == TaskState::kCancelled) {
      const TaskRecord& t = (*again)->t;
      env.out << "task " << name << " cancelled at seq " << Reached(t) << " of " << t.end_seq
              << ": replayed " << t.replayed << ", already there " << t.already << ", skipped "
              << t.skipped << ", failed " << t.failed << "\n";
      return 0;
    }
  }
  env.out << "task " << name << ": its runner has not confirmed yet; it stops after its current "
          << "batch (dlq task list shows when)\n";
  return 1;
}

int RunTaskList(RunEnv& env, bool json) {
  auto kv = task_store::OpenBucket(env);
  if (!kv) return FailTask(env, kv.error());
  auto all = task_store::LoadAll(**kv);
  if (!all) return FailTask(env, all.error());
  const int64_t now = NowMs();
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& t : *all) {
      nlohmann::json j = nlohmann::json::parse(EncodeTask(t));
      j.erase("v");
      j["status"] = TaskStatus(t, now);
      j["runner_gone"] = RunnerGone(t, now);
      arr.push_back(std::move(j));
    }
    env.out << nlohmann::json{{"tasks", arr}, {"read_at", Time(now)}}.dump() << "\n";
    return 0;
  }
  if (all->empty()) {
    env.out << "no redrive tasks (platformctl dlq replay --task NAME starts one)\n";
    return 0;
  }
  env.out << std::left << std::setw(20) << "TASK" << std::setw(6) << "QUEUE" << std::setw(28)
          << "STATE" << std::setw(16) << "SEQ" << std::right << std::setw(9) << "REPLAYED"
          << std::setw(9) << "ALREADY" << std::setw(9) << "SKIPPED" << std::setw(8) << "FAILED"
          << "  " << std::left << std::setw(8) << "RATE"
          << "UPDATED                   RUNNER / "
          << "SELECTION\n";
  for (const auto& t : *all) {
    std::string seq = std::to_string(Reached(t)) + "/" + std::to_string(t.end_seq);
    std::string rate = RateText(t.rate);
    env.out << std::left << std::setw(20) << t.name << std::setw(6) << t.queue << std::setw(28)
            << TaskStatus(t, now) << std::setw(16) << seq << std::right << std::setw(9)
            << t.replayed << std::setw(9) << t.already << std::setw(9) << t.skipped << std::setw(8)
            << t.failed << "  " << std::left << std::setw(8) << rate << std::setw(26)
            << Time(t.updated_ms) << Printable(t.runner) << " / " << Printable(t.describe)
            << (t.to_subject.empty() ? "" : " -> " + Printable(t.to_subject))
            << (t.note.empty() ? "" : " (" + Printable(t.note) + ")") << "\n";
  }
  return 0;
}

}  // namespace platformctl::dlq
