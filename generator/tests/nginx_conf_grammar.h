// nginx configuration text read back as nginx reads it: the token rules of
// ngx_conf_read_token (src/core/ngx_conf_file.c) and the directive tree
// they give. The property tests and the fuzz target compare the tree a
// hostile value renders to with the tree a benign value renders to.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace g2n_test {

struct ConfDirective {
    std::vector<std::string> args;  // args[0] is the name
    bool block = false;
    std::vector<ConfDirective> children;
};

struct ConfTree {
    std::vector<ConfDirective> directives;
    std::string error;  // what nginx would refuse ("" when none)
};

namespace conf_grammar_detail {

// One token as ngx_conf_read_token copies it: \" \' \\ lose the backslash,
// \t \r \n become control characters, any other byte is kept.
inline std::string unescape(std::string_view raw)
{
    std::string out;
    for (size_t i = 0; i < raw.size(); i++) {
        if (raw[i] == '\\' && i + 1 < raw.size()) {
            char next = raw[i + 1];
            if (next == '"' || next == '\'' || next == '\\') {
                out += next;
                i++;
                continue;
            }
            if (next == 't' || next == 'r' || next == 'n') {
                out += next == 't' ? '\t' : next == 'r' ? '\r' : '\n';
                i++;
                continue;
            }
        }
        out += raw[i];
    }
    return out;
}

enum class Event { Directive, BlockStart, BlockDone, End, Error };

class Reader {
public:
    explicit Reader(std::string_view text) : text_(text) {}

    // The next directive's words and how it ends, as ngx_conf_read_token.
    Event next(std::vector<std::string> *args, std::string *error)
    {
        args->clear();
        bool last_space = true, need_space = false, sharp_comment = false, variable = false;
        bool quoted = false, s_quoted = false, d_quoted = false;
        size_t start = pos_;
        for (;;) {
            if (pos_ >= text_.size()) {
                if (!args->empty() || !last_space) {
                    *error = "unexpected end of file, expecting \";\" or \"}\"";
                    return Event::Error;
                }
                return Event::End;
            }
            char ch = text_[pos_++];
            if (ch == '\n') {
                if (sharp_comment) sharp_comment = false;
            }
            if (sharp_comment) continue;
            if (quoted) {
                quoted = false;
                continue;
            }
            if (need_space) {
                if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
                    last_space = true;
                    need_space = false;
                    continue;
                }
                if (ch == ';') return Event::Directive;
                if (ch == '{') return Event::BlockStart;
                if (ch == ')') {
                    last_space = true;
                    need_space = false;
                } else {
                    *error = std::string("unexpected \"") + ch + "\"";
                    return Event::Error;
                }
            }
            if (last_space) {
                start = pos_ - 1;
                if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') continue;
                switch (ch) {
                case ';':
                case '{':
                    if (args->empty()) {
                        *error = std::string("unexpected \"") + ch + "\"";
                        return Event::Error;
                    }
                    return ch == '{' ? Event::BlockStart : Event::Directive;
                case '}':
                    if (!args->empty()) {
                        *error = "unexpected \"}\"";
                        return Event::Error;
                    }
                    return Event::BlockDone;
                case '#':
                    sharp_comment = true;
                    continue;
                case '\\':
                    quoted = true;
                    last_space = false;
                    continue;
                case '"':
                    start++;
                    d_quoted = true;
                    last_space = false;
                    continue;
                case '\'':
                    start++;
                    s_quoted = true;
                    last_space = false;
                    continue;
                case '$':
                    variable = true;
                    last_space = false;
                    continue;
                default:
                    last_space = false;
                }
            } else {
                if (ch == '{' && variable) continue;
                variable = false;
                if (ch == '\\') {
                    quoted = true;
                    continue;
                }
                if (ch == '$') {
                    variable = true;
                    continue;
                }
                bool found = false;
                size_t end = pos_ - 1;
                if (d_quoted) {
                    if (ch == '"') {
                        d_quoted = false;
                        need_space = true;
                        found = true;
                    }
                } else if (s_quoted) {
                    if (ch == '\'') {
                        s_quoted = false;
                        need_space = true;
                        found = true;
                    }
                } else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == ';' || ch == '{') {
                    last_space = true;
                    found = true;
                }
                if (found) {
                    args->push_back(unescape(text_.substr(start, end - start)));
                    if (ch == ';') return Event::Directive;
                    if (ch == '{') return Event::BlockStart;
                }
            }
        }
    }

private:
    std::string_view text_;
    size_t pos_ = 0;
};

inline bool parse_block(Reader &reader, std::vector<ConfDirective> *out, bool top, std::string *error)
{
    std::vector<std::string> args;
    for (;;) {
        Event e = reader.next(&args, error);
        switch (e) {
        case Event::Error:
            return false;
        case Event::End:
            if (!top) {
                *error = "unexpected end of file, expecting \"}\"";
                return false;
            }
            return true;
        case Event::BlockDone:
            if (top) {
                *error = "unexpected \"}\"";
                return false;
            }
            return true;
        case Event::Directive:
            out->push_back({args, false, {}});
            break;
        case Event::BlockStart: {
            ConfDirective d{args, true, {}};
            if (!parse_block(reader, &d.children, false, error)) return false;
            out->push_back(std::move(d));
            break;
        }
        }
    }
}

}  // namespace conf_grammar_detail

inline ConfTree read_conf(std::string_view text)
{
    ConfTree tree;
    conf_grammar_detail::Reader reader(text);
    if (!conf_grammar_detail::parse_block(reader, &tree.directives, true, &tree.error)) tree.directives.clear();
    return tree;
}

// The shape of a tree: names, argument counts and nesting, as the set of
// distinct child shapes at each level (an input value may add or remove a
// block like its peers, or move it, as a name sorts elsewhere; an injected
// directive, argument or block is a shape that was not there).
// Inside map, split_clients and geo the first word is a key, not a
// directive: every key is "<key>" but the words those blocks treat
// specially.
inline bool keyed_block(const ConfDirective &d)
{
    return d.block && !d.args.empty() && (d.args[0] == "map" || d.args[0] == "split_clients" || d.args[0] == "geo");
}

inline std::string directive_name(const ConfDirective &d, bool keyed)
{
    if (d.args.empty()) return "?";
    const std::string &word = d.args[0];
    if (!keyed || word == "default" || word == "include" || word == "hostnames" || word == "volatile") return word;
    return "<key>";
}

// In an upstream, "server ADDR" and "server 127.0.0.1:1 down" (no ready
// endpoint) are one shape: where endpoints are is not syntax.
// `upstream_contents` false: every upstream block reads as empty (what
// Services and EndpointSlices may change: endpoints, and an upstream that
// has none is rendered down, without its policy).
inline std::string conf_shape(const std::vector<ConfDirective> &directives, bool keyed = false, bool upstream = false,
                              bool upstream_contents = true)
{
    std::vector<std::string> parts;
    for (const ConfDirective &d : directives) {
        std::string part = directive_name(d, keyed);
        if (!(upstream && part == "server")) part += "/" + std::to_string(d.args.size());
        if (d.block) {
            bool is_upstream = !d.args.empty() && d.args[0] == "upstream";
            part += "{";
            if (!is_upstream || upstream_contents) {
                part += conf_shape(d.children, keyed_block(d), is_upstream, upstream_contents);
            }
            part += "}";
        }
        parts.push_back(part);
    }
    std::sort(parts.begin(), parts.end());
    parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
    std::string out;
    for (const std::string &p : parts) out += p + ";";
    return out;
}

// Every directive name in the tree, with the names of its enclosing blocks:
// "http>server>location>proxy_pass".
inline void conf_names(const std::vector<ConfDirective> &directives, const std::string &context,
                       std::vector<std::string> *out, bool keyed = false)
{
    for (const ConfDirective &d : directives) {
        std::string name = context + directive_name(d, keyed);
        out->push_back(name);
        if (d.block) conf_names(d.children, name + ">", out, keyed_block(d));
    }
}

}  // namespace g2n_test
