// platformctl's command line: parses arguments, reads the shared configuration and runs one
// command. Exit codes (also in --help and docs/contract.md §8): 0 done, 1 partly done or a
// conflict, 2 usage or configuration error, 3 cannot reach NATS.
#pragma once

#include <string>

namespace platformctl {

enum ExitCode { kExitOk = 0, kExitPartial = 1, kExitUsage = 2, kExitNoNats = 3 };

// version: the build's (common::Version()), for --version.
int Main(int argc, char** argv, const std::string& version);

}  // namespace platformctl
