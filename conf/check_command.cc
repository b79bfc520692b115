#include "conf/check_command.h"

#include <memory>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy.h"

namespace twinlane::conf {

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
    out.flush();
    return 0;
}

CLI::App* add_check_command(CLI::App& app, std::ostream& out, std::ostream& err) {
    CLI::App* check =
        app.add_subcommand("check", "Validate a policy file and report every problem");
    // Owned by the callback, which the subcommand keeps as long as the app lives.
    auto policy_path = std::make_shared<std::string>();
    check->add_option("-c,--config", *policy_path, "Policy file (YAML)")->required();
    check->callback([policy_path, &out, &err] {
        const int code = run_check(*policy_path, out, err);
        if (code != 0) throw CLI::RuntimeError(code);
    });
    return check;
}

}  // namespace twinlane::conf
