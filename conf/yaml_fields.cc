#include "conf/yaml_fields.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <array>
#include <sstream>

namespace twinlane::conf {
namespace {

std::string describe_type(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return "'" + node.Scalar() + "'";
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined:
            return "nothing";
    }
    return "something else";
}

// The scalar text, or a "wrong type" report naming what was expected.
std::optional<std::string> scalar_text(const Field& field, std::string_view expected,
                                       ErrorList& errors) {
    if (!field.node.IsScalar()) {
        errors.add(field.mark, field.path,
                   "expected " + std::string(expected) + ", got " + describe_type(field.node));
        return std::nullopt;
    }
    return field.node.Scalar();
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string range_text(uint64_t min, uint64_t max) {
    return "between " + std::to_string(min) + " and " + std::to_string(max);
}

// Counts nodes from parser events; a subtree's count is remembered for its anchor so that every
// alias of it adds the whole subtree. Counts stop growing past the bound (no overflow).
class NodeCounter : public YAML::EventHandler {
  public:
    struct TooDeep {};
    explicit NodeCounter(size_t max_nodes) : max_nodes_(max_nodes) {}
    const YamlExtent& extent() const { return extent_; }
    const YAML::Mark& document_start() const { return document_start_; }

    void OnDocumentStart(const YAML::Mark& mark) override { document_start_ = mark; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        const size_t nodes = anchor < anchored_nodes_.size() ? anchored_nodes_[anchor] : 0;
        count(mark, std::max<size_t>(nodes, 1));
    }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  const std::string& value) override {
        leaf(mark, anchor);
        if (!extent_.not_utf8 && !is_utf8(value)) {
            extent_.not_utf8 = true;
            extent_.not_utf8_at = mark;
        }
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value) override {
        open(mark, anchor);
    }
    void OnSequenceEnd() override { close(); }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value) override {
        open(mark, anchor);
    }
    void OnMapEnd() override { close(); }

  private:
    struct Open {
        YAML::anchor_t anchor;
        size_t nodes_before;  // nodes counted before this collection
    };

    void count(const YAML::Mark& mark, size_t nodes) {
        nodes_ = std::min(nodes_ + nodes, max_nodes_ + 1);
        if (nodes_ > max_nodes_ && !extent_.too_many_nodes) {
            extent_.too_many_nodes = true;
            extent_.overflow = mark;
        }
    }
    void remember(YAML::anchor_t anchor, size_t nodes) {
        if (anchor == YAML::NullAnchor) return;
        if (anchored_nodes_.size() <= anchor) anchored_nodes_.resize(anchor + 1, 0);
        anchored_nodes_[anchor] = nodes;
    }
    void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
        count(mark, 1);
        remember(anchor, 1);
    }
    void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
        if (open_collections_.size() >= kMaxYamlDepth) {
            extent_.too_deep = true;
            extent_.too_deep_at = mark;
            throw TooDeep{};  // the parser would go on recursing
        }
        open_collections_.push_back(Open{anchor, nodes_});
        count(mark, 1);
    }
    void close() {
        if (open_collections_.empty()) return;
        const Open done = open_collections_.back();
        open_collections_.pop_back();
        remember(done.anchor, nodes_ - done.nodes_before);
    }

    const size_t max_nodes_;
    size_t nodes_ = 0;
    std::vector<Open> open_collections_;
    std::vector<size_t> anchored_nodes_;  // by anchor id; 0 while the anchored node is open
    YamlExtent extent_;
    YAML::Mark document_start_;
};

}  // namespace

bool is_utf8(std::string_view text) {
    size_t i = 0;
    while (i < text.size()) {
        const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
        const uint8_t lead = byte(i);
        if (lead < 0x80) {
            ++i;
            continue;
        }
        // The sequence's length and the range of its second byte (the first continuation byte
        // is where overlongs, surrogates and values above U+10FFFF show).
        size_t length = 0;
        uint8_t low = 0x80, high = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            length = 3;
            if (lead == 0xE0) low = 0xA0;   // overlong
            if (lead == 0xED) high = 0x9F;  // surrogates
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            length = 4;
            if (lead == 0xF0) low = 0x90;   // overlong
            if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
        } else {
            return false;  // a continuation byte, an overlong lead (C0, C1) or F5-FF
        }
        if (text.size() - i < length || byte(i + 1) < low || byte(i + 1) > high) return false;
        for (size_t k = 2; k < length; ++k)
            if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return false;
        i += length;
    }
    return true;
}

YamlExtent measure_yaml(const std::string& text, size_t max_nodes) {
    std::istringstream input(text);
    YAML::Parser parser(input);
    NodeCounter counter(max_nodes);
    try {
        parser.HandleNextDocument(counter);
    } catch (const NodeCounter::TooDeep&) {
        return counter.extent();
    }
    YamlExtent extent = counter.extent();
    NodeCounter second(max_nodes);
    try {
        extent.more_documents = parser.HandleNextDocument(second);
    } catch (const NodeCounter::TooDeep&) {
        extent.more_documents = true;  // and deep: refused as a second document all the same
    }
    if (extent.more_documents) extent.second_document = second.document_start();
    return extent;
}

bool is_control_character(char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

bool has_control_character(std::string_view text) {
    return std::any_of(text.begin(), text.end(), is_control_character);
}

namespace {

// Errors quote what the file (or a control request) said; a control character in it (a name
// "a\nb", a terminal escape) would break the one-error-per-line output or act on the terminal,
// so it is shown escaped, as C writes it.
std::string escape_control_characters(std::string text) {
    if (!has_control_character(text)) return text;
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (!is_control_character(c)) {
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        }
    }
    return out;
}

}  // namespace

void ErrorList::add(const YAML::Mark& at, std::string key_path, std::string reason) {
    if (errors_.size() >= kMaxListed) {
        ++unlisted_;
        return;
    }
    const bool known = !at.is_null();
    errors_.push_back(PolicyError{.file = file_,
                                  .line = known ? at.line + 1 : 0,
                                  .column = known ? at.column + 1 : 0,
                                  .key_path = escape_control_characters(std::move(key_path)),
                                  .reason = escape_control_characters(std::move(reason))});
}

std::string join_path(const std::string& parent, std::string_view key) {
    if (parent.empty()) return std::string(key);
    return parent + "." + std::string(key);
}

std::string closest_name(std::string_view word, const std::vector<std::string_view>& names) {
    // Two edits catch typos and swapped letters without suggesting unrelated short words.
    const size_t budget = std::min<size_t>(2, std::max<size_t>(1, word.size() / 3));
    std::string best;
    size_t best_distance = budget + 1;
    for (std::string_view name : names) {
        const size_t distance = edit_distance(word, name);
        if (distance < best_distance) {
            best_distance = distance;
            best = std::string(name);
        }
    }
    return best;
}

MapFields::MapFields(const Field& map, std::initializer_list<std::string_view> allowed_keys,
                     ErrorList& errors)
    : self_(map), errors_(errors) {
    if (map.node.IsNull()) {  // `section:` with nothing under it: an empty mapping
        is_map_ = true;
        return;
    }
    if (!map.node.IsMap()) {
        errors.add(map.mark, map.path, "expected a mapping, got " + describe_type(map.node));
        return;
    }
    is_map_ = true;
    const std::vector<std::string_view> allowed(allowed_keys);
    // Copies, not references: the iterator hands out a temporary key/value pair.
    for (const auto& pair : map.node) {
        const YAML::Node key = pair.first;
        if (!key.IsScalar()) {
            errors.add(key.Mark(), map.path, "keys must be plain names");
            continue;
        }
        const std::string& name = key.Scalar();
        const std::string path = join_path(map.path, name);
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
            std::string reason = "unknown key '" + name + "'";
            const std::string suggestion = closest_name(name, allowed);
            if (!suggestion.empty()) reason += " (did you mean '" + suggestion + "'?)";
            errors.add(key.Mark(), path, reason);
            continue;
        }
        const bool repeated = std::any_of(entries_.begin(), entries_.end(),
                                          [&](const Entry& e) { return e.key == name; });
        if (repeated) {
            errors.add(key.Mark(), path, "key '" + name + "' is given twice");
            continue;
        }
        const YAML::Node value = pair.second;
        const YAML::Mark mark = value.IsNull() ? key.Mark() : value.Mark();
        entries_.push_back(Entry{.key = name, .value = Field{value, mark, path}});
    }
}

std::optional<Field> MapFields::get(std::string_view key) const {
    for (const Entry& entry : entries_) {
        if (entry.key == key) return entry.value;
    }
    return std::nullopt;
}

std::optional<Field> MapFields::require(std::string_view key) const {
    auto field = get(key);
    if (!field && is_map_) {
        errors_.add(self_.mark, join_path(self_.path, key),
                    "missing required key '" + std::string(key) + "'");
    }
    return field;
}

std::optional<std::vector<Field>> read_sequence(const Field& field, ErrorList& errors) {
    std::vector<Field> items;
    if (field.node.IsNull()) return items;
    if (!field.node.IsSequence()) {
        errors.add(field.mark, field.path, "expected a list, got " + describe_type(field.node));
        return std::nullopt;
    }
    for (size_t i = 0; i < field.node.size(); ++i) {
        const YAML::Node item = field.node[i];
        const YAML::Mark mark = item.IsNull() ? field.mark : item.Mark();
        items.push_back(Field{item, mark, field.path + "[" + std::to_string(i) + "]"});
    }
    return items;
}

std::optional<std::string> read_string(const Field& field, ErrorList& errors) {
    auto text = scalar_text(field, "a string", errors);
    if (text && text->empty()) {
        errors.add(field.mark, field.path, "must not be empty");
        return std::nullopt;
    }
    return text;
}

std::optional<bool> read_bool(const Field& field, ErrorList& errors) {
    auto text = scalar_text(field, "true or false", errors);
    if (!text) return std::nullopt;
    static constexpr std::array<std::string_view, 4> kTrue{"true", "yes", "on", "True"};
    static constexpr std::array<std::string_view, 4> kFalse{"false", "no", "off", "False"};
    if (std::find(kTrue.begin(), kTrue.end(), *text) != kTrue.end()) return true;
    if (std::find(kFalse.begin(), kFalse.end(), *text) != kFalse.end()) return false;
    errors.add(field.mark, field.path, "expected true or false, got '" + *text + "'");
    return std::nullopt;
}

std::optional<uint64_t> read_unsigned(const Field& field, uint64_t min, uint64_t max,
                                      ErrorList& errors) {
    auto text = scalar_text(field, "a whole number", errors);
    if (!text) return std::nullopt;
    auto value = parse_unsigned(*text, max);
    if (value && *value >= min) return *value;
    // A negative or too-large integer is a range problem; anything else is the wrong type.
    const std::string_view digits = std::string_view(*text).substr(text->starts_with('-') ? 1 : 0);
    const bool is_integer =
        !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
    errors.add(field.mark, field.path,
               is_integer ? "must be " + range_text(min, max) + ", got '" + *text + "'"
                          : "expected a whole number, got '" + *text + "'");
    return std::nullopt;
}

std::optional<size_t> read_choice(const Field& field, const std::vector<std::string_view>& names,
                                  ErrorList& errors) {
    std::string expected;
    for (std::string_view name : names)
        expected += (expected.empty() ? "" : ", ") + std::string(name);
    auto text = scalar_text(field, "one of " + expected, errors);
    if (!text) return std::nullopt;
    const auto found = std::find(names.begin(), names.end(), *text);
    if (found != names.end()) return static_cast<size_t>(found - names.begin());
    std::string reason = "'" + *text + "' is not one of " + expected;
    const std::string suggestion = closest_name(*text, names);
    if (!suggestion.empty()) reason += " (did you mean '" + suggestion + "'?)";
    errors.add(field.mark, field.path, reason);
    return std::nullopt;
}

std::optional<RateSpec> read_rate(const Field& field, bool allow_share, ErrorList& errors) {
    auto text = scalar_text(field, "a rate such as 10G", errors);
    if (!text) return std::nullopt;
    auto rate = parse_rate(*text);
    if (!rate) {
        errors.add(field.mark, field.path, rate.error());
        return std::nullopt;
    }
    if (rate->is_share && !allow_share) {
        errors.add(field.mark, field.path,
                   "a percentage needs a parent rate; give an absolute rate such as 10G here");
        return std::nullopt;
    }
    if (!rate->is_share && rate->bits_per_sec == 0) {
        errors.add(field.mark, field.path, "a rate must be more than zero");
        return std::nullopt;
    }
    return *rate;
}

std::optional<uint64_t> read_size_bytes(const Field& field, uint64_t min, uint64_t max,
                                        ErrorList& errors) {
    auto text = scalar_text(field, "a size such as 64KiB", errors);
    if (!text) return std::nullopt;
    auto bytes = parse_size_bytes(*text);
    if (!bytes) {
        errors.add(field.mark, field.path, bytes.error());
        return std::nullopt;
    }
    if (*bytes < min || *bytes > max) {
        errors.add(field.mark, field.path,
                   "must be " + range_text(min, max) + " bytes, got '" + *text + "'");
        return std::nullopt;
    }
    return *bytes;
}

std::optional<uint64_t> read_duration_ns(const Field& field, uint64_t min, uint64_t max,
                                         ErrorList& errors) {
    auto text = scalar_text(field, "a duration such as 5ms", errors);
    if (!text) return std::nullopt;
    auto ns = parse_duration_ns(*text);
    if (!ns) {
        errors.add(field.mark, field.path, ns.error());
        return std::nullopt;
    }
    if (*ns < min || *ns > max) {
        errors.add(field.mark, field.path,
                   "must be " + range_text(min, max) + " ns, got '" + *text + "'");
        return std::nullopt;
    }
    return *ns;
}

std::optional<uint32_t> read_percent_ppm(const Field& field, ErrorList& errors) {
    auto text = scalar_text(field, "a percentage such as 10%", errors);
    if (!text) return std::nullopt;
    auto ppm = parse_percent_ppm(*text);
    if (!ppm) {
        errors.add(field.mark, field.path, ppm.error());
        return std::nullopt;
    }
    return *ppm;
}

std::optional<ByteBudget> read_byte_budget(const Field& field, ErrorList& errors) {
    auto text = scalar_text(field, "a size such as 64KiB or a duration such as 20us", errors);
    if (!text) return std::nullopt;
    auto budget = parse_byte_budget(*text);
    if (!budget) {
        errors.add(field.mark, field.path, budget.error());
        return std::nullopt;
    }
    return *budget;
}

}  // namespace twinlane::conf
