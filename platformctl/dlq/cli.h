// The `dlq` (list, replay, purge) and `erase` subcommands of platformctl: their options, help
// and exit codes, and the dispatch to dlq_run / erase.
//
// Construct on the main thread before parsing, Run() after a successful parse, from main()
// before any other thread exists (it installs the SIGINT/SIGTERM handling, common::StopSignal).
#pragma once

#include <memory>

#include "common/config.h"

namespace CLI {
class App;
}

namespace platformctl {

class DlqCommands {
 public:
  explicit DlqCommands(CLI::App& app);  // adds the subcommands to app
  ~DlqCommands();
  DlqCommands(const DlqCommands&) = delete;
  DlqCommands& operator=(const DlqCommands&) = delete;

  // One of our subcommands was given on the command line.
  bool Chosen() const;
  // Runs it; returns the exit code (0 done, 1 partly done, 2 usage, 3 no NATS, 4 purge not
  // confirmed).
  int Run(const common::CommonConfig& common);

 private:
  struct Options;
  std::unique_ptr<Options> o_;
};

}  // namespace platformctl
