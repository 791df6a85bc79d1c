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

// nullopt: no argument, run the service. Otherwise the process's exit code: 0 after --help or
// --version (printed on stdout), 2 for anything else (the error on stderr).
std::optional<int> HandleServiceArguments(int argc, char** argv, const ServiceUsage& usage,
                                          const std::string& version);

}  // namespace common
