// libFuzzer harness over the policy language: any text in, and three properties checked.
//   1. parse_policy() returns a policy or errors, never crashes or throws, and every error
//      names the file and says why;
//   2. a policy it accepts compiles (compile_policy()'s errors are the loader's bugs: see
//      conf/compile.h);
//   3. the policy written back as a document (what `twinlanectl policy show` prints and every
//      runtime change re-parses) parses to the same policy (conf/policy_document.h).
// Built with -Dfuzz=true under clang; see tests/conf/run_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy_document.h"

namespace {

using namespace twinlane::conf;

[[noreturn]] void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "fuzz_policy: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const PolicyResult result = parse_policy(text, "fuzz.yaml");
    if (!result.ok()) {
        if (result.errors.empty()) fail("no policy and no error", "");
        for (const PolicyError& error : result.errors) {
            if (error.file != "fuzz.yaml" || error.reason.empty())
                fail("an error without its file or reason", error.to_string());
        }
        return 0;
    }
    const CompiledPolicy compiled = compile_policy(*result.policy);
    if (!compiled.ok()) fail("a policy the loader accepted does not compile", compiled.errors[0]);

    const nlohmann::json document = policy_document(*result.policy);
    const std::string rendered = render_yaml(document);
    const PolicyResult again = parse_policy(rendered, "rendered.yaml");
    if (!again.ok()) fail("the written-back policy does not load", again.errors[0].to_string() + "\n" + rendered);
    const nlohmann::json document_again = policy_document(*again.policy);
    if (document_again != document)
        fail("the written-back policy loads as another policy",
             document.dump(1) + "\n---\n" + document_again.dump(1));
    return 0;
}
