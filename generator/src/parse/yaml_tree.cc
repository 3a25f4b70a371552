#include "parse/yaml_tree.h"

#include <cstring>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "parse/parse.h"

namespace g2n {

namespace {
const std::string kEmpty;
}  // namespace

bool YamlNode::is_null() const { return tree_ && tree_->nodes_[index_].kind == YamlTree::Kind::Null; }
bool YamlNode::is_scalar() const { return tree_ && tree_->nodes_[index_].kind == YamlTree::Kind::Scalar; }
bool YamlNode::is_sequence() const { return tree_ && tree_->nodes_[index_].kind == YamlTree::Kind::Sequence; }
bool YamlNode::is_map() const { return tree_ && tree_->nodes_[index_].kind == YamlTree::Kind::Map; }

const std::string &YamlNode::scalar() const
{
    return is_scalar() ? tree_->nodes_[index_].scalar : kEmpty;
}

int YamlNode::line() const { return tree_ ? tree_->nodes_[index_].line : 0; }
int YamlNode::column() const { return tree_ ? tree_->nodes_[index_].column : 0; }

YamlNode YamlNode::get(const char *key) const
{
    if (!is_map()) {
        return {};
    }
    const YamlTree::Node &map = tree_->nodes_[index_];
    size_t key_len = std::strlen(key);
    for (uint32_t i = 0; i < map.count; i++) {
        const YamlTree::Node &k = tree_->nodes_[tree_->children_[map.first + 2 * i]];
        if (k.kind == YamlTree::Kind::Scalar && k.scalar.size() == key_len
            && std::memcmp(k.scalar.data(), key, key_len) == 0) {
            return YamlNode(tree_, tree_->children_[map.first + 2 * i + 1]);
        }
    }
    return {};
}

std::vector<YamlNode> YamlNode::items() const
{
    std::vector<YamlNode> out;
    if (is_sequence()) {
        const YamlTree::Node &seq = tree_->nodes_[index_];
        out.reserve(seq.count);
        for (uint32_t i = 0; i < seq.count; i++) {
            out.push_back(YamlNode(tree_, tree_->children_[seq.first + i]));
        }
    }
    return out;
}

std::vector<std::pair<YamlNode, YamlNode>> YamlNode::entries() const
{
    std::vector<std::pair<YamlNode, YamlNode>> out;
    if (is_map()) {
        const YamlTree::Node &map = tree_->nodes_[index_];
        out.reserve(map.count);
        for (uint32_t i = 0; i < map.count; i++) {
            out.emplace_back(YamlNode(tree_, tree_->children_[map.first + 2 * i]),
                             YamlNode(tree_, tree_->children_[map.first + 2 * i + 1]));
        }
    }
    return out;
}

// Collects a container's children on a stack while it is open and moves
// them into the tree, contiguous, when it closes.
class YamlTreeBuilder : public YAML::EventHandler {
public:
    explicit YamlTreeBuilder(YamlTree *tree) : tree_(tree) {}

    void OnDocumentStart(const YAML::Mark &) override {}
    void OnDocumentEnd() override {}

    void OnNull(const YAML::Mark &mark, YAML::anchor_t anchor) override
    {
        add(YamlTree::Kind::Null, mark, anchor);
    }

    void OnAlias(const YAML::Mark &mark, YAML::anchor_t) override
    {
        // kubectl never prints aliases, and each one multiplies what the
        // stages after this one read (2 KB of nested aliases: 800 MB)
        throw YAML::ParserException(mark, "aliases (*name) are not accepted: write the value out");
    }

    void OnScalar(const YAML::Mark &mark, const std::string &, YAML::anchor_t anchor,
                  const std::string &value) override
    {
        tree_->nodes_[add(YamlTree::Kind::Scalar, mark, anchor)].scalar = value;
    }

    void OnSequenceStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value) override
    {
        open(YamlTree::Kind::Sequence, mark, anchor);
    }
    void OnSequenceEnd() override { close(1); }

    void OnMapStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value) override
    {
        open(YamlTree::Kind::Map, mark, anchor);
    }
    void OnMapEnd() override { close(2); }

private:
    uint32_t add(YamlTree::Kind kind, const YAML::Mark &mark, YAML::anchor_t)
    {
        auto index = static_cast<uint32_t>(tree_->nodes_.size());
        YamlTree::Node node;
        node.kind = kind;
        node.line = mark.line;
        node.column = mark.column;
        tree_->nodes_.push_back(std::move(node));
        if (!open_.empty()) {
            pending_.push_back(index);
        }
        return index;
    }

    void open(YamlTree::Kind kind, const YAML::Mark &mark, YAML::anchor_t anchor)
    {
        uint32_t index = add(kind, mark, anchor);
        open_.push_back({index, pending_.size()});
    }

    void close(size_t per_entry)
    {
        Open top = open_.back();
        open_.pop_back();
        YamlTree::Node &node = tree_->nodes_[top.node];
        node.first = static_cast<uint32_t>(tree_->children_.size());
        node.count = static_cast<uint32_t>((pending_.size() - top.pending) / per_entry);
        tree_->children_.insert(tree_->children_.end(), pending_.begin() + top.pending,
                                pending_.begin() + top.pending + node.count * per_entry);
        pending_.resize(top.pending);
    }

    struct Open {
        uint32_t node;
        size_t pending;
    };

    YamlTree *tree_;
    std::vector<Open> open_;
    std::vector<uint32_t> pending_;
};

YamlTree YamlTree::parse(const std::string &text, const std::string &file, int line_offset)
{
    YamlTree tree;
    std::istringstream in(text);
    try {
        YAML::Parser parser(in);
        YamlTreeBuilder builder(&tree);
        parser.HandleNextDocument(builder);
    } catch (const YAML::Exception &e) {
        SourcePos p{std::make_shared<const std::string>(file), line_offset + e.mark.line + 1, e.mark.column + 1};
        throw InputError(p.text() + ": invalid YAML: " + e.msg);
    }
    return tree;
}

YamlScanPool::YamlScanPool(unsigned threads)
{
    for (unsigned i = 0; i < threads; i++) {
        threads_.emplace_back([this] { work(); });
    }
}

YamlScanPool::~YamlScanPool()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        tasks_.clear();  // their futures, if still held, report broken_promise
    }
    ready_.notify_all();
    for (std::thread &t : threads_) {
        t.join();
    }
}

std::future<YamlScanPool::Batch> YamlScanPool::submit(Batch batch, const std::string &file)
{
    std::packaged_task<Batch()> task([batch = std::move(batch), file]() mutable {
        for (YamlDocument &doc : batch) {
            if (doc.known) continue;
            try {
                doc.tree = YamlTree::parse(doc.text, file, doc.line_offset);
            } catch (const InputError &e) {
                doc.error = e.what();
                break;
            }
            doc.content = std::hash<std::string>{}(doc.text);
            // scanned: only the tree and its digest are needed now (a swap
            // frees the text; "= std::string()" keeps its capacity)
            std::string().swap(doc.text);
        }
        return std::move(batch);
    });
    std::future<Batch> result = task.get_future();
    if (threads_.empty()) {
        task();
        return result;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return result;
}

void YamlScanPool::work()
{
    for (;;) {
        std::packaged_task<Batch()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
            if (stopping_) {
                return;
            }
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();  // an exception lands in the future
    }
}

}  // namespace g2n
