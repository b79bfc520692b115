#include "conf/load_policy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "conf/policy_loader.h"

namespace twinlane::conf {
namespace {

// Why `path` cannot be read, with the system's reason; a link to nothing says where it points.
std::string cannot_read(const std::string& path, int error) {
    if (error == ENOENT) {
        struct stat link {};
        std::array<char, 4096> target{};
        if (lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
            const ssize_t n = readlink(path.c_str(), target.data(), target.size() - 1);
            return "a symbolic link to '" + std::string(target.data(), n > 0 ? n : 0) +
                   "', which does not exist (dangling link)";
        }
    }
    return std::string("cannot read the file: ") + std::strerror(error);
}

}  // namespace

PolicyResult PolicyLoader::load(std::string_view text) {
    YAML::Node document;
    try {
        const std::string yaml(text);
        // Before any node is built or walked: nested aliases expand exponentially.
        const YamlExtent extent = measure_yaml(yaml, kMaxPolicyNodes);
        if (extent.too_deep) {
            errors_.add(extent.too_deep_at, "",
                        "the document nests collections deeper than " +
                            std::to_string(kMaxYamlDepth) + " levels");
            return PolicyResult{nullptr, errors_.take()};
        }
        if (extent.too_many_nodes) {
            errors_.add(extent.overflow, "",
                        "the document expands to more than " + std::to_string(kMaxPolicyNodes) +
                            " nodes (YAML aliases?)");
            return PolicyResult{nullptr, errors_.take()};
        }
        if (extent.more_documents) {
            errors_.add(extent.second_document, "",
                        "a second YAML document; a policy file holds one YAML document");
        }
        if (extent.not_utf8) {
            errors_.add(extent.not_utf8_at, "", "not UTF-8 text (a policy file is UTF-8)");
            return PolicyResult{nullptr, errors_.take()};
        }
        document = YAML::Load(yaml);
    } catch (const YAML::ParserException& e) {
        errors_.add(e.mark, "", "YAML syntax: " + e.msg);
        return PolicyResult{nullptr, errors_.take()};
    }
    if (!document.IsMap()) {
        errors_.add(document.IsDefined() ? document.Mark() : YAML::Mark::null_mark(), "",
                    "the policy must be a YAML mapping of sections (ports, classes, ...)");
        return PolicyResult{nullptr, errors_.take()};
    }
    read_document(Field{document, document.Mark(), ""});

    const size_t unlisted = errors_.unlisted();
    std::vector<PolicyError> errors = errors_.take();
    if (!errors.empty()) {
        // Report in file order: that is how the author reads and fixes them.
        std::stable_sort(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
            return std::tie(a.line, a.column) < std::tie(b.line, b.column);
        });
        if (unlisted != 0) {
            errors.push_back(PolicyError{
                .file = errors.front().file,
                .line = 0,
                .column = 0,
                .key_path = "",
                .reason = "and " + std::to_string(unlisted) + " more errors, not listed"});
        }
        return PolicyResult{nullptr, std::move(errors)};
    }
    return PolicyResult{std::make_shared<const Policy>(std::move(policy_)), {}};
}

void PolicyLoader::read_document(const Field& root) {
    const MapFields map(root,
                        {"version", "log_level", "ports", "forwarding", "lcores", "classes",
                         "scheduler", "classifier", "control", "metrics", "pfc"},
                        errors_);
    if (auto version = map.get("version")) read_unsigned(*version, 1, 1, errors_);
    if (auto level = map.get("log_level")) {
        if (auto index = read_choice(
                *level, {"trace", "debug", "info", "warn", "error", "critical", "off"}, errors_)) {
            policy_.log_level = static_cast<LogLevel>(*index);
        }
    }
    // Order matters: ports and classes first, everything else refers to them by name.
    if (auto ports = map.require("ports")) read_ports(*ports);
    if (auto classes = map.require("classes")) read_classes(*classes);
    if (auto forwarding = map.require("forwarding")) read_forwarding(*forwarding);

    std::vector<std::optional<Field>> port_trees;
    if (auto ports = map.get("ports"); ports && ports->node.IsSequence()) {
        for (size_t i = 0; i < ports->node.size(); ++i) {
            // const: a non-const operator[] would insert the key it looks up.
            const YAML::Node& port = ports->node[i];
            std::optional<Field> tree;
            if (port.IsMap() && port["scheduler"]) {
                const YAML::Node node = port["scheduler"];
                tree =
                    Field{node, node.Mark(), ports->path + "[" + std::to_string(i) + "].scheduler"};
            }
            port_trees.push_back(tree);
        }
    }
    build_egress_trees(map.get("scheduler"), port_trees);
    resolve_slos();
    resolve_mempools();

    if (auto lcores = map.get("lcores")) read_lcores(*lcores);
    if (auto classifier = map.get("classifier")) {
        read_classifier(*classifier);
    } else if (!policy_.classes.empty()) {
        policy_.classifier.heuristics.default_class = policy_.classes.size() - 1;
    }
    if (auto control = map.get("control")) read_control(*control);
    if (auto metrics = map.get("metrics")) read_metrics(*metrics);
    if (auto pfc = map.get("pfc")) read_pfc(*pfc);
    lossless_anchor_ = root;
    check_lossless();
}

std::optional<size_t> PolicyLoader::lookup_port(const Field& field) {
    auto name = read_string(field, errors_);
    if (!name) return std::nullopt;
    const auto found = std::find(port_names_.begin(), port_names_.end(), *name);
    if (found != port_names_.end()) return static_cast<size_t>(found - port_names_.begin());
    std::string reason = "unknown port '" + *name + "'";
    const std::string suggestion =
        closest_name(*name, std::vector<std::string_view>(port_names_.begin(), port_names_.end()));
    if (!suggestion.empty()) reason += " (did you mean '" + suggestion + "'?)";
    errors_.add(field.mark, field.path, reason);
    return std::nullopt;
}

std::optional<size_t> PolicyLoader::lookup_class(const Field& field) {
    auto name = read_string(field, errors_);
    if (!name) return std::nullopt;
    const auto found = std::find(class_names_.begin(), class_names_.end(), *name);
    if (found != class_names_.end()) return static_cast<size_t>(found - class_names_.begin());
    std::string reason = "unknown class '" + *name + "'";
    const std::string suggestion = closest_name(
        *name, std::vector<std::string_view>(class_names_.begin(), class_names_.end()));
    if (!suggestion.empty()) reason += " (did you mean '" + suggestion + "'?)";
    errors_.add(field.mark, field.path, reason);
    return std::nullopt;
}

PolicyResult parse_policy(std::string_view text, const std::string& filename,
                          const PortRateOverride& override) {
    return PolicyLoader(filename, override).load(text);
}

PolicyResult load_policy(const std::string& path, const PortRateOverride& override) {
    auto refuse = [&](std::string reason) {
        return PolicyResult{nullptr,
                            {PolicyError{.file = path,
                                         .line = 0,
                                         .column = 0,
                                         .key_path = "",
                                         .reason = std::move(reason)}}};
    };
    const std::string not_regular =
        "not a regular file (FIFOs, devices and directories are refused)";
    const std::string too_large = "larger than " + std::to_string(kMaxPolicyFileBytes >> 20) +
                                  " MiB, the most a policy file may hold";
    // stat first, so a FIFO or device is never opened (opening one can block or have effects).
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) return refuse(cannot_read(path, errno));
    if (!S_ISREG(info.st_mode)) return refuse(not_regular);
    if (static_cast<uint64_t>(info.st_size) > kMaxPolicyFileBytes) return refuse(too_large);
    // Non-blocking and checked again: the path may have been swapped for a FIFO meanwhile.
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return refuse(cannot_read(path, errno));
    std::string text;
    bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
    bool read_ok = regular;
    int read_error = 0;
    // Read at most one byte past the bound: a file growing while read is still refused.
    char buffer[64 * 1024];
    while (read_ok && text.size() <= kMaxPolicyFileBytes) {
        const ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            read_ok = false;
            read_error = errno;
        }
        if (got <= 0) break;
        text.append(buffer, static_cast<size_t>(got));
    }
    close(fd);
    if (!regular) return refuse(not_regular);
    if (!read_ok) return refuse(cannot_read(path, read_error));
    if (text.size() > kMaxPolicyFileBytes) return refuse(too_large);
    return parse_policy(text, path, override);
}

}  // namespace twinlane::conf
