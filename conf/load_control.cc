// The control and metrics sections: where the daemon serves its control socket and its
// Prometheus endpoint (local by default).
#include <arpa/inet.h>

#include <array>
#include <string>

#include "conf/policy_loader.h"
#include "conf/policy_values.h"

namespace twinlane::conf {

void PolicyLoader::read_control(const Field& field) {
    const MapFields map(field, {"socket", "mode"}, errors_);
    if (auto f = map.get("socket")) {
        if (auto path = read_string(*f, errors_)) {
            if (path->front() != '/' || path->size() >= 108) {  // sun_path holds 108 bytes
                errors_.add(f->mark, f->path,
                            "the socket path must be absolute and shorter than 108 bytes");
            } else if (has_control_character(*path)) {
                errors_.add(f->mark, f->path, kControlCharacterReason);
            } else {
                policy_.control.socket_path = *path;
            }
        }
    }
    if (auto f = map.get("mode")) {
        // Octal as in chmod; YAML hands "0660" over as text, so there is no base confusion.
        const std::string text = f->node.IsScalar() ? f->node.Scalar() : "";
        const std::string digits = text.starts_with("0o") ? text.substr(2) : text;
        const bool octal = !digits.empty() && digits.size() <= 4 &&
                           digits.find_first_not_of("01234567") == std::string::npos;
        if (!octal) {
            errors_.add(f->mark, f->path, "expected an octal file mode such as 0660");
        } else {
            policy_.control.socket_mode = static_cast<uint32_t>(std::stoul(digits, nullptr, 8));
            if (policy_.control.socket_mode > 0777) {
                errors_.add(f->mark, f->path, "a socket mode is at most 0777");
            }
        }
    }
}

void PolicyLoader::read_metrics(const Field& field) {
    const MapFields map(field, {"enabled", "listen", "port"}, errors_);
    if (auto f = map.get("enabled"))
        policy_.metrics.enabled = read_bool(*f, errors_).value_or(true);
    if (auto f = map.get("listen")) {
        if (auto address = read_string(*f, errors_)) {
            std::array<uint8_t, 16> buffer{};
            if (has_control_character(*address)) {
                errors_.add(f->mark, f->path, kControlCharacterReason);
            } else if (inet_pton(AF_INET, address->c_str(), buffer.data()) != 1 &&
                       inet_pton(AF_INET6, address->c_str(), buffer.data()) != 1) {
                errors_.add(f->mark, f->path, "'" + *address + "' is not an IPv4 or IPv6 address");
            } else {
                policy_.metrics.listen_address = *address;
            }
        }
    }
    if (auto f = map.get("port")) {
        if (auto port = read_unsigned(*f, 1, 65535, errors_)) {
            policy_.metrics.port = static_cast<uint16_t>(*port);
        }
    }
}

}  // namespace twinlane::conf
