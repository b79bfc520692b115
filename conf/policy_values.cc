#include "conf/policy_values.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace twinlane::conf {

bool is_identifier(std::string_view name) {
    if (name.empty() || name.size() > 32) return false;
    if (!std::isalpha(static_cast<unsigned char>(name.front()))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
}

std::optional<std::string> read_name(const Field& field, ErrorList& errors) {
    auto name = read_string(field, errors);
    if (name && !is_identifier(*name)) {
        errors.add(field.mark, field.path,
                   "'" + *name +
                       "' is not a valid name (a letter, then letters, digits, '_' or '-'; at "
                       "most 32)");
        return std::nullopt;
    }
    return name;
}

std::optional<uint64_t> parse_number(std::string_view text, uint64_t max) {
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        if (text.empty() || text.size() > 8) return std::nullopt;
        uint64_t value = 0;
        for (char c : text) {
            if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
            value = value * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                                           ? c - '0'
                                                           : std::tolower(c) - 'a' + 10);
        }
        if (value > max) return std::nullopt;
        return value;
    }
    auto parsed = parse_unsigned(text, max);
    if (!parsed) return std::nullopt;
    return *parsed;
}

std::optional<ValueRange> read_range(const Field& field, uint32_t max, ErrorList& errors) {
    if (!field.node.IsScalar()) {
        errors.add(field.mark, field.path, "expected a number or a range such as 8000-8001");
        return std::nullopt;
    }
    const std::string& text = field.node.Scalar();
    const size_t dash = text.find('-', 1);
    const std::string first_text = text.substr(0, dash);
    const std::string last_text = dash == std::string::npos ? first_text : text.substr(dash + 1);
    auto first = parse_number(first_text, max);
    auto last = parse_number(last_text, max);
    if (!first || !last) {
        errors.add(field.mark, field.path,
                   "'" + text + "' is not a number or range within 0-" + std::to_string(max));
        return std::nullopt;
    }
    if (*first > *last) {
        errors.add(field.mark, field.path, "range '" + text + "' ends before it starts");
        return std::nullopt;
    }
    return ValueRange{static_cast<uint32_t>(*first), static_cast<uint32_t>(*last)};
}

std::optional<IpPrefix> read_prefix(const Field& field, ErrorList& errors) {
    auto text = read_string(field, errors);
    if (!text) return std::nullopt;
    const size_t slash = text->find('/');
    const std::string address_text = text->substr(0, slash);
    IpPrefix prefix;
    uint32_t max_length = 0;
    if (inet_pton(AF_INET, address_text.c_str(), prefix.address.data()) == 1) {
        prefix.version = 4;
        max_length = 32;
    } else if (inet_pton(AF_INET6, address_text.c_str(), prefix.address.data()) == 1) {
        prefix.version = 6;
        max_length = 128;
    } else {
        errors.add(
            field.mark, field.path,
            "'" + *text + "' is not an IPv4 or IPv6 address or prefix (10.0.0.0/8, fd00::/8)");
        return std::nullopt;
    }
    prefix.length = static_cast<uint8_t>(max_length);
    if (slash != std::string::npos) {
        auto length = parse_unsigned(text->substr(slash + 1), max_length);
        if (!length) {
            errors.add(field.mark, field.path,
                       "prefix length in '" + *text + "' must be 0-" + std::to_string(max_length));
            return std::nullopt;
        }
        prefix.length = static_cast<uint8_t>(*length);
    }
    // Host bits set usually means a typo in the length: say so rather than silently masking.
    for (uint32_t bit = prefix.length; bit < max_length; ++bit) {
        if (prefix.address[bit / 8] & (0x80 >> (bit % 8))) {
            errors.add(field.mark, field.path,
                       "'" + *text + "' has bits set after the prefix length " +
                           std::to_string(prefix.length));
            return std::nullopt;
        }
    }
    return prefix;
}

std::optional<uint8_t> read_protocol(const Field& field, ErrorList& errors) {
    if (!field.node.IsScalar()) {
        errors.add(field.mark, field.path, "expected tcp, udp, icmp, icmpv6 or a number 0-255");
        return std::nullopt;
    }
    static const std::map<std::string, uint8_t> kNames{
        {"tcp", 6}, {"udp", 17}, {"icmp", 1}, {"icmpv6", 58}};
    const auto named = kNames.find(field.node.Scalar());
    if (named != kNames.end()) return named->second;
    if (auto number = parse_unsigned(field.node.Scalar(), 255))
        return static_cast<uint8_t>(*number);
    errors.add(field.mark, field.path,
               "'" + field.node.Scalar() + "' is not tcp, udp, icmp, icmpv6 or a number 0-255");
    return std::nullopt;
}

}  // namespace twinlane::conf
