// The replayer service: configuration, NATS, /metrics and the engine wired together.
// Called from main() on the main thread; returns the process exit code.
#pragma once

namespace replayer {

int RunService();

}  // namespace replayer
