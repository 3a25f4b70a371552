// One YAML document as a compact tree built from yaml-cpp's event API.
// yaml-cpp's own YAML::Node trees cost more to build and to search than the
// scanning itself; this keeps what the parse stage reads: shapes, scalars
// and positions for FILE:LINE:COL errors. Aliases are refused: the tree
// is never larger than its text.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace g2n {

class YamlTree;

// A handle on a node of a YamlTree; default-constructed it is undefined
// (an absent field). Valid while its tree lives.
class YamlNode {
public:
    YamlNode() = default;

    bool defined() const { return tree_ != nullptr; }
    bool is_null() const;
    bool is_scalar() const;
    bool is_sequence() const;
    bool is_map() const;

    // The scalar's text; empty for anything else.
    const std::string &scalar() const;
    // 0-based line and column in the document's text.
    int line() const;
    int column() const;

    // The value of `key` in a mapping (the first, if repeated); undefined
    // when absent or when this is not a mapping.
    YamlNode get(const char *key) const;
    // The items of a sequence; the key/value pairs of a mapping.
    std::vector<YamlNode> items() const;
    std::vector<std::pair<YamlNode, YamlNode>> entries() const;

private:
    friend class YamlTree;
    YamlNode(const YamlTree *tree, uint32_t index) : tree_(tree), index_(index) {}

    const YamlTree *tree_ = nullptr;
    uint32_t index_ = 0;
};

class YamlTree {
public:
    enum class Kind : uint8_t { Null, Scalar, Sequence, Map };

    // Parses one document; an empty text gives an empty tree (root
    // undefined). Throws InputError "FILE:LINE:COL: invalid YAML: ..." with
    // lines counted from `line_offset`.
    static YamlTree parse(const std::string &text, const std::string &file, int line_offset);

    YamlNode root() const { return nodes_.empty() ? YamlNode() : YamlNode(this, 0); }

private:
    friend class YamlNode;
    friend class YamlTreeBuilder;

    struct Node {
        Kind kind = Kind::Null;
        int line = 0;
        int column = 0;
        uint32_t first = 0;  // into children_: items, or key, value, key, value...
        uint32_t count = 0;  // items, or pairs
        std::string scalar;
    };

    std::vector<Node> nodes_;
    std::vector<uint32_t> children_;
};

// One document's text, where it starts in its file, and once scanned its
// tree or the message of its InputError.
struct YamlDocument {
    std::string text;
    int line_offset = 0;
    YamlTree tree;
    std::string error;
    bool known = false;  // typed before (a DocumentCache has it): not scanned
    size_t content = 0;  // a digest of the text, kept once the text is not
};

// Scans batches of documents into trees on worker threads (none: on the
// caller's). A batch stops at its first invalid document: the caller types
// them in input order, so the first error in the input is the one raised.
// Batches, not documents, keep the threads' hand-offs few.
class YamlScanPool {
public:
    explicit YamlScanPool(unsigned threads);
    ~YamlScanPool();
    YamlScanPool(const YamlScanPool &) = delete;
    YamlScanPool &operator=(const YamlScanPool &) = delete;

    using Batch = std::vector<YamlDocument>;
    std::future<Batch> submit(Batch batch, const std::string &file);
    unsigned threads() const { return static_cast<unsigned>(threads_.size()); }

private:
    void work();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::packaged_task<Batch()>> tasks_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace g2n
