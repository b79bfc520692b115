#include "conf/policy.h"

namespace twinlane::conf {

std::optional<size_t> Policy::find_port(std::string_view name) const {
    for (size_t i = 0; i < ports.size(); ++i) {
        if (ports[i].name == name) return i;
    }
    return std::nullopt;
}

std::optional<size_t> Policy::find_class(std::string_view name) const {
    for (size_t i = 0; i < classes.size(); ++i) {
        if (classes[i].name == name) return i;
    }
    return std::nullopt;
}

const EgressTree* Policy::tree_for_port(size_t port) const {
    for (const EgressTree& tree : egress_trees) {
        if (tree.port == port) return &tree;
    }
    return nullptr;
}

}  // namespace twinlane::conf
