// Helpers for policy tests: find an error by key path and describe results in failures.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "conf/load_policy.h"
#include "conf/policy.h"

namespace twinlane::conf::testing {

inline std::string describe(const PolicyResult& result) {
    std::string text;
    for (const PolicyError& error : result.errors)
        text += "  " + error.to_string() + "\n";
    return text.empty() ? "  (no errors)\n" : text;
}

inline const PolicyError* find_error(const PolicyResult& result, std::string_view key_path) {
    for (const PolicyError& error : result.errors) {
        if (error.key_path == key_path) return &error;
    }
    return nullptr;
}

// The policy is rejected with an error at `key_path`, `line`:`column`, whose reason contains
// `reason_part`.
inline void expect_error(const PolicyResult& result, std::string_view key_path, int line,
                         int column, std::string_view reason_part) {
    EXPECT_FALSE(result.ok());
    EXPECT_EQ(result.policy, nullptr);
    const PolicyError* error = find_error(result, key_path);
    ASSERT_NE(error, nullptr) << "no error at '" << key_path << "'; got:\n" << describe(result);
    EXPECT_EQ(error->line, line) << error->to_string();
    EXPECT_EQ(error->column, column) << error->to_string();
    EXPECT_NE(error->reason.find(reason_part), std::string::npos)
        << "reason '" << error->reason << "' lacks '" << reason_part << "'";
}

inline PolicyResult parse(const std::string& text) {
    return parse_policy(text, "test.yaml");
}

// A valid policy: two 10G null ports in a bump-in-the-wire (lines 1-6), two classes and a
// strict tree (lines 7-12). Tests append sections from line 13 on.
inline constexpr std::string_view kBase =
    "ports:\n"                                       // 1
    "  - {name: a, device: net_null0, rate: 10G}\n"  // 2
    "  - {name: b, device: net_null1, rate: 10G}\n"  // 3
    "forwarding:\n"                                  // 4
    "  - {from: a, to: b}\n"                         // 5
    "classes: [gold, bulk]\n"                        // 6
    "scheduler:\n"                                   // 7
    "  name: root\n"                                 // 8
    "  kind: strict\n"                               // 9
    "  children:\n"                                  // 10
    "    - {name: g, kind: fifo, class: gold}\n"     // 11
    "    - {name: k, kind: fifo, class: bulk}\n";    // 12

// kBase without the scheduler (lines 1-6), for tests that write their own tree from line 7.
inline constexpr std::string_view kBaseNoTree =
    "ports:\n"                                       // 1
    "  - {name: a, device: net_null0, rate: 10G}\n"  // 2
    "  - {name: b, device: net_null1, rate: 10G}\n"  // 3
    "forwarding:\n"                                  // 4
    "  - {from: a, to: b}\n"                         // 5
    "classes: [gold, bulk]\n";                       // 6

}  // namespace twinlane::conf::testing
