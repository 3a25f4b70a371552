#include "render/nginx_text.h"

#include <cstdint>
#include <cstring>

namespace g2n::nginx {

namespace {

// Characters that mean nothing to ngx_conf_read_token outside quotes; a
// token of these alone is written bare, anything else is double-quoted.
bool bare_safe(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
           || std::strchr("_./:@%*+,=-", ch) != nullptr;
}

bool refused(unsigned char ch) { return ch == '\r' || ch == '\n' || ch == '\0'; }

// Inside double quotes ngx_conf_read_token turns \" into ", \\ into \ and
// \t \r \n into control characters, and keeps any other byte: doubling
// every backslash and escaping quotes gives back the text exactly.
std::string quote(std::string_view text, bool dollar_is_safe)
{
    bool bare = !text.empty();
    for (unsigned char ch : text) {
        if (refused(ch)) {
            throw RenderError("a value holds CR, LF or NUL and cannot be written to nginx configuration");
        }
        bare = bare && (bare_safe(ch) || (dollar_is_safe && ch == '$'));
    }
    std::string out;
    if (bare) {
        out.assign(text);
    } else {
        out.reserve(text.size() + 2);
        out += '"';
        for (char ch : text) {
            if (ch == '"' || ch == '\\') out += '\\';
            out += ch;
        }
        out += '"';
    }
    if (out.size() > kMaxTokenBytes) {
        throw RenderError("a value of " + std::to_string(text.size())
                          + " bytes is longer than nginx reads as one argument");
    }
    return out;
}

size_t quoted_size(std::string_view text, size_t dollar_size)
{
    size_t n = 2;
    for (unsigned char ch : text) {
        if (refused(ch)) return SIZE_MAX;
        n += ch == '"' || ch == '\\' ? 2 : ch == '$' ? dollar_size : 1;
    }
    return n;
}

bool is_name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'
           || ch == '.' || ch == '-';
}

const std::string kDollarReference = std::string("${") + kDollarVariable + "}";

}  // namespace

Name::Name(std::string text) : text_(std::move(text))
{
    if (text_.empty() || text_.size() > 1000) throw RenderError("an nginx name must have 1 to 1000 characters");
    for (unsigned char ch : text_) {
        if (!is_name_char(ch)) throw RenderError("\"" + text_ + "\" is not an nginx name");
    }
}

void Script::append(std::string_view text)
{
    if (text.empty()) return;
    unsigned char first = static_cast<unsigned char>(text[0]);
    if (open_variable_ != std::string::npos
        && ((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || (first >= '0' && first <= '9')
            || first == '_')) {
        raw_.insert(open_variable_ + 1, "{");
        raw_ += '}';
    }
    open_variable_ = std::string::npos;
    raw_ += text;
}

Script &Script::word(Word w)
{
    append(w.text());
    return *this;
}

Script &Script::name(const Name &n)
{
    append(n.text());
    return *this;
}

Script &Script::variable(const Name &n)
{
    for (unsigned char ch : n.text()) {
        if (ch == '.' || ch == '-') throw RenderError("\"" + n.text() + "\" is not a variable name");
    }
    append("$");
    open_variable_ = raw_.size() - 1;
    raw_ += n.text();
    return *this;
}

Script &Script::number(long n)
{
    append(std::to_string(n));
    return *this;
}

Script &Script::input(std::string_view text)
{
    std::string literal;
    for (char ch : text) {
        if (ch == '$') {
            literal += kDollarReference;
        } else {
            literal += ch;
        }
    }
    append(literal);
    return *this;
}

Token::Token(Word w) : text_(quote(w.text(), true)) {}
Token::Token(const Name &n) : text_(n.text()) {}
Token::Token(const Script &s) : text_(quote(s.raw(), true)) {}

Token Token::number(long n) { return Token(std::to_string(n)); }

Token Token::variable(const Name &n) { return Token(Script().variable(n)); }

Token Token::value(std::string_view input) { return Token(quote(input, false)); }

Token Token::map_key(std::string_view input)
{
    static const char *const special[] = {"default", "include", "hostnames", "volatile"};
    bool escape = !input.empty() && (input[0] == '~' || input[0] == '\\');
    for (const char *word : special) escape = escape || input == word;
    return Token(quote(escape ? "\\" + std::string(input) : std::string(input), false));
}

Token Token::map_regex(std::string_view regex)
{
    std::string key = "~";
    key += regex;
    return Token(quote(key, false));
}

bool fits_value(std::string_view input) { return quoted_size(input, 1) <= kMaxTokenBytes; }

std::string regex_quote(const std::string &text)
{
    std::string out;
    for (char ch : text) {
        if (std::strchr(".^$*+?()[]{}|\\", ch)) out += '\\';
        out += ch;
    }
    return out;
}

bool fits_script(std::string_view input) { return quoted_size(input, kDollarReference.size()) <= kMaxTokenBytes; }

void Writer::line(Word name, const Token *args, size_t count, const char *end)
{
    for (int i = 0; i < depth_; i++) out_ << "    ";
    out_ << name.text();
    for (size_t i = 0; i < count; i++) out_ << ' ' << args[i].text();
    out_ << end;
}

void Writer::directive(Word name, std::initializer_list<Token> args)
{
    line(name, args.begin(), args.size(), ";\n");
}

void Writer::directive(Word name, const std::vector<Token> &args)
{
    line(name, args.data(), args.size(), ";\n");
}

void Writer::open(Word name, std::initializer_list<Token> args)
{
    line(name, args.begin(), args.size(), " {\n");
    depth_++;
}

void Writer::open(Word name, const std::vector<Token> &args)
{
    line(name, args.data(), args.size(), " {\n");
    depth_++;
}

void Writer::close()
{
    depth_--;
    for (int i = 0; i < depth_; i++) out_ << "    ";
    out_ << "}\n";
}

void Writer::comment(Word text, std::initializer_list<Token> args)
{
    for (int i = 0; i < depth_; i++) out_ << "    ";
    out_ << "# " << text.text();
    for (const Token &t : args) out_ << ' ' << t.text();
    out_ << '\n';
}

void Writer::entry(const Token &key, std::initializer_list<Token> values)
{
    for (int i = 0; i < depth_; i++) out_ << "    ";
    out_ << key.text();
    for (const Token &t : values) out_ << ' ' << t.text();
    out_ << ";\n";
}

void Writer::open_if_equals(const Name &variable, const Token &value)
{
    for (int i = 0; i < depth_; i++) out_ << "    ";
    out_ << "if ($" << variable.text() << " = " << value.text() << ") {\n";
    depth_++;
}

void Writer::open_if_not_equals(const Name &variable, const Token &value)
{
    for (int i = 0; i < depth_; i++) out_ << "    ";
    out_ << "if ($" << variable.text() << " != " << value.text() << ") {\n";
    depth_++;
}

void Writer::blank() { out_ << '\n'; }

}  // namespace g2n::nginx
