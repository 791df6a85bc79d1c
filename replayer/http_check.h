// What a request must be before any client writes it: the one rule both HTTP clients apply.
//
// A header value comes from an event (user agent, forwarded address, cache token). A CR or LF in
// it would end the header line and let the event write headers, or a whole second request, of
// its own; other control characters are refused by servers or altered by proxies. So a request
// whose URL, header name or header value is not what RFC 9110 allows is never sent, and never
// silently altered: it fails with status 0 and an error that says why.
//
// Pure: no I/O. Thread-safe (no state).
#pragma once

#include <string_view>

#include "common/result.h"
#include "replayer/http_pool.h"

namespace replayer {

// A field value: visible ASCII, space, horizontal tab and bytes >= 0x80 (obs-text); no C0
// control other than HTAB, no DEL.
bool IsValidHeaderValue(std::string_view value);
// A field name: a non-empty token (RFC 9110 §5.1).
bool IsValidHeaderName(std::string_view name);
// kInvalid naming the first offending header (by name, never echoing the value) or the URL.
common::Status CheckRequest(const HttpRequest& request);

}  // namespace replayer
