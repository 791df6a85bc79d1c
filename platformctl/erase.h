// `platformctl erase`: securely erases the DLQ messages of a site, a visitor or a tenant
// (erase_match.h says which) and reports how many.
//
// Runs on the calling thread; the NatsClient and StopFlag in the RunEnv are borrowed. Payloads
// are read to match a visitor and never printed or logged.
#pragma once

#include "platformctl/dlq/run.h"
#include "platformctl/erase_match.h"

namespace platformctl::erase {

int RunErase(dlq::RunEnv& env, const Request& request, bool json);

}  // namespace platformctl::erase
