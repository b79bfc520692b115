// Schema-checked reading of a YAML document, collecting every problem instead of stopping at
// the first. Internal to the policy loader.
//
// A Field is a YAML value plus where it is (mark) and what it is called (key path). MapFields
// checks a mapping against the keys a section allows: unknown keys are reported with the
// closest allowed key ("did you mean 'weight'?") and repeated keys are reported too (yaml-cpp
// would silently keep both). The read_* functions convert a scalar with the units parsers and
// report wrong types, bad units and out-of-range values; they return std::nullopt after
// reporting, so callers simply skip what could not be read. Not thread-safe (one per load).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/policy_error.h"
#include "conf/units.h"

namespace twinlane::conf {

class ErrorList {
  public:
    explicit ErrorList(std::string file) : file_(std::move(file)) {}

    // Past kMaxListed errors (a generated or aliased file wrong in every entry) the rest are
    // only counted: nobody reads more, and each costs memory and output.
    static constexpr size_t kMaxListed = 1000;

    void add(const YAML::Mark& at, std::string key_path, std::string reason);
    const std::vector<PolicyError>& errors() const { return errors_; }
    std::vector<PolicyError> take() { return std::move(errors_); }
    size_t size() const { return errors_.size() + unlisted_; }  // every error found
    size_t unlisted() const { return unlisted_; }

  private:
    std::string file_;
    std::vector<PolicyError> errors_;
    size_t unlisted_ = 0;
};

// How far a YAML text's first document expands, and whether a second one follows, found from
// the parser's events before any node is built. An alias counts as a copy of its anchored node
// each time it is used, as every reader of the document sees it: aliases nesting aliases make
// a 1 KB text of a billion nodes ("billion laughs"). An alias of a node still open (a loop)
// counts once.
struct YamlExtent {
    bool too_many_nodes = false;  // the first document expands to more than the bound
    YAML::Mark overflow;          // the node at which it did
    // Collections nested deeper than kMaxYamlDepth: refused at the one that is, well before
    // yaml-cpp's own recursion guard (about 500 block levels), which reports only "bad file".
    bool too_deep = false;
    YAML::Mark too_deep_at;
    // YAML::Load reads the first document only and silently drops the rest.
    bool more_documents = false;
    YAML::Mark second_document;  // where the second one starts
    // A scalar (key or value) that is not UTF-8: bytes of another encoding, which yaml-cpp
    // takes as they are (it refuses only escapes of no character); names and values end up in
    // JSON (policy show, stats, reports), which is UTF-8 only.
    bool not_utf8 = false;
    YAML::Mark not_utf8_at;  // the first such scalar
};
// A policy nests a few levels per tree level (16 at most): 64 leaves room for any real file.
inline constexpr size_t kMaxYamlDepth = 64;
// Throws YAML::ParserException on invalid YAML, as YAML::Load does.
YamlExtent measure_yaml(const std::string& text, size_t max_nodes);
// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF).
bool is_utf8(std::string_view text);
// C0 controls (NUL, newline, tab, ...) and DEL: refused in paths, addresses and device names
// (conf/policy_values.h), shown escaped where an error quotes them.
bool is_control_character(char c);
bool has_control_character(std::string_view text);

struct Field {
    YAML::Node node;
    YAML::Mark mark;  // the value's position, or its key's when the value is empty
    std::string path;
};

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string join_path(const std::string& parent, std::string_view key);
// The allowed name closest to `word` by edit distance, or "" when none is close.
std::string closest_name(std::string_view word, const std::vector<std::string_view>& names);

class MapFields {
  public:
    // Reports a non-mapping value, unknown keys and repeated keys.
    MapFields(const Field& map, std::initializer_list<std::string_view> allowed_keys,
              ErrorList& errors);

    bool is_map() const { return is_map_; }
    const Field& self() const { return self_; }
    std::optional<Field> get(std::string_view key) const;
    // Like get(), but reports "missing required key" at the mapping when absent.
    std::optional<Field> require(std::string_view key) const;

  private:
    struct Entry {
        std::string key;
        Field value;
    };
    Field self_;
    ErrorList& errors_;
    bool is_map_ = false;
    std::vector<Entry> entries_;
};

// Sequence items as Fields with paths "path[i]"; reports a non-sequence. An empty YAML value
// (`key:` with nothing after it) is an empty list.
std::optional<std::vector<Field>> read_sequence(const Field& field, ErrorList& errors);

std::optional<std::string> read_string(const Field& field, ErrorList& errors);
std::optional<bool> read_bool(const Field& field, ErrorList& errors);
std::optional<uint64_t> read_unsigned(const Field& field, uint64_t min, uint64_t max,
                                      ErrorList& errors);
// One of `names`; returns its index. Reports the closest name when not found.
std::optional<size_t> read_choice(const Field& field, const std::vector<std::string_view>& names,
                                  ErrorList& errors);
std::optional<RateSpec> read_rate(const Field& field, bool allow_share, ErrorList& errors);
std::optional<uint64_t> read_size_bytes(const Field& field, uint64_t min, uint64_t max,
                                        ErrorList& errors);
std::optional<uint64_t> read_duration_ns(const Field& field, uint64_t min, uint64_t max,
                                         ErrorList& errors);
std::optional<uint32_t> read_percent_ppm(const Field& field, ErrorList& errors);
std::optional<ByteBudget> read_byte_budget(const Field& field, ErrorList& errors);

}  // namespace twinlane::conf
