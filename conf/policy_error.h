// One problem found in a policy file, located for the author: file, 1-based line and column
// (0 when the problem has no single place, e.g. a missing section), the key path in the
// document ("scheduler.children[1].weight") and a reason in plain words.
// Printed as "file:line:col: key.path: reason", the format compilers use, so editors can jump
// to it.
#pragma once

#include <string>

namespace twinlane::conf {

struct PolicyError {
    std::string file;
    int line = 0;    // 1-based; 0 = unknown
    int column = 0;  // 1-based; 0 = unknown
    std::string key_path;
    std::string reason;

    std::string to_string() const;
};

}  // namespace twinlane::conf
