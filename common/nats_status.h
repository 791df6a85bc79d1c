// nats.c status → Error. Included only by adapter files (it needs nats.h).
#pragma once

#include <nats/nats.h>

#include <string>

#include "common/result.h"

namespace common {

// what: the operation, for the message ("stream info WEB_EVENTS"). jerr: JetStream's error code,
// kept as the error's code (callers branch on it, not on the message).
Error NatsError(natsStatus s, const std::string& what, jsErrCode jerr = static_cast<jsErrCode>(0));

}  // namespace common
