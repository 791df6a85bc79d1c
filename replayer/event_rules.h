// What Umami would store only in part, and what may not go into a request header: the checks
// Parse() makes before an event may be sent (docs/replayer.md, "Poison at once").
//
// Why: Umami 3.x writes the event row first and its data after; a data value its columns cannot
// hold makes it answer 500 after the row is stored, so every retry (and every replay) adds a row.
// Umami 2.10 writes the data rows first and the event row last, so a failing event row leaves
// orphan data rows. Such events are poison at once, and no send is made. The limits are Umami's
// schema (both versions): event_data.number_value numeric(19,4), string_value and data_key
// varchar(500), revenue.currency varchar(10); PostgreSQL text cannot hold a NUL character; a
// string that looks like a date to Umami but is no date makes its date conversion throw.
// Pure, no I/O; safe from any thread.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace replayer::rules {

inline constexpr size_t kMaxDataChars = 500;     // data_key, string_value: varchar(500)
inline constexpr double kMaxDataNumber = 1e15;   // numeric(19,4): 15 digits before the point
inline constexpr size_t kMaxCurrencyChars = 10;  // revenue.currency: varchar(10)
inline constexpr size_t kMaxTitleChars = 500;    // website_event.page_title: varchar(500)
inline constexpr size_t kMaxUserAgentBytes = 8192;
inline constexpr size_t kMaxIpBytes = 1024;

// Empty when Umami can store every value of the event's `data` object; else the poison reason,
// naming the field (as Umami flattens it: "a.b.c").
std::string CheckData(simdjson::dom::object data);

// Empty when `value` may be sent as the request header carrying the event's `field`; else the
// poison reason. A control character (other than a tab) is refused: one would end the header.
std::string CheckHeaderValue(std::string_view field, std::string_view value, size_t max_bytes);

// True for a dotted-quad IPv4 address as Umami 2.10's payload schema accepts it (0-255, no
// leading zeros). Umami 2.10 refuses a payload `ip` in any other form (IPv6 too) with a 400.
bool StrictIpv4(std::string_view ip);

// The first `max_chars` characters of UTF-8 text (whole characters), the rest cut.
std::string_view CutChars(std::string_view utf8, size_t max_chars);
// Characters (code points) in UTF-8 text; PostgreSQL's varchar(n) counts these.
size_t CountChars(std::string_view utf8);

// True when `s` has the shape Umami treats as a date (YYYY-MM-DDTHH:MM:SS[.mmm[Z|+HH:MM]]) but a
// JavaScript Date made from it is invalid, or PostgreSQL cannot store it (year 0).
bool BadDateLike(std::string_view s);

// Text from a message, made safe for a log line or a header: common::log::Escaped (printable
// ASCII kept, a backslash doubled, everything else as \xNN, at most `max` input bytes).
std::string Excerpt(std::string_view untrusted, size_t max = 64);

}  // namespace replayer::rules
