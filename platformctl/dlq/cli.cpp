#include "platformctl/dlq/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/stop_signal.h"
#include "platformctl/dlq/run.h"
#include "platformctl/dlq/subject.h"
#include "platformctl/dlq/task_run.h"
#include "platformctl/dlq/verify.h"
#include "platformctl/erase.h"

namespace platformctl {
namespace {

constexpr const char* kDlqExitCodes =
    "Exit codes: 0 done; 1 partly done (something skipped or failed, or the run was "
    "interrupted: the rest is still in the DLQ); 2 usage or configuration error; 3 cannot reach "
    "NATS; 4 purge without --yes (it only said what it would erase).";

constexpr const char* kSelectionHelp =
    "Selection (combined with AND): --all, --from/--to (a DLQ sequence or an RFC 3339 time, "
    "inclusive), --key (site id for web, tenant id for api), --reason (case-insensitive "
    "substring). replay and purge refuse to run without one.";

struct SelectionOptions {
  bool all = false;
  std::string from, to, key, reason;
  CLI::Option *from_opt = nullptr, *to_opt = nullptr, *key_opt = nullptr, *reason_opt = nullptr;

  void AddTo(CLI::App* cmd) {
    cmd->add_flag("--all", all, "Every message (up to the last one when the run starts)");
    from_opt = cmd->add_option("--from", from, "From this DLQ sequence or time (inclusive)");
    to_opt = cmd->add_option("--to", to, "Up to this DLQ sequence or time (inclusive)");
    key_opt = cmd->add_option("--key", key, "Only this site id (web) or tenant id (api)");
    reason_opt =
        cmd->add_option("--reason", reason, "Only reasons containing this (case-insensitive)");
  }

  dlq::Selection::Spec Spec() const {
    dlq::Selection::Spec s;
    s.all = all;
    if (from_opt->count() > 0) s.from = from;
    if (to_opt->count() > 0) s.to = to;
    if (key_opt->count() > 0) s.key = key;
    if (reason_opt->count() > 0) s.reason = reason;
    return s;
  }
};

}  // namespace

struct DlqCommands::Options {
  CLI::App* dlq = nullptr;
  CLI::App* list = nullptr;
  CLI::App* replay = nullptr;
  CLI::App* purge = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* rebuild = nullptr;
  CLI::App* erase = nullptr;
  std::string seqs;
  uint64_t raft_index = 0;  // 0: not given
  std::vector<std::string> not_erased_on;
  int64_t raft_wait = dlq::kRaftLogWait.count();  // seconds
  std::string replica;
  std::string queue;
  SelectionOptions list_sel, replay_sel, purge_sel;
  bool json = false;
  bool summary = false;
  bool yes = false;
  std::string rate;
  CLI::Option* rate_opt = nullptr;
  CLI::Option* to_subject_opt = nullptr;
  std::string task_name, to_subject;
  bool allow_parallel = false;
  CLI::App* task = nullptr;
  CLI::App* task_list = nullptr;
  CLI::App* task_cancel = nullptr;
  CLI::App* task_resume = nullptr;
  double cancel_wait = 10;
  std::string site, visitor, tenant;
  CLI::Option *site_opt = nullptr, *visitor_opt = nullptr, *tenant_opt = nullptr;
};

DlqCommands::DlqCommands(CLI::App& app) : o_(std::make_unique<Options>()) {
  Options& o = *o_;
  o.dlq = app.add_subcommand(
      "dlq", "Dead-letter queues: list, replay to the origin stream, purge (secure erase)");
  o.dlq->require_subcommand(1);
  o.dlq->footer(std::string(kSelectionHelp) + "\n" + kDlqExitCodes);
  // What list, replay and purge share: the queue, the selection, the help footer.
  auto common = [&o](CLI::App* cmd, SelectionOptions& sel) {
    cmd->add_option("--queue", o.queue, "web (WEB_DLQ) or api (API_DLQ)")
        ->required()
        ->check(CLI::IsMember({"web", "api"}));
    sel.AddTo(cmd);
    cmd->footer(std::string(kSelectionHelp) + "\n" + kDlqExitCodes);
  };

  o.list = o.dlq->add_subcommand(
      "list",
      "One line per message: DLQ sequence, dead-lettered time, key, origin stream and "
      "sequence, origin subject, payload size, reason. Never the payload.");
  common(o.list, o.list_sel);
  o.list->add_flag("--summary", o.summary, "Counts per reason and per key instead of lines");
  o.list->add_flag("--json", o.json, "One JSON object (a messages array, or the summary)");

  o.replay = o.dlq->add_subcommand(
      "replay",
      "Publish the selected messages back to their origin subject (payload unchanged, message "
      "id <original>.replay.<dlq stream>.<dlq seq>, header Sa-Dlq-Replay), then securely erase "
      "each DLQ copy once the origin stream acknowledged it. A message whose origin subject is "
      "not one literal subject of the origin stream (cut, a wildcard, white space) is skipped "
      "and kept. Stops at the DLQ's last sequence when it started; Ctrl-C stops between "
      "batches, never between a publish and its erase.");
  common(o.replay, o.replay_sel);
  o.rate_opt = o.replay->add_option("--rate,--max-rate", o.rate,
                                    "At most N messages per second (N or N/s), so a large replay "
                                    "does not swamp the consumers");
  o.replay->add_flag("--json", o.json, "The summary as one JSON object");
  o.replay->add_option("--task", o.task_name,
                       "Run as a redrive task of this name, recorded in the KV bucket dlq_tasks "
                       "(progress, heartbeat): any platformctl can list it, cancel it, and "
                       "resume it where it stopped if this process dies. SIGHUP is ignored");
  o.replay->add_flag("--allow-parallel", o.allow_parallel,
                     "With --task: start even while another task holds this DLQ");
  o.to_subject_opt = o.replay->add_option(
      "--to-subject", o.to_subject,
      "Publish every message to this subject of the origin stream instead of its own (a "
      "quarantine or test consumer's subject); one literal subject: no wildcard, no white space");

  o.task = o.dlq->add_subcommand(
      "task", "Redrive tasks (dlq replay --task NAME): list them, cancel one, resume one");
  o.task->require_subcommand(1);
  const char* task_codes =
      "Exit codes: 0 done; 1 partly done, stopped, or not confirmed in time; 2 refused (no "
      "such task, a live runner, already finished) or usage error; 3 cannot reach NATS.";
  o.task->footer(task_codes);
  o.task_list = o.task->add_subcommand(
      "list",
      "Every task: state (a running task whose runner wrote nothing for 30 s is shown as gone), "
      "progress (the DLQ sequence it reached of its end), replayed, already there, skipped, "
      "failed, rate, last heartbeat, runner, selection");
  o.task_list->add_flag("--json", o.json, "One JSON object with a tasks array");
  o.task_list->footer(task_codes);
  o.task_cancel = o.task->add_subcommand(
      "cancel",
      "Stop a task: a live runner stops after its current batch (nothing published is left "
      "unerased); a task whose runner is gone is marked cancelled at once. What it replayed "
      "stays replayed; the rest stays in the DLQ");
  o.task_cancel->add_option("name", o.task_name, "The task")->required();
  o.task_cancel->add_option("--wait", o.cancel_wait,
                            "Seconds to wait for the runner to confirm (default 10)");
  o.task_cancel->footer(task_codes);
  o.task_resume = o.task->add_subcommand(
      "resume",
      "Go on with a stopped task, or one whose runner is gone, from the sequence it reached, "
      "in this process; a message its dead runner published but had not erased is published "
      "again under the same message id and dropped by the stream (counted as already there)");
  o.task_resume->add_option("name", o.task_name, "The task")->required();
  o.task_resume->add_flag("--json", o.json, "The summary as one JSON object");
  o.task_resume->footer(task_codes);

  o.purge = o.dlq->add_subcommand(
      "purge",
      "Securely erase the selected messages (the stored bytes are overwritten). Without --yes: "
      "say what would be erased and exit 4.");
  common(o.purge, o.purge_sel);
  o.purge->add_flag("--yes", o.yes, "Really erase");
  o.purge->add_flag("--json", o.json, "The summary as one JSON object");
  const char* kRaftWaitHelp =
      "Seconds to wait for every replica's raft log to be compacted past the erasure (0: "
      "report them as they are now); what is not compacted by then is reported and exits 1";
  o.purge->add_option("--raft-wait", o.raft_wait, kRaftWaitHelp)
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();

  o.verify = o.dlq->add_subcommand(
      "verify",
      "Check, replica by replica, that the given DLQ sequences (as a purge or an erasure "
      "reported them) are stored on none: the leadership moves with step-downs until every "
      "current replica has answered. Says what no answer can show and how to force it.");
  o.verify->add_option("--queue", o.queue, "web (WEB_DLQ) or api (API_DLQ)")
      ->required()
      ->check(CLI::IsMember({"web", "api"}));
  o.verify
      ->add_option("--seqs", o.seqs,
                   "The erased sequences: 1-20,25,30-31, or @FILE to read them from a file")
      ->required();
  o.verify
      ->add_option("--raft-index", o.raft_index,
                   "The DLQ stream's raft index once the erasure was done (the purge or erasure "
                   "prints it in its verify command): every replica's raft log must be compacted "
                   "past it. Without it: past the index committed now, which waits for each "
                   "replica's next snapshot")
      ->check(CLI::PositiveNumber);
  o.verify
      ->add_option("--not-erased-on", o.not_erased_on,
                   "Replicas that did not erase them (the purge or erasure names them in its "
                   "verify command): no answer can show whether their block files keep the "
                   "bytes, so each fails the check until it is rebuilt (then verify without it)")
      ->delimiter(',');
  o.verify->add_option("--raft-wait", o.raft_wait, kRaftWaitHelp)
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  o.verify->add_flag("--json", o.json, "The result as one JSON object");
  o.verify->footer(
      "Exit codes: 0 every configured replica answered and holds none of them, and every "
      "replica's raft log is compacted past the erasure (waited for up to 4 minutes); 1 a replica "
      "could not be checked or holds some, or a raft log may; 2 usage error; 3 cannot reach "
      "NATS.");

  o.rebuild = o.dlq->add_subcommand(
      "rebuild",
      "Force what an erasure could not reach on one replica: remove it from the DLQ stream "
      "(nats-server deletes its copy and raft log) and add a replica back, built from a "
      "snapshot of the leader. Needs the provisioning user. Without --yes: say what it would "
      "do and exit 4.");
  o.rebuild->add_option("--queue", o.queue, "web (WEB_DLQ) or api (API_DLQ)")
      ->required()
      ->check(CLI::IsMember({"web", "api"}));
  o.rebuild->add_option("--replica", o.replica, "The server name of the replica, e.g. nats-2")
      ->required();
  o.rebuild->add_flag("--yes", o.yes, "Really rebuild it");
  o.rebuild->add_flag("--json", o.json, "The result as one JSON object");
  o.rebuild->footer(
      "Exit codes: 0 rebuilt, every replica current; 1 refused, or not current in time, or the "
      "peer removal refused by nats-server (2.15.1 refuses it when no other server can "
      "take the replica's place: it says what to do instead); 2 usage error; 3 cannot reach "
      "NATS; 4 without --yes.");

  o.erase = app.add_subcommand(
      "erase",
      "Erasure request: securely erase a site's, a visitor's or a tenant's DLQ messages and "
      "say how many (events still queued in WEB_EVENTS are erased downstream once stored)");
  o.site_opt = o.erase->add_option("--site", o.site, "Site id: its WEB_DLQ messages");
  o.visitor_opt = o.erase->add_option("--visitor", o.visitor,
                                      "With --site: only the events with this visitor key");
  o.tenant_opt = o.erase->add_option("--tenant", o.tenant, "Tenant id: its API_DLQ messages");
  o.visitor_opt->needs(o.site_opt);
  o.tenant_opt->excludes(o.site_opt);
  o.erase->add_flag("--json", o.json, "The report as one JSON object");
  o.erase->add_option("--raft-wait", o.raft_wait, kRaftWaitHelp)
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  o.erase->footer(kDlqExitCodes);
}

DlqCommands::~DlqCommands() = default;

bool DlqCommands::Chosen() const { return o_->dlq->parsed() || o_->erase->parsed(); }

int DlqCommands::Run(const common::CommonConfig& common) {
  Options& o = *o_;
  // Validate everything before connecting: a usage error never touches NATS.
  std::optional<dlq::Selection> sel;
  double rate = 0;
  erase::Request request;
  dlq::QueueInfo q;
  const char* verb = o.list->parsed() ? "list" : o.replay->parsed() ? "replay" : "purge";
  std::vector<uint64_t> seqs;
  const bool task_cmd = o.task->parsed();
  if (task_cmd) {
    if (!o.task_list->parsed() && !dlq::ValidTaskName(o.task_name)) {
      std::cerr << "platformctl: '" << dlq::Printable(o.task_name) << "' is not a task name\n";
      return 2;
    }
  } else if (o.verify->parsed() || o.rebuild->parsed()) {
    q = dlq::InfoFor(*dlq::ParseQueue(o.queue));
    if (o.verify->parsed()) {
      std::string text = o.seqs;
      if (!text.empty() && text[0] == '@') {
        std::ifstream in(text.substr(1));
        if (!in) {
          std::cerr << "platformctl: dlq verify: cannot read " << text.substr(1) << "\n";
          return 2;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
          text.pop_back();
        }
      }
      auto parsed = dlq::ParseSeqRanges(text);
      if (!parsed) {
        std::cerr << "platformctl: dlq verify: " << parsed.error().message << "\n";
        return 2;
      }
      seqs = std::move(*parsed);
    } else if (o.replica.empty()) {
      std::cerr << "platformctl: dlq rebuild: --replica is empty\n";
      return 2;
    }
  } else if (o.dlq->parsed()) {
    const SelectionOptions& so = o.list->parsed()     ? o.list_sel
                                 : o.replay->parsed() ? o.replay_sel
                                                      : o.purge_sel;
    auto parsed = dlq::Selection::Parse(so.Spec());
    if (!parsed) {
      std::cerr << "platformctl: dlq " << verb << ": " << parsed.error().message << "\n";
      return 2;
    }
    if (parsed->empty() && !o.list->parsed()) {
      std::cerr << "platformctl: dlq " << verb
                << " needs a selection: --all, --from, --to, --key or --reason (they combine)\n";
      return 2;
    }
    sel = std::move(*parsed);
    q = dlq::InfoFor(*dlq::ParseQueue(o.queue));
    if (o.replay->parsed() && !o.task_name.empty() && !dlq::ValidTaskName(o.task_name)) {
      std::cerr << "platformctl: dlq replay: --task '" << dlq::Printable(o.task_name)
                << "' is not a task name (1 to 64 of A-Z, a-z, 0-9, '-', '_')\n";
      return 2;
    }
    if (o.replay->parsed() && o.allow_parallel && o.task_name.empty()) {
      std::cerr << "platformctl: dlq replay: --allow-parallel needs --task\n";
      return 2;
    }
    // The literal check needs no server; whether the subject is on the origin stream is
    // checked once connected (RunReplay, RunTaskStart).
    if (o.replay->parsed() && o.to_subject_opt->count() > 0) {
      if (auto refusal = dlq::ToSubjectLiteralRefusal(o.to_subject, q.origin_stream)) {
        std::cerr << "platformctl: dlq replay: " << *refusal << "\n";
        return 2;
      }
    }
    if (o.replay->parsed() && o.rate_opt->count() > 0) {
      auto r = dlq::ParseRate(o.rate);
      if (!r) {
        std::cerr << "platformctl: dlq replay: " << r.error().message << "\n";
        return 2;
      }
      rate = *r;
    }
  } else {
    if (o.site_opt->count() == 0 && o.tenant_opt->count() == 0) {
      std::cerr << "platformctl: erase needs --site <id> [--visitor <key>] or --tenant <id>\n";
      return 2;
    }
    request.site = o.site;
    request.tenant = o.tenant;
    if (o.visitor_opt->count() > 0) request.visitor = o.visitor;
    const std::string& id = request.web() ? request.site : request.tenant;
    if (!dlq::ValidKey(id)) {
      std::cerr << "platformctl: erase: '" << dlq::Printable(id)
                << "' is not a site or tenant id (one subject token: not empty, no '.', '*', "
                   "'>' or white space)\n";
      return 2;
    }
    if (request.visitor && request.visitor->empty()) {
      std::cerr << "platformctl: erase: --visitor is empty\n";
      return 2;
    }
  }

  // A task outlives the operator's terminal: closing it must not end the run half-way.
  if ((o.replay->parsed() && !o.task_name.empty()) || (task_cmd && o.task_resume->parsed())) {
    std::signal(SIGHUP, SIG_IGN);
  }
  // Before the connection's threads start, so they inherit the blocked signals.
  common::StopSignal stop;
  common::NatsClient::Options no;
  no.client_name = "platformctl";
  // One answer may cover a batch of 256 erases, each synced to disk by the server.
  no.request_timeout_ms = 10'000;
  auto client = common::NatsClient::Connect(common, no);
  if (!client) {
    std::cerr << "platformctl: " << client.error().message << "\n";
    return 3;
  }
  // SIGTERM while NATS cannot be reached: what waits on it returns at once.
  common::NatsStopGuard nats_stop(**client, stop);
  dlq::RunEnv env{**client, stop, std::cout, std::cerr,
                  isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1};
  env.raft_log_wait = std::chrono::seconds(o.raft_wait);
  int rc = 0;
  if (task_cmd && o.task_list->parsed())
    rc = dlq::RunTaskList(env, o.json);
  else if (task_cmd && o.task_cancel->parsed())
    rc = dlq::RunTaskCancel(env, o.task_name, static_cast<int64_t>(o.cancel_wait * 1000));
  else if (task_cmd)
    rc = dlq::RunTaskResume(env, o.task_name, o.json);
  else if (o.verify->parsed())
    rc = dlq::RunVerify(env, q, seqs,
                        o.raft_index > 0 ? std::optional<uint64_t>(o.raft_index) : std::nullopt,
                        o.not_erased_on, o.json);
  else if (o.rebuild->parsed())
    rc = dlq::RunRebuild(env, q, o.replica, o.yes, o.json);
  else if (o.list->parsed())
    rc = dlq::RunList(env, q, *sel, o.json, o.summary);
  else if (o.replay->parsed() && !o.task_name.empty()) {
    dlq::TaskStart start;
    start.name = o.task_name;
    start.queue = q;
    start.spec = o.replay_sel.Spec();
    start.describe = sel->Describe();
    start.replay.rate = rate;
    start.replay.json = o.json;
    start.replay.to_subject = o.to_subject;
    start.allow_parallel = o.allow_parallel;
    rc = dlq::RunTaskStart(env, start);
  } else if (o.replay->parsed()) {
    dlq::ReplayOptions ro;
    ro.rate = rate;
    ro.json = o.json;
    ro.to_subject = o.to_subject;
    rc = dlq::RunReplay(env, q, *sel, ro);
  } else if (o.purge->parsed())
    rc = dlq::RunPurge(env, q, *sel, o.yes, o.json);
  else
    rc = erase::RunErase(env, request, o.json);
  std::cout.flush();
  return rc;
}

}  // namespace platformctl
