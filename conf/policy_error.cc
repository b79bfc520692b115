#include "conf/policy_error.h"

namespace twinlane::conf {

std::string PolicyError::to_string() const {
    std::string out = file;
    if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
    out += ": ";
    if (!key_path.empty()) out += key_path + ": ";
    out += reason;
    return out;
}

}  // namespace twinlane::conf
