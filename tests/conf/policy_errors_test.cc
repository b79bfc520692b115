// Every kind of policy error, each located exactly: file:line:column and key path.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "conf/load_policy.h"
#include "conf/policy.h"
#include "conf/yaml_fields.h"
#include "tests/conf/policy_test_util.h"

namespace twinlane::conf {
namespace {

using testing::expect_error;
using testing::kBase;
using testing::kBaseNoTree;
using testing::parse;

// kBase plus sections from line 13 on, parsed.
PolicyResult base_with(std::string_view tail) {
    return parse(std::string(kBase) + std::string(tail));
}
// kBaseNoTree plus a tree from line 7 on, parsed.
PolicyResult tree_with(std::string_view tree) {
    return parse(std::string(kBaseNoTree) + std::string(tree));
}

TEST(PolicyErrors, BaseIsValid) {
    const PolicyResult result = parse(std::string(kBase));
    EXPECT_TRUE(result.ok()) << testing::describe(result);
}

TEST(PolicyErrors, UnknownTopLevelKeySuggestsTheClosest) {
    const PolicyResult result = base_with("metrix: {port: 1}\n");
    expect_error(result, "metrix", 13, 1, "unknown key 'metrix' (did you mean 'metrics'?)");
    EXPECT_EQ(result.errors.size(), 1u) << testing::describe(result);
}

TEST(PolicyErrors, UnknownNestedKeySuggestsTheClosest) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - name: a\n"
        "    device: net_null0\n"
        "    rate: 10G\n"
        "    rx_queus: 2\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].rx_queus", 5, 5, "did you mean 'rx_queues'?");
}

TEST(PolicyErrors, UnknownKeyWithoutCloseMatchHasNoSuggestion) {
    const PolicyResult result = base_with("colour: blue\n");
    expect_error(result, "colour", 13, 1, "unknown key 'colour'");
    EXPECT_EQ(testing::find_error(result, "colour")->reason.find("did you mean"),
              std::string::npos);
}

TEST(PolicyErrors, ControlCharactersInQuotedTextAreEscaped) {
    // One error per line, whatever the file says: a newline or a terminal escape in a name or a
    // key is shown escaped.
    const PolicyResult result = base_with(
        "\"bad\\tkey\": 1\n"
        "classifier: {rules: [{name: \"r\\nx\\e[2J\", priority: 1, match: {}, action: {class: "
        "gold}}]}\n");
    expect_error(result, "bad\\tkey", 13, 1, "unknown key 'bad\\tkey'");
    expect_error(result, "classifier.rules[0].name", 14, 29, "'r\\nx\\x1b[2J' is not a valid name");
    for (const PolicyError& error : result.errors)
        EXPECT_EQ(error.to_string().find_first_of("\n\t\x1b"), std::string::npos)
            << error.to_string();
}

TEST(PolicyErrors, RepeatedKey) {
    const PolicyResult result = base_with("log_level: info\nlog_level: debug\n");
    expect_error(result, "log_level", 14, 1, "given twice");
}

TEST(PolicyErrors, BadRateUnit) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10GBps}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].rate", 2, 40, "byte rate");
}

TEST(PolicyErrors, BadDurationUnit) {
    const PolicyResult result = base_with("classifier:\n  flow_table: {idle_timeout: 30}\n");
    expect_error(result, "classifier.flow_table.idle_timeout", 14, 30, "needs a unit");
}

TEST(PolicyErrors, FlowTableSlotsPerFlowIsAPowerOfTwoFrom2To16) {
    expect_error(base_with("classifier:\n  flow_table: {slots_per_flow: 3}\n"),
                 "classifier.flow_table.slots_per_flow", 14, 32, "power of two");
    expect_error(base_with("classifier:\n  flow_table: {slots_per_flow: 32}\n"),
                 "classifier.flow_table.slots_per_flow", 14, 32, "between 2 and 16");
    expect_error(base_with("classifier:\n  flow_table: {slots_per_flow: 1}\n"),
                 "classifier.flow_table.slots_per_flow", 14, 32, "between 2 and 16");
}

TEST(PolicyErrors, BadSizeUnit) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold, limit: {bytes: 64kb}}\n"
        "    - {name: k, kind: fifo, class: bulk}\n");
    expect_error(result, "scheduler.children[0].limit.bytes", 11, 57, "bits");
}

TEST(PolicyErrors, WrongTypes) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G, rx_queues: [1, 2]}\n"
        "forwarding: {from: a, to: a}\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n"
        "metrics: {enabled: maybe}\n");
    expect_error(result, "ports[0].rx_queues", 2, 56, "expected a whole number, got a list");
    expect_error(result, "forwarding", 3, 13, "expected a list, got a mapping");
    expect_error(result, "metrics.enabled", 6, 20, "expected true or false, got 'maybe'");
}

TEST(PolicyErrors, NotAWholeNumber) {
    const PolicyResult result = base_with("metrics: {port: 94.64}\n");
    expect_error(result, "metrics.port", 13, 17, "expected a whole number, got '94.64'");
}

TEST(PolicyErrors, ZeroAndNegativeWeights) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: drr\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold, weight: 0}\n"
        "    - {name: k, kind: fifo, class: bulk, weight: -2}\n");
    expect_error(result, "scheduler.children[0].weight", 11, 50, "between 1 and 65536, got '0'");
    expect_error(result, "scheduler.children[1].weight", 12, 50, "got '-2'");
}

TEST(PolicyErrors, WeightOutsideDrrParent) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold, weight: 3}\n"
        "    - {name: k, kind: fifo, class: bulk}\n");
    expect_error(result, "scheduler.children[0].weight", 11, 50, "child of a drr node");
}

TEST(PolicyErrors, UnknownClassInRuleSuggestsTheClosest) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  rules:\n"
        "    - {priority: 1, match: {dscp: 46}, action: {class: golf}}\n");
    expect_error(result, "classifier.rules[0].action.class", 15, 56,
                 "unknown class 'golf' (did you mean 'gold'?)");
}

TEST(PolicyErrors, UnknownClassInTreeAndHeuristics) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  heuristics: {roce: silver, dscp_map: {46: platinum}, default_class: bulk}\n");
    expect_error(result, "classifier.heuristics.roce", 14, 22, "unknown class 'silver'");
    expect_error(result, "classifier.heuristics.dscp_map.46", 14, 45, "unknown class 'platinum'");
}

TEST(PolicyErrors, UnknownPortInForwarding) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: west, device: net_null0, rate: 10G}\n"
        "forwarding:\n"
        "  - {from: west, to: wst}\n"
        "  - {from: north, to: west}\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "forwarding[0].to", 4, 22, "unknown port 'wst' (did you mean 'west'?)");
    expect_error(result, "forwarding[1].from", 5, 12, "unknown port 'north'");
}

TEST(PolicyErrors, IngressPortForwardsOnlyOnce) {
    const PolicyResult result =
        parse(std::string(kBase).replace(std::string(kBase).find("  - {from: a, to: b}\n"), 21,
                                         "  - {from: a, to: b}\n  - {from: a, to: a}\n"));
    expect_error(result, "forwarding[1].from", 6, 12, "already forwards to 'b'");
}

TEST(PolicyErrors, DuplicateNames) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G}\n"
        "  - {name: a, device: net_null0, rate: 10G}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c, d, c]\n"
        "scheduler:\n"
        "  name: r\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: x, kind: fifo, class: c}\n"
        "    - {name: x, kind: fifo, class: d}\n");
    expect_error(result, "ports[1].name", 3, 12, "duplicate port name 'a'");
    expect_error(result, "ports[1].device", 3, 23, "already used by port 'a'");
    expect_error(result, "classes[2]", 5, 17, "duplicate class name 'c'");
    expect_error(result, "scheduler.children[1].name", 11, 7, "duplicate node name 'x'");
}

TEST(PolicyErrors, DuplicateRulePriority) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  rules:\n"
        "    - {name: one, priority: 5, match: {dscp: 46}, action: {class: gold}}\n"
        "    - {name: two, priority: 5, match: {dscp: 10}, action: {class: bulk}}\n");
    expect_error(result, "classifier.rules[1].priority", 16, 29, "already used by rule 'one'");
}

TEST(PolicyErrors, DuplicateRuleNames) {
    // Two rules on lines 15 and 16; `first` and `second` open each mapping.
    auto rules = [](std::string_view first, std::string_view second) {
        return base_with("classifier:\n  rules:\n    - {" + std::string(first) +
                         "priority: 5, match: {dscp: 46}, action: {class: gold}}\n    - {" +
                         std::string(second) +
                         "priority: 6, match: {dscp: 10}, action: {class: bulk}}\n");
    };
    // Rules are deleted and reported by name, so both would be ambiguous.
    expect_error(rules("name: svc, ", "name: svc, "), "classifier.rules[1].name", 16, 14,
                 "rule name 'svc' is already used by classifier.rules[0]");
    // An explicit name equal to an unnamed rule's automatic name, either way round.
    expect_error(rules("", "name: rule0, "), "classifier.rules[1].name", 16, 14,
                 "rule name 'rule0' is already used by classifier.rules[0] (its automatic name)");
    expect_error(rules("name: rule1, ", ""), "classifier.rules[1].name", 16, 7,
                 "automatic name 'rule1' is already used by classifier.rules[0]; give it a name");
    EXPECT_TRUE(rules("", "").ok());
}

TEST(PolicyErrors, TreeCycleThroughYamlAlias) {
    const PolicyResult result = tree_with(
        "scheduler: &top\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - *top\n");
    // yaml-cpp gives an alias the mark of its anchored node, so the loop is reported where the
    // anchor is; the key path names the alias's position.
    expect_error(result, "scheduler.children[1]", 7, 12, "its own ancestor");
}

TEST(PolicyErrors, DocumentExpandingBeyondTheNodeBoundIsRefusedUnread) {
    // Each level's node has its previous level three times (once inline, twice by alias):
    // 3^13 tree nodes from 1.5 KB. Refused with one error, before the tree is walked.
    std::string node = "&b0 {name: l0, kind: fifo, class: bulk}";
    for (int i = 1; i < 14; ++i) {
        const std::string n = std::to_string(i);
        const std::string previous = "*b" + std::to_string(i - 1);
        node = "&b" + n + " {name: n" + n + ", kind: drr, children: [" + node + ", " + previous +
               ", " + previous + "]}";
    }
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - " +
        node + "\n");
    ASSERT_EQ(result.errors.size(), 1u) << result.errors.size() << " errors";
    EXPECT_EQ(result.errors[0].line, 12);
    EXPECT_EQ(result.errors[0].key_path, "");
    EXPECT_EQ(result.errors[0].reason,
              "the document expands to more than 1000000 nodes (YAML aliases?)");
}

// A file wrong in every one of thousands of entries lists the first ErrorList::kMaxListed
// errors found, in file order, and then how many more there are.
TEST(PolicyErrors, ThousandsOfErrorsAreListedUpToABound) {
    std::string rules = "classifier:\n  rules:\n";
    for (int i = 0; i < 1500; ++i)
        rules += "    - {priority: " + std::to_string(i) + ", action: {class: golf}}\n";
    const PolicyResult result = base_with(rules);
    ASSERT_EQ(result.errors.size(), ErrorList::kMaxListed + 1);
    EXPECT_EQ(result.errors[0].line, 15);
    EXPECT_EQ(result.errors.back().reason, "and 2000 more errors, not listed");  // 2 per rule
}

TEST(PolicyErrors, AtMost32Ports) {
    std::string text = "version: 1\nports:\n";
    for (int i = 0; i < 33; ++i)
        text += "  - {name: p" + std::to_string(i) + ", device: net_null" + std::to_string(i) +
                ", rate: 1G}\n";
    text += "classes: [gold]\nscheduler: {name: root, kind: fifo, class: gold}\n";
    expect_error(parse(text), "ports", 3, 3, "at most 32 ports");
}

TEST(PolicyErrors, ASecondYamlDocumentIsRefused) {
    // YAML::Load reads the first document only: the second one was silently ignored.
    expect_error(base_with("---\nports: garbage\n"), "", 13, 1,
                 "a policy file holds one YAML document");
    EXPECT_TRUE(parse("---\n" + std::string(kBase) + "...\n").ok());
}

TEST(PolicyErrors, AValueThatIsNotUtf8IsRefusedWhereItIs) {
    // Latin-1 bytes, and a surrogate written out in UTF-8's form (CESU-8): yaml-cpp reads both,
    // and the JSON written from the policy (policy show, stats, reports) could hold neither.
    for (const std::string_view value : {"\"caf\xe9\"", "caf\xe9", "x\xed\xa0\x80"}) {
        const PolicyResult result = base_with("log_level: " + std::string(value) + "\n");
        expect_error(result, "", 13, 12, "not UTF-8 text");
        EXPECT_EQ(result.errors.size(), 1u) << testing::describe(result);
    }
    // UTF-8 passes this check (and is then judged as a log level).
    expect_error(base_with("log_level: \"caf\xc3\xa9\"\n"), "log_level", 13, 12, "'caf\xc3\xa9'");
}

TEST(Utf8, WellFormedOnly) {
    for (const std::string_view good : {"", "abc", "\xc3\xa9", "\xe2\x82\xac", "\xed\x9f\xbf",
                                        "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
        EXPECT_TRUE(is_utf8(good)) << ::testing::PrintToString(good);
    }
    for (const std::string_view bad :
         {"\x80", "\xc3", "\xc3\x28", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe2\x82",
          "\xed\xa0\x80", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff",
          "ok\xe9"}) {
        EXPECT_FALSE(is_utf8(bad)) << ::testing::PrintToString(bad);
    }
}

TEST(YamlExtent, AnAliasCountsAsItsWholeNodeEachTimeItIsUsed) {
    // Root, 3 keys, the anchored list and its 2 items, then 3 nodes per alias: 13 nodes.
    const std::string text = "a: &x [1, 2]\nb: *x\nc: *x\n";
    EXPECT_FALSE(measure_yaml(text, 13).too_many_nodes);
    const YamlExtent extent = measure_yaml(text, 12);
    EXPECT_TRUE(extent.too_many_nodes);
    EXPECT_EQ(extent.overflow.line, 2);  // the second alias, 0-based line
    // An alias of a node still open (a loop) counts once instead of forever.
    EXPECT_FALSE(measure_yaml("a: &x [1, *x]\n", 5).too_many_nodes);
}

TEST(PolicyErrors, BadParentChildShapes) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  class: gold\n"
        "  children:\n"
        "    - name: g\n"
        "      kind: fifo\n"
        "      class: gold\n"
        "      children: [{name: z, kind: fifo, class: bulk}]\n"
        "    - {name: k, kind: drr, class: bulk}\n"
        "    - {name: j, kind: fq, per_job: {count: 2}, class: bulk}\n");
    expect_error(result, "scheduler.class", 10, 10, "a leaf (fq, fifo) or a per_job drr node");
    expect_error(result, "scheduler.children[0].children", 15, 17, "has no children");
    expect_error(result, "scheduler.children[1].class", 16, 35, "a leaf (fq, fifo)");
    expect_error(result, "scheduler.children[1].children", 16, 7, "needs children");
    expect_error(result, "scheduler.children[2].per_job", 17, 36, "only applies to drr");
}

TEST(PolicyErrors, ClassMissingFromTreeOrServedTwice) {
    const PolicyResult missing = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n");
    expect_error(missing, "scheduler", 8, 3, "class 'bulk' has no leaf in this tree");

    const PolicyResult twice = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - {name: h, kind: fifo, class: gold}\n"
        "    - {name: k, kind: fifo, class: bulk}\n");
    ASSERT_FALSE(twice.ok());
    const PolicyError* error = testing::find_error(twice, "scheduler.children[0].class");
    if (error == nullptr) error = testing::find_error(twice, "scheduler.children[1].class");
    ASSERT_NE(error, nullptr) << testing::describe(twice);
    EXPECT_NE(error->reason.find("class 'gold' already enters the tree"), std::string::npos);
}

TEST(PolicyErrors, LeafWithoutClass) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - {name: k, kind: fifo, class: bulk}\n"
        "    - {name: idle, kind: fq}\n");
    expect_error(result, "scheduler.children[2].class", 13, 7, "no packet would ever reach it");
}

TEST(PolicyErrors, ValuesOutOfRange) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - name: a\n"
        "    device: net_null0\n"
        "    rate: 20T\n"
        "    mtu: 10000\n"
        "    rx_descriptors: 1000\n"
        "    rx_queues: 0\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fq, class: c, buckets: 1000}\n"
        "control: {mode: '0999', socket: relative.sock}\n"
        "metrics: {port: 70000, listen: localhost}\n");
    expect_error(result, "ports[0].rate", 4, 11, "at most 10T");
    expect_error(result, "ports[0].mtu", 5, 10, "between 68 and 9600");
    expect_error(result, "ports[0].rx_descriptors", 6, 21, "power of two");
    expect_error(result, "ports[0].rx_queues", 7, 16, "between 1 and 64");
    expect_error(result, "scheduler.buckets", 10, 51, "power of two");
    expect_error(result, "control.mode", 11, 17, "octal");
    expect_error(result, "control.socket", 11, 33, "absolute");
    expect_error(result, "metrics.port", 12, 17, "between 1 and 65535");
    expect_error(result, "metrics.listen", 12, 32, "not an IPv4 or IPv6 address");
}

TEST(PolicyErrors, ControlCharactersInPathsAndDevices) {
    // A NUL would cut the socket path short where the server binds it: a different path than
    // the one checked. YAML's "\0" and "\t" escapes put them in.
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: \"net_pcap0,rx_pcap=/tmp/in\\0.pcap\", rate: 10G}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n"
        "control: {socket: \"/tmp/t\\0l.sock\"}\n"
        "metrics: {listen: \"127.0.0.1\\tx\"}\n");
    expect_error(result, "ports[0].device", 2, 23, "must not contain control characters");
    expect_error(result, "control.socket", 6, 19, "must not contain control characters");
    expect_error(result, "metrics.listen", 7, 19, "must not contain control characters");
    EXPECT_EQ(result.errors.size(), 3u) << testing::describe(result);
}

TEST(PolicyErrors, ClassifierMatchProblems) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  rules:\n"
        "    - priority: 1\n"
        "      match: {src: 10.0.0.1/8, dst: 'fd00::/8', vlan: 4096}\n"
        "      action: {class: gold, dscp: 64}\n"
        "    - priority: 2\n"
        "      match: {proto: icmp, dst_port: 90-80, roce: {qp: 0x1000000}}\n"
        "      action: {class: bulk}\n");
    expect_error(result, "classifier.rules[0].match.src", 16, 20, "bits set after the prefix");
    expect_error(result, "classifier.rules[0].match.vlan", 16, 55, "between 0 and 4095");
    expect_error(result, "classifier.rules[0].action.dscp", 17, 35, "between 0 and 63");
    expect_error(result, "classifier.rules[1].match.dst_port", 19, 38, "ends before it starts");
    expect_error(result, "classifier.rules[1].match.roce.qp", 19, 56, "within 0-16777215");
    expect_error(result, "classifier.rules[1].match.roce", 19, 51, "over UDP");
}

TEST(PolicyErrors, MixedAddressFamiliesAndPortsWithoutTcpUdp) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  rules:\n"
        "    - priority: 1\n"
        "      match: {src: 10.0.0.0/8, dst: 'fd00::/8', proto: icmp, src_port: 53}\n"
        "      action: {class: gold}\n");
    expect_error(result, "classifier.rules[0].match", 16, 14, "mix IPv4 and IPv6");
    EXPECT_NE(testing::describe(result).find("need proto tcp or udp"), std::string::npos);
}

TEST(PolicyErrors, MissingRequiredKeysPointAtTheirMapping) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0}\n"
        "classes: [c]\n");
    expect_error(result, "ports[0].rate", 2, 5, "missing required key 'rate'");
    expect_error(result, "forwarding", 1, 1, "missing required key 'forwarding'");
}

TEST(PolicyErrors, ShaperAbovePortRateIsReportedPerPort) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold, shaper: {rate: 40G}}\n"
        "    - {name: k, kind: fifo, class: bulk, shaper: {rate: 1%, burst: 100B}}\n");
    expect_error(result, "scheduler.children[0].shaper.rate", 11, 50, "above the 10Gbps");
    expect_error(result, "scheduler.children[1].shaper.burst", 12, 50, "one frame (1518 bytes)");
}

TEST(PolicyErrors, PercentWhereAnAbsoluteRateIsNeeded) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 50%}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].rate", 2, 40, "needs a parent rate");
}

TEST(PolicyErrors, TxBudgetBelowOneFrame) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 100M, tx_budget: 20us}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].tx_budget", 2, 57, "250 bytes at this port's rate");
}

TEST(PolicyErrors, BurstTimeOutOfRange) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G, burst_time: 1s}\n"
        "  - {name: b, device: net_null1, rate: 10G, burst_time: fast}\n"
        "forwarding: [{from: a, to: b}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].burst_time", 2, 57, "must be between 0 and 10000000 ns");
    expect_error(result, "ports[1].burst_time", 3, 57, "does not start with a number");
}

TEST(PolicyErrors, TxBudgetAboveTheSchedulersBucket) {
    // The budget is the root shaper's bucket: 1 s of 10G (1.25 GB) was refused by compile,
    // without file:line.
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G, tx_budget: 1s}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].tx_budget", 2, 56, "more than the 256 MiB");
}

TEST(PolicyErrors, DeviceStrings) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: eth0, rate: 10G}\n"
        "  - {name: b, device: '3b:00.0', rate: 10G}\n"
        "  - {name: c, device: '0000:3c:00.0', rate: 10G}\n"
        "  - {name: d, device: '0000:3b:00', rate: 10G}\n"
        "forwarding: [{from: a, to: b}]\n"
        "classes: [x]\n"
        "scheduler: {name: r, kind: fifo, class: x}\n");
    expect_error(result, "ports[0].device", 2, 23, "neither a PCI address");
    expect_error(result, "ports[3].device", 5, 23, "neither a PCI address");
    EXPECT_EQ(result.errors.size(), 2u) << testing::describe(result);
}

TEST(PolicyErrors, OnePciDeviceSpelledTwoWaysIsADuplicate) {
    // The domain defaults to 0000 and hex digits have two cases; vdevs compare as written.
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: '0000:3b:00.0', rate: 10G}\n"
        "  - {name: b, device: '3b:00.0', rate: 10G}\n"
        "  - {name: c, device: '0000:3B:00.0', rate: 10G}\n"
        "  - {name: d, device: 'net_null0', rate: 10G}\n"
        "  - {name: e, device: 'net_null0,size=64', rate: 10G}\n"
        "forwarding: [{from: a, to: a}]\n"
        "classes: [x]\n"
        "scheduler: {name: r, kind: fifo, class: x}\n");
    expect_error(result, "ports[1].device", 3, 23,
                 "device '3b:00.0' is already used by port 'a' (as '0000:3b:00.0')");
    expect_error(result, "ports[2].device", 4, 23,
                 "device '0000:3B:00.0' is already used by port 'a' (as '0000:3b:00.0')");
    expect_error(result, "ports[4].device", 6, 23,
                 "device 'net_null0' is already used by port 'd'");
    EXPECT_EQ(result.errors.size(), 3u) << testing::describe(result);
}

TEST(PolicyErrors, LcoreAssignments) {
    const PolicyResult result = base_with(
        "lcores:\n"
        "  rx:\n"
        "    - {lcore: 1, poll: [{port: a, queues: [0, 1]}]}\n"
        "    - {lcore: 1, poll: [{port: a, queues: [0]}]}\n"
        "  scheduler:\n"
        "    - {lcore: 200, ports: [a]}\n");
    expect_error(result, "lcores.rx[0].poll[0].queues[1]", 15, 47, "has 1 rx queue(s), no queue 1");
    expect_error(result, "lcores.rx[1].lcore", 16, 15, "already has a role");
    expect_error(result, "lcores.rx[1].poll[0].queues[0]", 16, 44, "already polled by lcore 1");
    expect_error(result, "lcores.scheduler[0].lcore", 18, 15, "between 0 and 127");
    expect_error(result, "lcores.scheduler[0].ports[0]", 18, 28, "no forwarding destination");
    expect_error(result, "lcores.scheduler", 18, 5, "egress port 'b' has no scheduler lcore");
}

TEST(PolicyErrors, UnpolledRxQueue) {
    const PolicyResult result = base_with(
        "lcores:\n"
        "  rx: [{lcore: 1, poll: []}]\n"
        "  scheduler: [{lcore: 2, ports: [b]}]\n");
    expect_error(result, "lcores.rx", 14, 7, "rx queue a:0 is polled by no lcore");
}

TEST(PolicyErrors, LcoresShapes) {
    expect_error(base_with("lcores: manual\n"), "lcores", 13, 9, "not one of auto");
    expect_error(base_with("lcores: {rx: []}\n"), "lcores", 13, 9, "both 'rx' and 'scheduler'");
    expect_error(base_with("lcores: {single: 1, rx: []}\n"), "lcores.single", 13, 18, "drop 'rx'");
}

TEST(PolicyErrors, PerJobNode) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - name: k\n"
        "      kind: drr\n"
        "      class: bulk\n"
        "      per_job: {jobs: [7, 7], count: 3, leaf: {kind: fq}}\n");
    expect_error(result, "scheduler.children[1].per_job.count", 15, 38, "either 'jobs' or 'count'");

    const PolicyResult repeated = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - name: k\n"
        "      kind: drr\n"
        "      class: bulk\n"
        "      per_job: {jobs: [7, 7], leaf: {kind: strict}}\n");
    expect_error(repeated, "scheduler.children[1].per_job.jobs[1]", 15, 27, "listed twice");
    expect_error(repeated, "scheduler.children[1].per_job.leaf.kind", 15, 44,
                 "not one of fq, fifo");
}

TEST(PolicyErrors, CodelAndEcnParameters) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold, codel: {target: 10ms, interval: 5ms}}\n"
        "    - {name: k, kind: fq, class: bulk, ecn: {kmin: 200KB, kmax: 100KB, pmax: 0%}}\n");
    expect_error(result, "scheduler.children[0].codel", 11, 49, "shorter than its interval");
    expect_error(result, "scheduler.children[1].ecn", 12, 45, "kmin must be below kmax");
    expect_error(result, "scheduler.children[1].ecn.pmax", 12, 78, "more than 0%");
}

TEST(PolicyErrors, LeafOptionsOnInnerNodes) {
    const PolicyResult result = tree_with(
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  limit: {packets: 10}\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold, buckets: 64}\n"
        "    - {name: k, kind: fifo, class: bulk}\n");
    expect_error(result, "scheduler.limit", 10, 10, "only applies to leaves");
    expect_error(result, "scheduler.children[0].buckets", 12, 51, "only applies to fq");
}

TEST(PolicyErrors, ElephantQuietShorterThanReclassGap) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  heuristics:\n"
        "    elephant: {bytes: 1MB, window: 1s, quiet: 1ms, class: bulk}\n"
        "    reclass_gap: 2ms\n");
    expect_error(result, "classifier.heuristics.elephant.quiet", 15, 47, "at least reclass_gap");
}

TEST(PolicyErrors, JobBySourcePrefixOutOfRange) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  heuristics:\n"
        "    job_by_source: {ipv4: 33, ipv6: 0, port: 1}\n");
    expect_error(result, "classifier.heuristics.job_by_source.ipv4", 15, 27, "between 1 and 32");
    expect_error(result, "classifier.heuristics.job_by_source.ipv6", 15, 37, "between 1 and 128");
    expect_error(result, "classifier.heuristics.job_by_source.port", 15, 40, "unknown");
}

// Flow entries count an elephant window's bytes in 32 bits.
TEST(PolicyErrors, ElephantBytesAboveFourGiB) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  heuristics:\n"
        "    elephant: {bytes: 5GiB, window: 1s, quiet: 1s, class: bulk}\n");
    expect_error(result, "classifier.heuristics.elephant.bytes", 15, 23, "must be");
}

TEST(PolicyErrors, ServingPortZero) {
    const PolicyResult result = base_with(
        "classifier:\n"
        "  heuristics:\n"
        "    serving: {ports: [0-80], class: gold}\n");
    expect_error(result, "classifier.heuristics.serving.ports[0]", 15, 23, "port 0");
}

TEST(PolicyErrors, NoTreeForAnEgressPort) {
    const PolicyResult result = parse(std::string(kBaseNoTree));
    expect_error(result, "forwarding[0].to", 5, 19, "egress port 'b' needs a scheduling tree");
}

TEST(PolicyErrors, SchedulerOnAPortThatNeverTransmits) {
    const PolicyResult result = parse(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G, scheduler: {name: r, kind: fifo, class: c}}\n"
        "  - {name: b, device: net_null1, rate: 10G}\n"
        "forwarding: [{from: a, to: b}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    expect_error(result, "ports[0].scheduler", 2, 56, "its scheduler is never used");
}

TEST(PolicyErrors, YamlSyntaxError) {
    const PolicyResult result = parse("ports: [\nclasses: {\n");
    ASSERT_EQ(result.errors.size(), 1u) << testing::describe(result);
    EXPECT_EQ(result.errors[0].file, "test.yaml");
    EXPECT_GT(result.errors[0].line, 0);
    EXPECT_NE(result.errors[0].reason.find("YAML syntax"), std::string::npos);
}

TEST(PolicyErrors, DocumentMustBeAMapping) {
    expect_error(parse("- just\n- a list\n"), "", 1, 1, "must be a YAML mapping");
    const PolicyResult empty = parse("");
    ASSERT_EQ(empty.errors.size(), 1u);
    EXPECT_NE(empty.errors[0].reason.find("must be a YAML mapping"), std::string::npos);
}

TEST(PolicyErrors, UnreadableFile) {
    const PolicyResult result = load_policy("/nonexistent/twinlane/policy.yaml");
    ASSERT_EQ(result.errors.size(), 1u);
    EXPECT_EQ(result.errors[0].to_string(),
              "/nonexistent/twinlane/policy.yaml: cannot read the file: No such file or directory");
}

TEST(PolicyErrors, ADanglingLinkSaysWhereItPoints) {
    // Configuration management and ConfigMaps swap policy files through symlinks.
    const std::string link = ::testing::TempDir() + "/policy_errors_test_dangling.yaml";
    unlink(link.c_str());
    ASSERT_EQ(symlink("/nonexistent/twinlane/next.yaml", link.c_str()), 0);
    const PolicyResult result = load_policy(link);
    ASSERT_EQ(result.errors.size(), 1u);
    EXPECT_EQ(result.errors[0].to_string(),
              link +
                  ": a symbolic link to '/nonexistent/twinlane/next.yaml', which does not "
                  "exist (dangling link)");
    unlink(link.c_str());
}

TEST(PolicyErrors, NestingDeeperThanTheBoundIsNamed) {
    // yaml-cpp's own recursion guard (about 500 block levels) said only "bad file".
    std::string flow = "a: " + std::string(3000, '[') + std::string(3000, ']') + "\n";
    const PolicyResult deep_flow = parse(flow);
    expect_error(deep_flow, "", 1, 4 + kMaxYamlDepth - 1,
                 "nests collections deeper than 64 levels");
    std::string block = "a:\n";
    for (int i = 1; i <= 600; ++i)
        block += std::string(2 * i, ' ') + "b:\n";
    block += std::string(1202, ' ') + "c: 1\n";
    const PolicyResult deep_block = parse(block);
    ASSERT_EQ(deep_block.errors.size(), 1u) << testing::describe(deep_block);
    EXPECT_NE(deep_block.errors[0].reason.find("deeper than 64 levels"), std::string::npos);
    EXPECT_EQ(deep_block.errors[0].line, 65);
}

TEST(PolicyErrors, OnlyARegularFileIsRead) {
    // A FIFO without a writer would block the loader (and the daemon's control thread) forever;
    // /dev/zero would never end. Both are refused without reading.
    const std::string fifo = ::testing::TempDir() + "/policy_errors_test.fifo";
    unlink(fifo.c_str());
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    for (const std::string& path : {fifo, std::string("/dev/zero"), std::string("/tmp")}) {
        const PolicyResult result = load_policy(path);
        ASSERT_EQ(result.errors.size(), 1u) << path;
        EXPECT_EQ(result.errors[0].to_string(),
                  path + ": not a regular file (FIFOs, devices and directories are refused)");
    }
    unlink(fifo.c_str());
}

TEST(PolicyErrors, AFileLargerThanTheBoundIsRefused) {
    const std::string path = ::testing::TempDir() + "/policy_errors_test_large.yaml";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        const std::string comment_line(1023, '#');
        for (uint64_t i = 0; i <= kMaxPolicyFileBytes / 1024; ++i)
            out << comment_line << '\n';
    }
    const PolicyResult result = load_policy(path);
    ASSERT_EQ(result.errors.size(), 1u);
    EXPECT_EQ(result.errors[0].to_string(),
              path + ": larger than 16 MiB, the most a policy file may hold");
    unlink(path.c_str());
}

TEST(PolicyErrors, AllErrorsAreCollectedInFileOrder) {
    const PolicyResult result = parse(
        "log_level: loud\n"
        "ports:\n"
        "  - {name: a, device: net_null0, rate: fast}\n"
        "forwarding: [{from: a, to: z}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: d}\n"
        "metrics: {port: 0}\n");
    ASSERT_EQ(result.errors.size(), 5u) << testing::describe(result);
    EXPECT_EQ(result.errors[0].to_string(),
              "test.yaml:1:12: log_level: 'loud' is not one of trace, debug, info, warn, error, "
              "critical, off");
    EXPECT_EQ(result.errors[1].key_path, "ports[0].rate");
    EXPECT_EQ(result.errors[2].key_path, "forwarding[0].to");
    EXPECT_EQ(result.errors[3].key_path, "scheduler.class");
    EXPECT_EQ(result.errors[4].key_path, "metrics.port");
    for (size_t i = 1; i < result.errors.size(); ++i) {
        EXPECT_LE(result.errors[i - 1].line, result.errors[i].line);
    }
}

}  // namespace
}  // namespace twinlane::conf
