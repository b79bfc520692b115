// For the libFuzzer harnesses: a broken property is reported with what broke and the detail
// to reproduce it, then abort() (libFuzzer saves the input). Test-only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace twinlane::testing {

[[noreturn]] inline void fuzz_failure(const char* what, const std::string& detail) {
    std::fprintf(stderr, "fuzz: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace twinlane::testing
