// The control protocol: newline-delimited JSON over a Unix stream socket, one request per line,
// one reply per request, in order (requests may be pipelined).
//
//   request  {"version": 1, "id": 7, "command": "stats", "args": {"scope": "classes"}}
//   success  {"version": 1, "id": 7, "ok": true, "result": ...}
//   failure  {"version": 1, "id": 7, "ok": false, "error": "...", "details": ["..."]}
//
// `id` is an integer chosen by the client and echoed back (null when the request had none or
// could not be read). Commands and their args (all validated here; anything else is an error):
//   status | stats {scope: ports|classes|queues} | flows {top: 1..10000} | rules.list |
//   rules.add {rule: "YAML/JSON text"} | rules.delete {name} | class.set {class, key, value} |
//   policy.load {path} | policy.show | log.get | log.set {level}
// A line is at most kMaxRequestBytes (newline excluded). A connection idle for kClientIdleTimeout
// is closed; one over the server's client limit gets one error reply (id null) and is closed.
// Pure functions, thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "control/daemon_api.h"

namespace twinlane::control {

inline constexpr int kProtocolVersion = 1;
// The server closes a connection that has had no complete request (and taken no reply bytes)
// for this long, so idle clients cannot hold the client slots forever.
inline constexpr std::chrono::seconds kClientIdleTimeout{60};
inline constexpr size_t kMaxRequestBytes = 64 * 1024;
inline constexpr size_t kMaxFlowsTop = 10'000;

struct Request {
    nlohmann::json id;  // integer or null
    std::string command;
    nlohmann::json args = nlohmann::json::object();
};

struct RequestError {
    nlohmann::json id;  // echoed when it could be read, else null
    std::string message;
};

// Reads one request line (without its newline).
std::variant<Request, RequestError> parse_request(std::string_view line);

// Who sent a request, from the socket's peer credentials (SO_PEERCRED).
struct Requester {
    uint32_t uid = 0;
    uint32_t gid = 0;
};

// Validates `request.args` for its command and calls `api`. Unknown commands and bad args are
// failures; the API's own failures pass through. With a `requester`, policy.load reads only a
// file that user may read itself (search permission on each directory on the way, symlinks
// resolved, and read permission on the file, as owner, group incl. supplementary groups, or
// other; root reads anything): the daemon's own rights do not extend to its clients, and a
// policy error quotes the file's text. Never throws.
ApiResult dispatch(DaemonApi& api, const Request& request,
                   const std::optional<Requester>& requester = std::nullopt);
// True for commands that change the daemon (logged as applied/rejected).
bool is_change(std::string_view command);

// One reply line, newline included.
std::string format_reply(const nlohmann::json& id, const ApiResult& result);
std::string format_error(const nlohmann::json& id, const std::string& message);

// A request line, newline included (used by clients).
std::string format_request(int64_t id, std::string_view command, const nlohmann::json& args);

}  // namespace twinlane::control
