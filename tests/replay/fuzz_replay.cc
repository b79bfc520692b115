// libFuzzer harness over replay: any bytes as a capture file (classic pcap of any link type,
// pcapng), replayed in virtual time through the classifier and twinlane's scheduler as
// `twinlane replay` does. Checked: a file PcapReader cannot read is a PcapError, never a crash;
// every record is accounted for (rx = tx + dropped + queued at the end); the report, with the
// SLO governor's part, is written as JSON. The first byte picks the policy (the default one, or
// conf/inference-slo.yaml with its SLO controller acting) and whether records arrive over a
// 25G ingress link; the rest is the file.
// Built with -Dfuzz=true under clang; see tests/run_fuzz.sh.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "replay/pcap_io.h"
#include "tests/replay/checked_replay.h"

#ifndef TWINLANE_CONF_DIR
#error "TWINLANE_CONF_DIR must name the conf/ directory"
#endif

namespace {

using namespace twinlane;

using twinlane::testing::fuzz_failure;

conf::CompiledPolicy compiled(const char* file) {
    const conf::PolicyResult loaded =
        conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/" + file);
    if (!loaded.ok()) fuzz_failure("an example policy does not load", loaded.errors[0].to_string());
    conf::CompiledPolicy policy = conf::compile_policy(*loaded.policy);
    if (!policy.ok()) fuzz_failure("an example policy does not compile", policy.errors[0]);
    return policy;
}

// The capture as a file PcapReader can open (and map), without touching the file system.
class MemoryFile {
  public:
    MemoryFile(const uint8_t* data, size_t size) : fd_(memfd_create("capture", 0)) {
        if (fd_ < 0) fuzz_failure("memfd_create", "");
        size_t done = 0;
        while (done < size) {
            const ssize_t n = write(fd_, data + done, size - done);
            if (n <= 0) fuzz_failure("writing the capture", "");
            done += static_cast<size_t>(n);
        }
    }
    ~MemoryFile() { close(fd_); }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

  private:
    int fd_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const conf::CompiledPolicy policies[2] = {compiled("default.yaml"),
                                                     compiled("inference-slo.yaml")};
    if (size == 0) return 0;
    const uint8_t selector = data[0];
    const conf::CompiledPolicy& policy = policies[selector & 1];
    const MemoryFile file(data + 1, size - 1);

    try {
        replay::PcapReader reader(file.path());
        replay::testing::replay_checked(policy, policy.egress.at(0), 10'000'000'000ULL,
                                        (selector & 2) ? 25'000'000'000ULL : 0,
                                        [&](auto& engine) { engine.run(reader); });
    } catch (const replay::PcapError&) {
        // Refused with a message, as `twinlane replay` exits 2: unreadable, or a record past
        // the file's bounds (a timestamp's fraction).
    }
    return 0;
}
