// The command line of a service binary (replayer, metricswriter): --help and --version, nothing
// else, since a service takes its configuration from the environment. Both answer without
// reading the environment's values or connecting anywhere.
// Plain functions; call from main() before anything starts.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/config.h"

namespace common {

struct ServiceUsage {
  std::string name;         // the binary, e.g. "replayer"
  std::string description;  // what it does, one or two sentences
  // Reads every variable the service reads (from the reader given; its values are ignored):
  // --help lists them with their defaults.
  std::function<void(ConfigReader&)> read_config;
  std::string exit_codes;  // one sentence
};

// First thing in every binary's main(): the process can no longer dump core (RLIMIT_CORE 0,
// soft and hard) and is not "dumpable" (prctl PR_SET_DUMPABLE 0). Its memory holds the NATS and
// database passwords and the payloads it is handling; a core file (written into the container,
// or handed to the host's core_pattern handler) would carry them to wherever cores go. Not
// dumpable also keeps other processes of the same user from attaching (ptrace, gdb, perf) or
// reading /proc/<pid>/mem and /proc/<pid>/environ. False, with errno, when either call failed.
bool DisableCoreDumps();

// The part of a --help that lists the variables `read_config` reads, with their defaults, one a
// line (tests/integration/config_agree.py parses it).
std::string VariablesHelp(const std::function<void(ConfigReader&)>& read_config);

// nullopt: no argument, run the service. Otherwise the process's exit code: 0 after --help or
// --version (printed on stdout), 2 for anything else (the error on stderr).
std::optional<int> HandleServiceArguments(int argc, char** argv, const ServiceUsage& usage,
                                          const std::string& version);

}  // namespace common
