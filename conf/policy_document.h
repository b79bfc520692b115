// The running Policy written back as a policy document: the same schema conf/README.md
// documents and load_policy() reads, so that `parse_policy(render(policy_document(p)))` yields
// a policy equal to `p`. This is how the control plane edits a policy: change the document
// (add a rule, set a class parameter), re-parse it, re-compile it; every check the loader
// makes applies to runtime changes too, with no second copy of the validation logic.
//
// The document is normalised, not the author's text: every egress port gets its own
// `scheduler` (with rates resolved to absolute bits/s for that port), per_job children are
// written as the `per_job` they came from, units are exact (bits/s, bytes, ns), class
// descriptions and comments are gone. Pure functions, thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "conf/policy.h"

namespace twinlane::conf {

nlohmann::json policy_document(const Policy& policy);
// One classifier rule in the document schema ({name, priority, match, action}).
nlohmann::json rule_document(const Policy& policy, const ClassifierRule& rule);

// Block-style YAML of a JSON document (strings that YAML would read as another type are
// quoted), suitable for `policy show` and for parse_policy().
std::string render_yaml(const nlohmann::json& document);

}  // namespace twinlane::conf
