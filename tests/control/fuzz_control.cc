// libFuzzer harness over the control protocol: each input is a client's lines, each parsed and
// dispatched to a PolicyStore running the default policy, as the control server does. Checked:
// nothing throws or crashes, every line gets exactly one well-formed reply line that echoes the
// request's id, and the running policy stays one that loads and compiles (a change the store
// published passed the loader, so its document must load again). `policy.load` is answered
// without reading (the harness must not read arbitrary files of the machine it runs on).
// Built with -Dfuzz=true under clang; see tests/conf/run_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "conf/load_policy.h"
#include "conf/policy_document.h"
#include "control/policy_store.h"
#include "control/protocol.h"
#include "tests/fuzz_failure.h"

#ifndef TWINLANE_CONF_DIR
#error "TWINLANE_CONF_DIR must name the conf/ directory"
#endif

namespace {

using namespace twinlane;

using twinlane::testing::fuzz_failure;

std::unique_ptr<control::PolicyStore> fresh_store() {
    static const conf::PolicyResult policy =
        conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
    if (!policy.ok()) fuzz_failure("conf/default.yaml does not load", policy.errors[0].to_string());
    auto created = control::PolicyStore::create(policy.policy);
    if (!created.store) fuzz_failure("conf/default.yaml does not compile", created.errors[0]);
    return std::move(created.store);
}

// The reply to one line, checked for shape; returns it parsed.
nlohmann::json checked_reply(const std::string& reply, const std::string_view line) {
    if (reply.empty() || reply.back() != '\n' || reply.find('\n') != reply.size() - 1)
        fuzz_failure("a reply that is not one line", reply + "\nto: " + std::string(line));
    nlohmann::json parsed = nlohmann::json::parse(reply, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("ok") ||
        !parsed["ok"].is_boolean() || !parsed.contains("id"))
        fuzz_failure("a reply that is not the protocol's", reply + "to: " + std::string(line));
    if (!parsed["ok"].get<bool>() && (!parsed.contains("error") || !parsed["error"].is_string() ||
                                      parsed["error"].get<std::string>().empty()))
        fuzz_failure("a failure without its reason", reply + "to: " + std::string(line));
    return parsed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static std::unique_ptr<control::PolicyStore> store = fresh_store();
    // Accepted rules accumulate; start over before the policy grows past what real ones hold.
    if (store->epoch() > 64) store = fresh_store();

    std::string_view input(reinterpret_cast<const char*>(data), size);
    while (!input.empty()) {
        const size_t end = input.find('\n');
        const std::string_view line = input.substr(0, end);
        input = end == std::string_view::npos ? std::string_view{} : input.substr(end + 1);
        if (line.size() > control::kMaxRequestBytes) continue;  // the server refuses it unread

        std::string reply;
        auto parsed = control::parse_request(line);
        if (auto* error = std::get_if<control::RequestError>(&parsed)) {
            reply = control::format_error(error->id, error->message);
        } else {
            const auto& request = std::get<control::Request>(parsed);
            if (!request.id.is_null() && !request.id.is_number_integer())
                fuzz_failure("a request id that is not an integer or null", std::string(line));
            const control::ApiResult result =
                request.command == "policy.load"
                    ? control::ApiResult::failure("not read by the fuzzer")
                    : control::dispatch(*store, request);
            reply = control::format_reply(request.id, result);
            const nlohmann::json answer = checked_reply(reply, line);
            if (answer["id"] != request.id)
                fuzz_failure("the reply's id is not the request's", reply);
        }
        checked_reply(reply, line);
    }

    const auto running = store->current();
    const std::string text = conf::render_yaml(conf::policy_document(*running->policy));
    const conf::PolicyResult again = conf::parse_policy(text, "running.yaml");
    if (!again.ok())
        fuzz_failure("the running policy's document does not load",
                     again.errors[0].to_string() + "\n" + text);
    return 0;
}
