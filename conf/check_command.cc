#include "conf/check_command.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/lossless.h"
#include "conf/mbuf_demand.h"
#include "conf/policy.h"
#include "slo/governor.h"

namespace twinlane::conf {
namespace {

// Per lossless class and PFC ingress port: thresholds and the headroom (computed, with its
// terms, or as given), and what the class's leaves on each egress port must hold.
void print_lossless(const Policy& policy, std::ostream& out) {
    for (const ClassPolicy& cls : policy.classes) {
        if (!cls.lossless) continue;
        const LosslessPolicy& l = *cls.lossless;
        out << "lossless class '" << cls.name << "' (priority " << int{l.priority} << "): xoff "
            << l.xoff_bytes << " B, xon " << l.xon_bytes << " B\n";
        for (const ForwardingPolicy& f : policy.forwarding) {
            const PortPolicy& ingress = policy.ports[f.from_port];
            if (ingress.pfc.mode == PfcMode::off) continue;
            out << "  from port '" << ingress.name << "' (pfc "
                << (ingress.pfc.mode == PfcMode::software ? "software" : "nic") << "): headroom ";
            if (l.headroom_bytes) {
                out << *l.headroom_bytes << " B (as given)\n";
            } else {
                out << auto_headroom(policy, f.from_port).to_string() << "\n";
            }
        }
        for (const EgressTree& tree : policy.egress_trees) {
            const LosslessRoom room = lossless_room(policy, tree.port, l);
            if (room.ingress_ports == 0) continue;
            out << "  leaves on port '" << policy.ports[tree.port].name << "' hold at least "
                << room.bytes << " B (xoff + headroom from " << room.ingress_ports
                << " PFC port(s))\n";
        }
    }
}

// Per port: the mbufs it adds to its socket's pool, what they must hold, and about how much
// memory (hugepages) that is.
void print_mempools(const Policy& policy, std::ostream& out) {
    for (size_t i = 0; i < policy.ports.size(); ++i) {
        const PortPolicy& port = policy.ports[i];
        const PortMbufDemand demand = port_mbuf_demand(policy, i);
        out << "port '" << port.name << "': mempool " << port.mempool_mbufs << " mbufs ("
            << (port.mempool_given ? "as given" : "sized to fit") << "; descriptor rings "
            << demand.descriptors << ", queues " << demand.queues << "), about "
            << mbufs_mib(port.mempool_mbufs) << " MiB\n";
    }
}

}  // namespace

int run_check(const std::string& policy_path, std::ostream& out, std::ostream& err) {
    const PolicyResult result = load_policy(policy_path);
    if (!result.ok()) {
        for (const PolicyError& error : result.errors)
            err << error.to_string() << '\n';
        err.flush();
        return 1;
    }
    const Policy& policy = *result.policy;
    // What `twinlane run` builds from the policy next: anything it would refuse fails here too.
    const CompiledPolicy compiled = compile_policy(policy);
    if (!compiled.ok()) {
        for (const std::string& error : compiled.errors)
            err << policy_path << ": " << error << '\n';
        err.flush();
        return 1;
    }
    out << "OK: " << policy_path << ": " << policy.ports.size() << " ports, "
        << policy.classes.size() << " classes, " << policy.classifier.rules.size() << " rules\n";
    print_mempools(policy, out);
    print_lossless(policy, out);
    for (const CompiledEgress& egress : compiled.egress)
        for (const std::string& note : slo::targets_within_blocking(egress.slo))
            out << "note: port '" << policy.ports[egress.port].name << "': slo: " << note << "\n";
    out.flush();
    return 0;
}

CLI::App* add_check_command(CLI::App& app, std::ostream& out, std::ostream& err) {
    CLI::App* check = app.add_subcommand("check", "Validate policy files and report every problem");
    // Owned by the callback, which the subcommand keeps as long as the app lives.
    auto policy_paths = std::make_shared<std::vector<std::string>>();
    check
        ->add_option("policy,-c,--config", *policy_paths,
                     "Policy files (YAML), e.g. `twinlane check conf/*.yaml`; each is checked")
        ->required();
    check->callback([policy_paths, &out, &err] {
        // Every file is checked and reported, so one run lists all that is wrong.
        int code = 0;
        for (const std::string& path : *policy_paths)
            code = std::max(code, run_check(path, out, err));
        if (code != 0) throw CLI::RuntimeError(code);
    });
    return check;
}

}  // namespace twinlane::conf
