// PolicyStore: owns the running policy and publishes new versions of it; the complete DaemonApi
// for everything that is policy rather than traffic (offline use, tests, and the base the
// realtime daemon wraps with live counters).
//
// Every change (rules add/delete, class set, policy load) edits a copy of the running policy's
// document (conf/policy_document.h), re-parses and re-compiles it, and publishes the result
// only if both succeed: a rejected change leaves the running version untouched and returns
// every problem found. Published versions are immutable; readers take a shared_ptr snapshot
// (current()) and keep it as long as they need. A subclass may gate publishing with
// before_publish(): the realtime daemon (dataplane/daemon_control.h) hands the candidate to
// its lcores there and refuses it if they cannot take it.
//
// Statistics report the policy's topology with zero counters (there is no traffic here); the
// daemon overrides stats()/flows_top()/status() and builds them with control/stats_json.h.
//
// Every change request is counted by kind and outcome (status(): "policy_changes", and
// "policy_last_load_ok" for policy loads, the reload path), so a refused reload can be alerted
// on from the metrics.
//
// Thread-safety: all methods may be called concurrently. Changes are serialised by a mutex
// (held while parsing and compiling, never by readers); current()/epoch() are lock-free for
// readers in the sense that they never wait on a change being compiled.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "conf/compile.h"
#include "conf/policy.h"
#include "control/daemon_api.h"

namespace twinlane::control {

struct PolicyVersion {
    std::shared_ptr<const conf::Policy> policy;
    std::shared_ptr<const conf::CompiledPolicy> compiled;
    uint64_t epoch = 0;  // 1 for the first version, +1 per published change
};

class PolicyStore : public DaemonApi {
  public:
    struct CreateResult {
        std::unique_ptr<PolicyStore> store;  // null on error
        std::vector<std::string> errors;
    };
    // `policy` must be validated (load_policy); it is compiled here. `dpdk_port_ids` as in
    // compile_policy().
    static CreateResult create(std::shared_ptr<const conf::Policy> policy,
                               std::vector<uint16_t> dpdk_port_ids = {});

    std::shared_ptr<const PolicyVersion> current() const { return current_.load(); }
    uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

    ApiResult status() override;
    ApiResult stats(StatsScope scope) override;
    ApiResult flows_top(size_t count) override;
    ApiResult rules_list() override;
    ApiResult rules_add(std::string_view rule_text) override;
    ApiResult rules_delete(std::string_view rule_name) override;
    ApiResult class_set(std::string_view class_name, std::string_view key,
                        std::string_view value) override;
    ApiResult policy_load(const std::string& path) override;
    ApiResult policy_show() override;
    ApiResult log_level() override;
    ApiResult set_log_level(std::string_view level) override;

  protected:
    explicit PolicyStore(std::vector<uint16_t> dpdk_port_ids);
    std::chrono::steady_clock::time_point started() const { return started_; }
    const std::vector<uint16_t>& dpdk_port_ids() const { return dpdk_port_ids_; }

    // For a subclass's factory: compiles and publishes the first version (the hook below is
    // not called for it). Success or the compile errors, as create() reports them.
    ApiResult install_first(std::shared_ptr<const conf::Policy> policy) {
        return install(std::move(policy));
    }

    // Called for every change after `candidate` has parsed and compiled and before it is
    // published, with the change mutex held (changes are serialised; readers are not
    // blocked). A daemon applies the candidate to its lcores here. Returning a failure refuses
    // the change: nothing is published and the failure is the caller's reply.
    virtual std::optional<ApiResult> before_publish(const PolicyVersion& running,
                                                    const PolicyVersion& candidate) {
        (void)running;
        (void)candidate;
        return std::nullopt;
    }

  private:
    // The change commands, in status() "policy_changes" order.
    enum class Change : size_t { load, rules_add, rules_delete, class_set, count };
    // Counts `result` as an applied or refused change of `kind`; returns it unchanged.
    ApiResult counted(Change kind, ApiResult result);
    ApiResult load_file(const std::string& path);
    ApiResult add_rule(std::string_view rule_text);
    ApiResult delete_rule(std::string_view rule_name);
    ApiResult set_class(std::string_view class_name, std::string_view key, std::string_view value);

    // Compiles and publishes; returns the error result, or success with the new epoch.
    ApiResult install(std::shared_ptr<const conf::Policy> policy);
    // Re-parses an edited document as a change of the running policy (keeps its source name).
    ApiResult install_document(const nlohmann::json& document, const std::string& source);

    const std::vector<uint16_t> dpdk_port_ids_;
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::mutex change_mutex_;
    std::atomic<std::shared_ptr<const PolicyVersion>> current_;
    std::atomic<uint64_t> epoch_{0};
    // [kind][0: applied, 1: refused]
    std::array<std::array<std::atomic<uint64_t>, 2>, static_cast<size_t>(Change::count)> changes_{};
    std::atomic<bool> last_load_ok_{true};  // the first policy was loaded, or create() failed
};

}  // namespace twinlane::control
