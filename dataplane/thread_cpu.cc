#include "dataplane/thread_cpu.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace twinlane::dataplane {
namespace {

// The unsigned decimal at the front of `text` after any blanks; advances `text` past it.
std::optional<uint64_t> take_number(std::string_view& text) {
    const size_t start = text.find_first_not_of(" \t");
    if (start == std::string_view::npos) return std::nullopt;
    text.remove_prefix(start);
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    text.remove_prefix(static_cast<size_t>(end - text.data()));
    return value;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

std::optional<ThreadCpu> parse_thread_cpu(std::string_view schedstat, std::string_view status) {
    ThreadCpu cpu;
    const std::optional<uint64_t> run = take_number(schedstat);
    const std::optional<uint64_t> wait = take_number(schedstat);
    if (!run || !wait) return std::nullopt;
    cpu.run_ns = *run;
    cpu.runqueue_wait_ns = *wait;
    static constexpr std::string_view kKey = "\nnonvoluntary_ctxt_switches:";
    const size_t at = status.find(kKey);
    if (at == std::string_view::npos) return std::nullopt;
    status.remove_prefix(at + kKey.size());
    const std::optional<uint64_t> switches = take_number(status);
    if (!switches) return std::nullopt;
    cpu.involuntary_switches = *switches;
    return cpu;
}

std::optional<ThreadCpu> read_thread_cpu(pid_t tid) {
    const std::string task = "/proc/self/task/" + std::to_string(tid) + "/";
    // status starts with "Name:", so the key's leading newline always has a line before it.
    return parse_thread_cpu(read_text(task + "schedstat"), read_text(task + "status"));
}

void publish_loop_thread(LoopThread& thread) {
    const pid_t tid = gettid();
    if (const std::optional<ThreadCpu> now = read_thread_cpu(tid)) {
        thread.run_ns_at_start.set(now->run_ns);
        thread.runqueue_wait_ns_at_start.set(now->runqueue_wait_ns);
        thread.involuntary_at_start.set(now->involuntary_switches);
    }
    // The baseline before the id: a reader that sees the id sees the baseline.
    std::atomic_thread_fence(std::memory_order_release);
    thread.tid.set(static_cast<uint64_t>(tid));
}

std::optional<ThreadCpu> loop_thread_cpu(const LoopThread& thread) {
    const uint64_t tid = thread.tid.read();
    if (tid == 0) return std::nullopt;
    std::atomic_thread_fence(std::memory_order_acquire);
    const std::optional<ThreadCpu> now = read_thread_cpu(static_cast<pid_t>(tid));
    if (!now) return std::nullopt;
    // A baseline of 0 (the first read failed) reports the thread's whole life: still an upper
    // bound of what the loop lost.
    return ThreadCpu{now->run_ns - thread.run_ns_at_start.read(),
                     now->runqueue_wait_ns - thread.runqueue_wait_ns_at_start.read(),
                     now->involuntary_switches - thread.involuntary_at_start.read()};
}

void add_thread_cpu(nlohmann::json& lcore, const ThreadCpu& cpu) {
    lcore["run_ns"] = cpu.run_ns;
    lcore["runqueue_wait_ns"] = cpu.runqueue_wait_ns;
    lcore["involuntary_switches"] = cpu.involuntary_switches;
}

}  // namespace twinlane::dataplane
