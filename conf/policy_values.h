// Readers for the policy's own value types, on top of the generic YAML readers of
// yaml_fields.h: names, number ranges, IP prefixes, protocols. Each reports a problem at the
// field (file:line:column, key path) and returns nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "conf/policy.h"
#include "conf/yaml_fields.h"

namespace twinlane::conf {

// Names appear in metrics and in generated node names: a letter, then letters, digits, '_' or
// '-'; at most 32.
bool is_identifier(std::string_view name);
std::optional<std::string> read_name(const Field& field, ErrorList& errors);

// has_control_character (conf/yaml_fields.h): paths and device arguments reach C APIs, where a
// NUL cuts them short (the daemon would use a different path than the one checked); other
// control characters are never meant.
inline constexpr const char* kControlCharacterReason =
    "must not contain control characters (NUL, newline, tab, ...)";

// Decimal, or hexadecimal with 0x (RoCE QP numbers are usually written in hex), at most `max`.
std::optional<uint64_t> parse_number(std::string_view text, uint64_t max);
// "8000", "8000-8001", "0x100-0x1ff" -> inclusive range within [0, max].
std::optional<ValueRange> read_range(const Field& field, uint32_t max, ErrorList& errors);
// "10.0.0.0/8", "fd00::/8", or an address (full length); host bits after the length refused.
std::optional<IpPrefix> read_prefix(const Field& field, ErrorList& errors);
// tcp, udp, icmp, icmpv6 or a number 0-255.
std::optional<uint8_t> read_protocol(const Field& field, ErrorList& errors);

}  // namespace twinlane::conf
