#include "control/protocol.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <exception>
#include <filesystem>
#include <system_error>
#include <vector>

namespace twinlane::control {
namespace {

using nlohmann::json;

// `args[key]` as a string of 1..max_bytes bytes, or an error message.
std::variant<std::string, std::string> string_arg(const json& args, const char* key,
                                                  size_t max_bytes) {
    const auto it = args.find(key);
    if (it == args.end())
        return std::variant<std::string, std::string>(
            std::in_place_index<1>, std::string("missing argument '") + key + "'");
    if (!it->is_string())
        return std::variant<std::string, std::string>(
            std::in_place_index<1>, std::string("argument '") + key + "' must be a string");
    const auto& text = it->get_ref<const std::string&>();
    if (text.empty() || text.size() > max_bytes) {
        return std::variant<std::string, std::string>(
            std::in_place_index<1>, std::string("argument '") + key + "' must be 1-" +
                                        std::to_string(max_bytes) + " bytes");
    }
    return std::variant<std::string, std::string>(std::in_place_index<0>, text);
}

std::string unknown_args(const json& args, std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : args.items()) {
        bool known = false;
        for (std::string_view name : allowed)
            known = known || key == name;
        if (!known) return "unknown argument '" + key.substr(0, 64) + "'";
    }
    return "";
}

// The groups `requester` is in: its primary group and, from the user database, the
// supplementary ones.
std::vector<gid_t> groups_of(const Requester& requester) {
    std::vector<gid_t> groups{requester.gid};
    std::array<char, 4096> buffer{};
    passwd entry{};
    passwd* found = nullptr;
    if (getpwuid_r(requester.uid, &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr)
        return groups;
    std::array<gid_t, 256> listed{};
    int count = static_cast<int>(listed.size());
    if (getgrouplist(found->pw_name, requester.gid, listed.data(), &count) >= 0)
        groups.assign(listed.begin(), listed.begin() + count);
    return groups;
}

// Whether the mode bits of `st` give `requester` the permission `user_bit` (S_IRUSR or
// S_IXUSR): as owner, else as a member of the file's group, else as anyone.
bool permits(const struct stat& st, const Requester& requester, const std::vector<gid_t>& groups,
             mode_t user_bit) {
    if (st.st_uid == requester.uid) return (st.st_mode & user_bit) != 0;
    const bool in_group = std::find(groups.begin(), groups.end(), st.st_gid) != groups.end();
    return (st.st_mode & (in_group ? user_bit >> 3 : user_bit >> 6)) != 0;
}

// Whether `requester` may read the file at `path` by permission bits (see dispatch()): search
// permission on every directory on the way, symlinks resolved, and read permission on the file.
bool readable_by(const std::string& path, const Requester& requester) {
    if (requester.uid == 0) return true;
    std::error_code error;
    // Symlinks resolved in the part that exists; a missing rest is kept as written.
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
    if (error) return false;
    const std::vector<gid_t> groups = groups_of(requester);
    struct stat st {};
    std::filesystem::path walked = resolved.root_path();
    for (const std::filesystem::path& part : resolved.relative_path().parent_path()) {
        if (stat(walked.c_str(), &st) != 0) return true;  // missing: the loader says so itself
        if (!permits(st, requester, groups, S_IXUSR)) return false;
        walked /= part;
    }
    if (stat(walked.c_str(), &st) != 0) return true;
    if (!permits(st, requester, groups, S_IXUSR)) return false;
    if (stat(resolved.c_str(), &st) != 0) return true;
    return permits(st, requester, groups, S_IRUSR);
}

ApiResult dispatch_checked(DaemonApi& api, const Request& request,
                           const std::optional<Requester>& requester) {
    const std::string& command = request.command;
    const json& args = request.args;
    auto only = [&](std::initializer_list<std::string_view> allowed) {
        return unknown_args(args, allowed);
    };
    // Each branch: reject unknown args, read the known ones, call the API.
    if (command == "status") {
        if (auto bad = only({}); !bad.empty()) return ApiResult::failure(bad);
        return api.status();
    }
    if (command == "stats") {
        if (auto bad = only({"scope"}); !bad.empty()) return ApiResult::failure(bad);
        std::string scope = "classes";
        if (args.contains("scope")) {
            auto value = string_arg(args, "scope", 16);
            if (value.index() == 1) return ApiResult::failure(std::get<1>(value));
            scope = std::get<0>(value);
        }
        if (scope == "ports") return api.stats(StatsScope::ports);
        if (scope == "classes") return api.stats(StatsScope::classes);
        if (scope == "queues") return api.stats(StatsScope::queues);
        return ApiResult::failure("scope must be ports, classes or queues");
    }
    if (command == "flows") {
        if (auto bad = only({"top"}); !bad.empty()) return ApiResult::failure(bad);
        size_t top = 10;
        if (args.contains("top")) {
            const json& value = args["top"];
            if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
                value.get<int64_t>() > static_cast<int64_t>(kMaxFlowsTop)) {
                return ApiResult::failure("top must be an integer 1-" +
                                          std::to_string(kMaxFlowsTop));
            }
            top = value.get<size_t>();
        }
        return api.flows_top(top);
    }
    if (command == "rules.list") {
        if (auto bad = only({}); !bad.empty()) return ApiResult::failure(bad);
        return api.rules_list();
    }
    if (command == "rules.add") {
        if (auto bad = only({"rule"}); !bad.empty()) return ApiResult::failure(bad);
        auto rule = string_arg(args, "rule", kMaxRequestBytes);
        if (rule.index() == 1) return ApiResult::failure(std::get<1>(rule));
        return api.rules_add(std::get<0>(rule));
    }
    if (command == "rules.delete") {
        if (auto bad = only({"name"}); !bad.empty()) return ApiResult::failure(bad);
        auto name = string_arg(args, "name", 256);
        if (name.index() == 1) return ApiResult::failure(std::get<1>(name));
        return api.rules_delete(std::get<0>(name));
    }
    if (command == "class.set") {
        if (auto bad = only({"class", "key", "value"}); !bad.empty()) {
            return ApiResult::failure(bad);
        }
        std::array<std::string, 3> values;
        const std::array<const char*, 3> keys{"class", "key", "value"};
        for (size_t i = 0; i < keys.size(); ++i) {
            auto value = string_arg(args, keys[i], 256);
            if (value.index() == 1) return ApiResult::failure(std::get<1>(value));
            values[i] = std::get<0>(value);
        }
        return api.class_set(values[0], values[1], values[2]);
    }
    if (command == "policy.load") {
        if (auto bad = only({"path"}); !bad.empty()) return ApiResult::failure(bad);
        auto path = string_arg(args, "path", 4096);
        if (path.index() == 1) return ApiResult::failure(std::get<1>(path));
        if (std::get<0>(path).front() != '/') {
            // The daemon's working directory is not the operator's: twinlanectl sends absolute
            // paths, and so must every other client.
            return ApiResult::failure("path must be absolute");
        }
        if (requester && !readable_by(std::get<0>(path), *requester)) {
            return ApiResult::failure(std::get<0>(path) +
                                      ": not readable by the requesting user (uid " +
                                      std::to_string(requester->uid) + ")");
        }
        return api.policy_load(std::get<0>(path));
    }
    if (command == "policy.show") {
        if (auto bad = only({}); !bad.empty()) return ApiResult::failure(bad);
        return api.policy_show();
    }
    if (command == "log.get") {
        if (auto bad = only({}); !bad.empty()) return ApiResult::failure(bad);
        return api.log_level();
    }
    if (command == "log.set") {
        if (auto bad = only({"level"}); !bad.empty()) return ApiResult::failure(bad);
        auto level = string_arg(args, "level", 16);
        if (level.index() == 1) return ApiResult::failure(std::get<1>(level));
        return api.set_log_level(std::get<0>(level));
    }
    return ApiResult::failure(
        "unknown command '" + command.substr(0, 64) +
        "' (status, stats, flows, rules.list, rules.add, rules.delete, class.set, policy.load, "
        "policy.show, log.get, log.set)");
}

}  // namespace

std::variant<Request, RequestError> parse_request(std::string_view line) {
    if (line.size() > kMaxRequestBytes) {
        return RequestError{nullptr,
                            "request line exceeds " + std::to_string(kMaxRequestBytes) + " bytes"};
    }
    json document = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) return RequestError{nullptr, "request is not valid JSON"};
    if (!document.is_object()) return RequestError{nullptr, "request must be a JSON object"};
    Request request;
    if (auto id = document.find("id"); id != document.end()) {
        if (!id->is_number_integer() && !id->is_null()) {
            return RequestError{nullptr, "id must be an integer"};
        }
        request.id = *id;
    }
    for (const auto& [key, value] : document.items()) {
        if (key != "version" && key != "id" && key != "command" && key != "args") {
            return RequestError{request.id, "unknown request field '" + key.substr(0, 64) + "'"};
        }
    }
    const auto version = document.find("version");
    if (version == document.end() || !version->is_number_integer() ||
        version->get<int64_t>() != kProtocolVersion) {
        return RequestError{request.id, "unsupported protocol version (this daemon speaks " +
                                            std::to_string(kProtocolVersion) + ")"};
    }
    const auto command = document.find("command");
    if (command == document.end() || !command->is_string()) {
        return RequestError{request.id, "command must be a string"};
    }
    request.command = command->get<std::string>();
    if (auto args = document.find("args"); args != document.end() && !args->is_null()) {
        if (!args->is_object()) return RequestError{request.id, "args must be an object"};
        request.args = *args;
    }
    return request;
}

ApiResult dispatch(DaemonApi& api, const Request& request,
                   const std::optional<Requester>& requester) {
    try {
        return dispatch_checked(api, request, requester);
    } catch (const std::exception& e) {
        // DaemonApi promises not to throw; this is a bug, reported instead of killing the server.
        return ApiResult::failure(std::string("internal error: ") + e.what());
    } catch (...) {
        return ApiResult::failure("internal error");
    }
}

bool is_change(std::string_view command) {
    return command == "rules.add" || command == "rules.delete" || command == "class.set" ||
           command == "policy.load" || command == "log.set";
}

std::string format_reply(const json& id, const ApiResult& result) {
    json reply = {{"version", kProtocolVersion}, {"id", id}, {"ok", result.ok()}};
    if (result.ok()) {
        reply["result"] = result.value();
    } else {
        reply["error"] = result.error();
        if (!result.details().empty()) reply["details"] = result.details();
    }
    // Replacement of invalid UTF-8 (e.g. from a file name) instead of throwing.
    return reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string format_error(const json& id, const std::string& message) {
    return format_reply(id, ApiResult::failure(message));
}

std::string format_request(int64_t id, std::string_view command, const json& args) {
    const json request = {
        {"version", kProtocolVersion}, {"id", id}, {"command", command}, {"args", args}};
    return request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace twinlane::control
