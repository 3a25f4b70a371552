// The one way text reaches nginx configuration files. Render code writes
// directives through a Writer, whose arguments are Tokens; a Token can be
// made from the generator's own literal words, from numbers, from checked
// names, or from input through the escaping here, and from nothing else:
// there is no constructor from std::string. Whatever input holds, it
// becomes exactly one nginx token (ngx_conf_read_token's grammar), so no
// value can add, end or comment out a directive or a block.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace g2n::nginx {

// A value that cannot be one token (CR, LF or NUL, or longer than nginx
// reads as one argument). Parse and resolve refuse such values with the
// owner's condition first, using fits(); reaching render with one is a
// defect, and rendering stops rather than write it.
class RenderError : public std::logic_error {
public:
    explicit RenderError(const std::string &what) : std::logic_error(what) {}
};

// nginx reads a configuration through a 4,096-byte buffer and refuses a
// token that does not fit ("too long parameter"): a token, quotes and
// escapes included, stays below it with room to spare.
inline constexpr size_t kMaxTokenBytes = 4000;

// The *_hash_bucket_size nginx needs for keys of up to `longest_key`
// bytes, a multiple of 64: ngx_hash_init refuses a key whose element (a
// pointer, then the length and the key padded to a pointer) and the
// bucket's closing pointer do not fit ("you should increase ...").
inline constexpr size_t hash_bucket_size(size_t longest_key)
{
    size_t element = sizeof(void *) + (longest_key + 2 + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    return (element + sizeof(void *) + 63) / 64 * 64;
}

// The variable that holds a literal "$" (geo $gateway_tls_dollar, written
// once in http{}): input text in a directive that interpolates variables
// gets it in place of each "$".
inline constexpr const char *kDollarVariable = "gateway_tls_dollar";

// Text the generator itself wrote: only a string literal converts.
class Word {
public:
    template <size_t N>
    constexpr Word(const char (&text)[N]) : text_(text, N - 1) {}
    constexpr std::string_view text() const { return text_; }

private:
    std::string_view text_;
};

// An identifier the generator built (an upstream or variable name, made
// from validated object names): [A-Za-z0-9_.-] only, checked here.
class Name {
public:
    explicit Name(std::string text);
    const std::string &text() const { return text_; }

private:
    std::string text_;
};

// Text of an argument that nginx compiles as a script (a complex value:
// proxy_set_header, add_header, return, rewrite's replacement, map and
// split_clients values, proxy_pass): the generator's words and variable
// references, and input made literal ("$" becomes ${gateway_tls_dollar}).
class Script {
public:
    Script() = default;
    Script(Word w) { word(w); }
    Script &word(Word w);
    Script &name(const Name &n);
    Script &variable(const Name &n);  // $NAME
    Script &number(long n);
    Script &input(std::string_view text);
    const std::string &raw() const { return raw_; }

private:
    // $NAME followed by a name character reads as a longer name: the last
    // variable gets braces when what follows it would extend it
    void append(std::string_view text);
    std::string raw_;
    size_t open_variable_ = std::string::npos;  // where the last "$NAME" starts
};

class Token {
public:
    Token(Word w);
    template <size_t N>
    Token(const char (&text)[N]) : Token(Word(text)) {}
    Token(const Name &n);
    Token(const Script &s);
    static Token number(long n);
    // $NAME: a variable, defined (map, split_clients) or used whole
    static Token variable(const Name &n);
    // Input in an argument that nginx does not interpolate.
    static Token value(std::string_view input);
    // A literal key of a map block: "default", "include", "hostnames",
    // "volatile" and a leading "~" or "\" lose their meaning (the map
    // strips one leading backslash from a literal key).
    static Token map_key(std::string_view input);
    // A regular expression key of a map block ("~" + the expression); the
    // expression was compiled by the caller as nginx will compile it.
    static Token map_regex(std::string_view regex);

    const std::string &text() const { return text_; }

private:
    explicit Token(std::string text) : text_(std::move(text)) {}
    std::string text_;
};

// Whether input can become a token in the given form: no CR, LF or NUL,
// and short enough once escaped. Validation asks this before render does.
bool fits_value(std::string_view input);
// `text` as a PCRE literal (its metacharacters escaped), for regular
// expressions built around it.
std::string regex_quote(const std::string &text);
bool fits_script(std::string_view input);

// Configuration text a Writer made, kept to be written later (blocks that
// several locations share, collected while the locations are rendered).
class Fragment {
public:
    const std::string &text() const { return text_; }

private:
    friend class Writer;
    std::string text_;
};

// Writes directives and blocks, four spaces a level.
class Writer {
public:
    explicit Writer(std::ostream &out, int depth = 0) : out_(out), depth_(depth) {}

    // What `write` renders at `depth`, as a Fragment.
    template <typename F>
    static Fragment capture(int depth, F write);
    void fragment(const Fragment &f) { out_ << f.text_; }

    void directive(Word name, std::initializer_list<Token> args = {});
    void directive(Word name, const std::vector<Token> &args);
    void open(Word name, std::initializer_list<Token> args = {});
    void open(Word name, const std::vector<Token> &args);
    void close();
    // "# text" lines: the generator's words, then tokens (input escaped).
    void comment(Word text, std::initializer_list<Token> args = {});
    // KEY VALUE...; in a map or split_clients block
    void entry(const Token &key, std::initializer_list<Token> values);
    // if ($VARIABLE = VALUE) {
    void open_if_equals(const Name &variable, const Token &value);
    // if ($VARIABLE != VALUE) {
    void open_if_not_equals(const Name &variable, const Token &value);
    void blank();

private:
    void line(Word name, const Token *args, size_t count, const char *end);

    std::ostream &out_;
    int depth_;
};

template <typename F>
Fragment Writer::capture(int depth, F write)
{
    std::ostringstream text;
    Writer w(text, depth);
    write(w);
    Fragment f;
    f.text_ = text.str();
    return f;
}

}  // namespace g2n::nginx
