// The replayer service: configuration, NATS, /metrics and the engine wired together.
// Called from main() on the main thread with its arguments (--help, --version) and the build's
// version; returns the process exit code.
#pragma once

#include <string>

namespace replayer {

int RunService(int argc, char** argv, const std::string& version);

}  // namespace replayer
