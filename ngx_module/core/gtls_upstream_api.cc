#include "gtls_upstream_api.h"

#include <arpa/inet.h>

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "gtls_spec.h"

namespace gtls {

namespace {

[[noreturn]] void refuse(const std::string &field, const std::string &what)
{
    throw ApiError(400, field + ": " + what);
}

enum class JsonType { Null, Bool, Number, String, Array, Object };

const char *type_name(JsonType t)
{
    switch (t) {
    case JsonType::Null: return "null";
    case JsonType::Bool: return "a boolean";
    case JsonType::Number: return "a number";
    case JsonType::String: return "a string";
    case JsonType::Array: return "an array";
    case JsonType::Object: return "an object";
    }
    return "a value";
}

unsigned bounded(std::string_view number, const std::string &field, unsigned low, unsigned high)
{
    const bool integer = !number.empty() && number.size() <= 10
                         && number.find_first_not_of("0123456789") == std::string_view::npos;
    const unsigned long long n = integer ? std::stoull(std::string(number)) : 0;
    if (!integer || n < low || n > high) {
        refuse(field, "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high) + ", not "
                          + std::string(number));
    }
    return static_cast<unsigned>(n);
}

bool valid_policy_name(const std::string &name)
{
    if (name.empty() || name.size() > kMaxApiPolicyName) return false;
    for (unsigned char c : name) {
        if (c < 0x20 || c >= 0x7f) return false;
    }
    return true;
}

// PEM text: BEGIN/END lines of one of `labels` each, base64 between,
// nothing else but blank lines (no headers: no encrypted key either);
// `what`: what a block is called in messages. The number of blocks.
size_t check_pem_blocks(const std::string &pem, const std::string &field, std::initializer_list<std::string_view> labels,
                        const char *what, size_t max_bytes)
{
    if (pem.size() > max_bytes) {
        refuse(field, "more than " + std::to_string(max_bytes) + " bytes");
    }
    auto labelled = [&](std::string_view line, std::string_view edge) {
        for (std::string_view label : labels) {
            if (line.size() == edge.size() + label.size() + 5 && line.substr(0, edge.size()) == edge
                && line.substr(edge.size(), label.size()) == label && line.substr(edge.size() + label.size()) == "-----") {
                return true;
            }
        }
        return false;
    };
    size_t blocks = 0, line_no = 0;
    bool inside = false;
    for (size_t at = 0; at < pem.size();) {
        size_t end = pem.find('\n', at);
        if (end == std::string::npos) end = pem.size();
        std::string_view line(pem.data() + at, end - at);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        at = end + 1;
        line_no++;
        const std::string where = " (line " + std::to_string(line_no) + ")";
        if (labelled(line, "-----BEGIN ")) {
            if (inside) refuse(field, "a PEM block begins inside another" + where);
            inside = true;
        } else if (labelled(line, "-----END ")) {
            if (!inside) refuse(field, "a PEM block ends that did not begin" + where);
            inside = false;
            blocks++;
        } else if (inside) {
            if (line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != std::string_view::npos
                || line.empty()) {
                refuse(field, std::string("a PEM ") + what + " holds something that is not base64" + where);
            }
        } else if (line.find_first_not_of(" \t") != std::string_view::npos) {
            std::string names;
            for (std::string_view label : labels) names += (names.empty() ? "" : " or ") + std::string(label);
            refuse(field, "only " + names + " PEM blocks may be given" + where);
        }
    }
    if (inside) refuse(field, "the last PEM block does not end");
    if (blocks == 0) refuse(field, std::string("holds no ") + what);
    return blocks;
}

void check_pem_certificates(const std::string &pem, const std::string &field, size_t max_bytes = kMaxApiCaBytes)
{
    check_pem_blocks(pem, field, {"CERTIFICATE"}, "certificate", max_bytes);
}

void check_pem_key(const std::string &pem, const std::string &field)
{
    if (check_pem_blocks(pem, field, {"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"}, "private key",
                         kMaxApiCertificateBytes) != 1) {
        refuse(field, "holds more than one private key");
    }
}

// The API's JSON, read as RapidJSON's SAX reader meets it: each token is
// checked where it stands (a stack of frames: the body, a section, an
// upstream, its servers, a server, a policy, its pins), counts and sizes
// as they grow, and only the typed result is kept, never a tree: a body
// costs about what it holds, and a refused one stops at its first fault.
class ApiReader {
public:
    // What the text is: a PUT body; one server list or one policy's trust
    // (kept across reloads); a GET list (read for a section and policies,
    // its other fields skipped)
    enum class Root { Update, Servers, Trust, Certificate, List };

    // `name`: the section a list is read for, the policy a trust is, or
    // the listener certificate
    ApiReader(Root root, std::string field, std::string name = "") : name_(std::move(name))
    {
        Frame f;
        f.kind = Kind::Root;
        f.field = std::move(field);
        f.root = root;
        frames_.push_back(std::move(f));
    }

    void read(std::string_view text)
    {
        rapidjson::MemoryStream memory(text.data(), text.size());
        rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(memory);
        stream_ = &in;
        text_ = text;
        rapidjson::Reader reader;
        constexpr unsigned kFlags =
            rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag | rapidjson::kParseNumbersAsStringsFlag;
        const rapidjson::ParseResult r = reader.Parse<kFlags>(in, *this);
        if (error_) throw *error_;
        if (r.IsError()) fail_at(r.Offset(), rapidjson::GetParseError_En(r.Code()));
        // RapidJSON reads a NUL as the end of the text
        if (in.Tell() < text.size()) fail_at(in.Tell(), "unexpected text after the JSON value");
    }

    ApiUpdate update;
    std::vector<UpstreamServer> servers;  // Root::Servers
    PolicyTrust trust;                    // Root::Trust
    ListenerCertificate certificate;      // Root::Certificate
    std::vector<UpstreamServers> listed;  // Root::List: the section's
    std::vector<std::string> pushed;      // Root::List: policies (or certificates) whose source is "api"
    std::vector<ListedRoutes> hosts;      // Root::List read for "routes": each table's hostnames

    // RapidJSON's handler
    bool Null() { return guard([&] { scalar(JsonType::Null, {}); }); }
    bool Bool(bool b) { return guard([&] { scalar(JsonType::Bool, b ? "true" : "false"); }); }
    bool Int(int) { return false; }  // numbers come as RawNumber
    bool Uint(unsigned) { return false; }
    bool Int64(int64_t) { return false; }
    bool Uint64(uint64_t) { return false; }
    bool Double(double) { return false; }
    bool RawNumber(const char *s, rapidjson::SizeType n, bool) { return guard([&] { scalar(JsonType::Number, {s, n}); }); }
    bool String(const char *s, rapidjson::SizeType n, bool)
    {
        return guard([&] {
            check_text({s, n});
            scalar(JsonType::String, {s, n});
        });
    }
    bool StartObject() { return guard([&] { open(JsonType::Object); }); }
    bool Key(const char *s, rapidjson::SizeType n, bool)
    {
        return guard([&] {
            check_text({s, n});
            Frame &f = frames_.back();
            f.key.assign(s, n);
            if (!f.seen.insert(f.key).second) fail_at(stream_->Tell(), "the key " + json_string(f.key) + " appears twice");
        });
    }
    bool EndObject(rapidjson::SizeType) { return guard([&] { close(); }); }
    bool StartArray() { return guard([&] { open(JsonType::Array); }); }
    bool EndArray(rapidjson::SizeType) { return guard([&] { close(); }); }

private:
    enum class Kind {
        Root, Body, Section, Upstream, Servers, Server, Policies, Policy, Pins, Sans, PolicyCertificate,
        Certificates, Certificate, ListBody, ListSection, ListUpstream, ListPolicies, ListPolicy, ListTables, ListTable, Skip
    };
    struct Frame {
        Kind kind = Kind::Skip;
        std::string field;            // for messages: upstreams["web"].servers[2]
        std::string key;              // an object's member being read
        std::set<std::string> seen;   // its keys
        size_t count = 0;             // an array's items
        Root root = Root::Update;
        // a server being read
        std::string address;
        bool has_address = false;
        UpstreamServer server;
        std::vector<UpstreamServer> *servers_to = nullptr;  // Servers: where they go
    };

    template <typename F>
    bool guard(F f)
    {
        try {
            f();
            return true;
        } catch (const ApiError &e) {
            error_ = e;
            return false;
        }
    }

    [[noreturn]] void fail_at(size_t offset, const std::string &what) const
    {
        throw ApiError(400, json_position(text_, offset) + ": " + what);
    }

    // no field holds a control byte but a PEM bundle's line breaks: one
    // would cut an address or a name short where C reads it
    void check_text(std::string_view text) const
    {
        for (unsigned char c : text) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
                fail_at(stream_->Tell(), "a control character in a string");
            }
        }
    }

    [[noreturn]] static void wrong_type(const std::string &field, JsonType want, JsonType got)
    {
        refuse(field, std::string("must be ") + type_name(want) + ", not " + type_name(got));
    }

    static void expect(const std::string &field, JsonType want, JsonType got)
    {
        if (got != want) wrong_type(field, want, got);
    }

    // The field a value stands at, counting an array's items; checks the
    // counts that depend on the frame
    std::string field_of_value(Frame &f)
    {
        switch (f.kind) {
        case Kind::Servers:
            if (++f.count > kMaxApiServers) {
                refuse(f.field, std::to_string(f.count) + " servers, more than " + std::to_string(kMaxApiServers));
            }
            return f.field + "[" + std::to_string(f.count - 1) + "]";
        case Kind::Pins:
            if (++f.count > kMaxApiPins) {
                refuse(f.field, std::to_string(f.count) + " pins, more than " + std::to_string(kMaxApiPins));
            }
            return f.field + "[" + std::to_string(f.count - 1) + "]";
        case Kind::Sans:
            if (++f.count > kMaxApiSans) {
                refuse(f.field, std::to_string(f.count) + " names, more than " + std::to_string(kMaxApiSans));
            }
            return f.field + "[" + std::to_string(f.count - 1) + "]";
        case Kind::Section:
        case Kind::ListSection:
        case Kind::Policies:
        case Kind::Certificates:
        case Kind::ListPolicies:
        case Kind::ListTables:
        case Kind::ListTable: return f.field + "[" + json_string(f.key) + "]";
        case Kind::Root:
        case Kind::Skip: return f.field;
        default: return f.field + "." + f.key;
        }
    }

    void push(Kind kind, std::string field)
    {
        // route tables (read by parse_route_update) nest deeper than servers
        const bool routes = frames_.size() > 1 && frames_[1].kind == Kind::Body && frames_[1].key == "routes";
        const size_t depth = routes ? kMaxRouteJsonDepth : kMaxApiJsonDepth;
        if (frames_.size() > depth) {
            fail_at(stream_->Tell(), "nested deeper than " + std::to_string(depth) + " levels");
        }
        Frame f;
        f.kind = kind;
        f.field = std::move(field);
        frames_.push_back(std::move(f));
    }

    // A value that is not a container: where it stands, what it sets
    void scalar(JsonType type, std::string_view text)
    {
        Frame &f = frames_.back();
        const std::string field = field_of_value(f);
        switch (f.kind) {
        case Kind::Server:
            if (f.key == "address") {
                expect(field, JsonType::String, type);
                f.address = std::string(text);
                f.has_address = true;
            } else if (f.key == "weight") {
                number(field, type);
                f.server.weight = bounded(text, field, 1, kMaxApiWeight);
            } else if (f.key == "max_conns") {
                number(field, type);
                f.server.max_conns = bounded(text, field, 0, kMaxApiMaxConns);
            } else if (f.key == "max_fails") {
                number(field, type);
                f.server.max_fails = bounded(text, field, 0, kMaxApiMaxFails);
            } else if (f.key == "fail_timeout") {
                number(field, type);
                f.server.fail_timeout = bounded(text, field, 0, kMaxApiFailTimeout);
            } else if (f.key == "down") {
                expect(field, JsonType::Bool, type);
                f.server.down = text == "true";
            } else {
                unknown_server_field(f);
            }
            return;
        case Kind::Policy:
            if (f.key == "ca") {
                expect(field, JsonType::String, type);
                if (text != "system") check_pem_certificates(std::string(text), field);
                trust_of_policy().ca = std::string(text);
                return;
            }
            if (f.key == "hostname") {
                expect(field, JsonType::String, type);
                std::string error;
                if (text.empty() || !parse_san_spec("dns:" + std::string(text), &error)) {
                    refuse(field, text.empty() ? "is empty" : error);
                }
                trust_of_policy().hostname = std::string(text);
                return;
            }
            if (f.key == "pins" || f.key == "subject_alt_names") wrong_type(field, JsonType::Array, type);
            if (f.key == "client_certificate") wrong_type(field, JsonType::Object, type);
            unknown_policy_field(f);
        case Kind::Pins: {
            expect(field, JsonType::String, type);
            std::string error;
            std::optional<Pin> pin = parse_pin_spec(std::string(text), &error);
            if (!pin) refuse(field, error);
            trust_of_policy().pins.push_back(pin->spec);
            return;
        }
        case Kind::Sans: {
            expect(field, JsonType::String, type);
            std::string error;
            if (!parse_san_spec(text, &error)) refuse(field, error);
            trust_of_policy().subject_alt_names->emplace_back(text);
            return;
        }
        case Kind::Certificate:
        case Kind::PolicyCertificate: {
            std::string &to = f.kind == Kind::Certificate
                                  ? (f.key == "key" ? certificate_of_listener().key : certificate_of_listener().certificate)
                                  : (f.key == "key" ? trust_of_policy().client_certificate->key
                                                    : trust_of_policy().client_certificate->certificate);
            if (f.key == "certificate") {
                expect(field, JsonType::String, type);
                check_pem_certificates(std::string(text), field, kMaxApiCertificateBytes);
                to = std::string(text);
                return;
            }
            if (f.key == "key") {
                expect(field, JsonType::String, type);
                check_pem_key(std::string(text), field);
                to = std::string(text);
                return;
            }
            unknown_certificate_field(f);
        }
        case Kind::ListPolicy:
            if (f.key == "source" && type == JsonType::String && text == "api") {
                pushed.push_back(frames_[frames_.size() - 2].key);
            }
            return;
        case Kind::ListBody:
            if (f.key == name_ || f.key == pushed_section()) wrong_type(f.key, JsonType::Object, type);
            return;
        case Kind::ListUpstream:
        case Kind::Skip: return;
        default: container_expected(f, field, type);
        }
    }

    static void number(const std::string &field, JsonType type) { expect(field, JsonType::Number, type); }

    [[noreturn]] static void unknown_server_field(const Frame &f)
    {
        refuse(f.field, "unknown field " + json_string(f.key)
                            + " (known: address, weight, max_conns, max_fails, fail_timeout, down)");
    }

    [[noreturn]] static void unknown_policy_field(const Frame &f)
    {
        refuse(f.field, "unknown field " + json_string(f.key)
                            + " (known: ca, pins, hostname, subject_alt_names, client_certificate)");
    }

    [[noreturn]] static void unknown_certificate_field(const Frame &f)
    {
        refuse(f.field, "unknown field " + json_string(f.key) + " (known: certificate, key)");
    }

    ListenerCertificate &certificate_of_listener()
    {
        return frames_[0].root == Root::Certificate ? certificate : update.certificates.back();
    }

    // where a list's entries of source "api" are read: its policies, or
    // (read for "certificates") its certificates
    std::string_view pushed_section() const
    {
        return name_ == "certificates" ? std::string_view(name_) : std::string_view("policies");
    }

    PolicyTrust &trust_of_policy()
    {
        return frames_[0].root == Root::Trust ? trust : update.policies.back();
    }

    // Where only a container may stand: the message for a scalar there
    [[noreturn]] void container_expected(const Frame &f, const std::string &field, JsonType type)
    {
        switch (f.kind) {
        case Kind::Root:
            wrong_type(field, f.root == Root::Servers ? JsonType::Array : JsonType::Object, type);
        case Kind::Body:
            body_key(f);
            wrong_type(f.key, JsonType::Object, type);
        case Kind::Upstream:
            if (f.key != "servers") refuse(f.field, "unknown field " + json_string(f.key) + " (known: servers)");
            wrong_type(field, JsonType::Array, type);
        default: wrong_type(field, JsonType::Object, type);
        }
    }

    static void body_key(const Frame &f)
    {
        std::string known;
        for (const char *section : kApiBodySections) {
            if (f.key == section) return;
            known += (known.empty() ? "" : ", ") + std::string(section);
        }
        refuse(f.field, "unknown field " + json_string(f.key) + " (known: " + known + ")");
    }

    void open(JsonType type)
    {
        Frame &f = frames_.back();
        const std::string field = field_of_value(f);
        switch (f.kind) {
        case Kind::Root:
            switch (f.root) {
            case Root::Update: expect(field, JsonType::Object, type); return push(Kind::Body, field);
            case Root::Servers:
                expect(field, JsonType::Array, type);
                push(Kind::Servers, field);
                frames_.back().servers_to = &servers;
                return;
            case Root::Trust:
                expect(field, JsonType::Object, type);
                trust.policy = name_;
                return push(Kind::Policy, field);
            case Root::Certificate:
                expect(field, JsonType::Object, type);
                certificate.name = name_;
                return push(Kind::Certificate, field);
            case Root::List: expect(field, JsonType::Object, type); return push(Kind::ListBody, field);
            }
            return;
        case Kind::Body:
            body_key(f);
            expect(f.key, JsonType::Object, type);
            if (f.key == "routes") {
                update.has_routes = true;  // parse_route_update's
                return push(Kind::Skip, f.key);
            }
            if (f.key == "certificates") return push(Kind::Certificates, f.key);
            return push(f.key == "policies" ? Kind::Policies : Kind::Section, f.key);
        case Kind::Certificates:
            expect(field, JsonType::Object, type);
            if (f.seen.size() > kMaxApiCertificates) {
                refuse("certificates", "more than " + std::to_string(kMaxApiCertificates) + " certificates");
            }
            if (!is_api_name(f.key)) refuse(field, "is not a certificate name");
            update.certificates.push_back({f.key, {}, {}});
            return push(Kind::Certificate, field);
        case Kind::Certificate:
            if (f.key == "certificate" || f.key == "key") wrong_type(field, JsonType::String, type);
            unknown_certificate_field(f);
        case Kind::Section: {
            expect(field, JsonType::Object, type);
            const std::string section = f.field;
            if (f.seen.size() > kMaxApiUpstreams) refuse(section, "more than " + std::to_string(kMaxApiUpstreams) + " " + section);
            if (!is_api_name(f.key)) refuse(field, "is not an upstream name");
            std::vector<UpstreamServers> &to = section == "upstreams" ? update.upstreams : update.stream_upstreams;
            to.push_back({f.key, {}});
            return push(Kind::Upstream, field);
        }
        case Kind::Upstream: {
            if (f.key != "servers") refuse(f.field, "unknown field " + json_string(f.key) + " (known: servers)");
            expect(field, JsonType::Array, type);
            const bool stream = frames_[frames_.size() - 2].field == "stream_upstreams";
            std::vector<UpstreamServers> &to = stream ? update.stream_upstreams : update.upstreams;
            push(Kind::Servers, field);
            frames_.back().servers_to = &to.back().servers;
            return;
        }
        case Kind::Servers: {
            expect(field, JsonType::Object, type);
            std::vector<UpstreamServer> *to = f.servers_to;
            push(Kind::Server, field);
            frames_.back().servers_to = to;
            return;
        }
        case Kind::Server:
            if (f.key == "address") wrong_type(field, JsonType::String, type);
            if (f.key == "down") wrong_type(field, JsonType::Bool, type);
            if (f.key == "weight" || f.key == "max_conns" || f.key == "max_fails" || f.key == "fail_timeout") {
                wrong_type(field, JsonType::Number, type);
            }
            unknown_server_field(f);
        case Kind::Policies:
            expect(field, JsonType::Object, type);
            if (f.seen.size() > kMaxApiPolicies) refuse("policies", "more than " + std::to_string(kMaxApiPolicies) + " policies");
            if (!valid_policy_name(f.key)) refuse(field, "is not a policy name");
            update.policies.push_back({});
            update.policies.back().policy = f.key;
            return push(Kind::Policy, field);
        case Kind::Policy:
            if (f.key == "pins") {
                expect(field, JsonType::Array, type);
                return push(Kind::Pins, field);
            }
            if (f.key == "subject_alt_names") {
                expect(field, JsonType::Array, type);
                trust_of_policy().subject_alt_names.emplace();
                return push(Kind::Sans, field);
            }
            if (f.key == "client_certificate") {
                expect(field, JsonType::Object, type);
                trust_of_policy().client_certificate.emplace();
                return push(Kind::PolicyCertificate, field);
            }
            if (f.key == "ca" || f.key == "hostname") wrong_type(field, JsonType::String, type);
            unknown_policy_field(f);
        case Kind::PolicyCertificate:
            if (f.key == "certificate" || f.key == "key") wrong_type(field, JsonType::String, type);
            unknown_certificate_field(f);
        case Kind::Pins:
        case Kind::Sans: wrong_type(field, JsonType::String, type);
        case Kind::ListBody:
            if (f.key == name_ || f.key == pushed_section()) {
                expect(f.key, JsonType::Object, type);
                if (f.key == pushed_section()) return push(Kind::ListPolicies, f.key);
                return push(name_ == "routes" ? Kind::ListTables : Kind::ListSection, f.key);
            }
            return push(Kind::Skip, field);
        case Kind::ListTables: expect(field, JsonType::Object, type); return push(Kind::ListTable, field);
        case Kind::ListTable:
            expect(field, JsonType::Object, type);
            hosts.push_back({frames_[frames_.size() - 2].key, f.key});
            return push(Kind::Skip, field);
        case Kind::ListSection:
            expect(field, JsonType::Object, type);
            listed.push_back({f.key, {}});
            return push(Kind::ListUpstream, field);
        case Kind::ListUpstream:
            if (f.key == "servers") {
                expect(field, JsonType::Array, type);
                push(Kind::Servers, field);
                frames_.back().servers_to = &listed.back().servers;
                return;
            }
            return push(Kind::Skip, field);
        case Kind::ListPolicies: expect(field, JsonType::Object, type); return push(Kind::ListPolicy, field);
        case Kind::ListPolicy:
        case Kind::Skip: return push(Kind::Skip, field);
        }
    }

    // The end of an object or an array: what it had to hold
    void close()
    {
        Frame f = std::move(frames_.back());
        frames_.pop_back();
        switch (f.kind) {
        case Kind::Body:
            if (f.seen.empty()) {
                std::string sections;
                const size_t n = std::size(kApiBodySections);
                for (size_t i = 0; i < n; i++) {
                    sections += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + json_string(kApiBodySections[i]);
                }
                refuse("the body", sections + " is required");
            }
            return;
        case Kind::Certificates:
            if (f.seen.empty()) refuse(f.field, "names no certificate");
            return;
        case Kind::Certificate:
        case Kind::PolicyCertificate:
            if (!f.seen.count("certificate") || !f.seen.count("key")) {
                refuse(f.field, "\"certificate\" and \"key\" are both required");
            }
            return;
        case Kind::Section:
            if (f.seen.empty()) refuse(f.field, "names no upstream");
            return;
        case Kind::Policies:
            if (f.seen.empty()) refuse(f.field, "names no policy");
            return;
        case Kind::Upstream:
            if (f.seen.empty()) refuse(f.field, "\"servers\" is required");
            return;
        case Kind::Server: {
            if (!f.has_address) refuse(f.field, "\"address\" is required");
            UpstreamServer s = parse_server_address(f.address, f.field + ".address");
            s.weight = f.server.weight;
            s.max_conns = f.server.max_conns;
            s.max_fails = f.server.max_fails;
            s.fail_timeout = f.server.fail_timeout;
            s.down = f.server.down;
            f.servers_to->push_back(std::move(s));
            return;
        }
        case Kind::Policy: {
            const PolicyTrust &t = frames_.empty() || frames_.back().kind == Kind::Root ? trust : update.policies.back();
            if (t.ca.empty() && t.pins.empty()) {
                refuse(f.field, "a policy verifies against \"ca\", \"pins\" or both; neither was given");
            }
            return;
        }
        default: return;
        }
    }

    std::vector<Frame> frames_;
    std::string name_;
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> *stream_ = nullptr;
    std::string_view text_;
    std::optional<ApiError> error_;
};

}  // namespace

bool is_api_name(std::string_view name)
{
    if (name.empty() || name.size() > kMaxApiUpstreamName) return false;
    for (unsigned char c : name) {
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '{' || c == '}' || c == ';') return false;
    }
    return true;
}

namespace {

// What is wrong with an address (IP literals only), if anything; its
// family, bytes and port into *s. No allocation: upstreams are checked
// for the API at every change (bool is_server_address).
enum class AddressFault { None, Byte, Ipv6Form, Ipv6, NoPort, Ipv4, Port };

AddressFault read_server_address(std::string_view text, UpstreamServer *s, std::string_view *host)
{
    for (unsigned char c : text) {
        if (c <= 0x20 || c >= 0x7f) return AddressFault::Byte;
    }
    std::string_view port;
    if (!text.empty() && text[0] == '[') {
        const size_t close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
            return AddressFault::Ipv6Form;
        }
        *host = text.substr(1, close - 1);
        port = text.substr(close + 2);
        s->family = 6;
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) return AddressFault::NoPort;
        *host = text.substr(0, colon);
        port = text.substr(colon + 1);
        s->family = 4;
    }
    char literal[INET6_ADDRSTRLEN + 1] = {};
    if (host->size() >= sizeof literal
        || (host->copy(literal, host->size()), inet_pton(s->family == 6 ? AF_INET6 : AF_INET, literal, s->ip.data()) != 1)) {
        return s->family == 6 ? AddressFault::Ipv6 : AddressFault::Ipv4;
    }
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
        return AddressFault::Port;
    }
    unsigned long p = 0;
    for (char c : port) p = p * 10 + static_cast<unsigned long>(c - '0');
    if (p < 1 || p > 65535) return AddressFault::Port;
    s->port = static_cast<uint16_t>(p);
    return AddressFault::None;
}

}  // namespace

bool is_server_address(std::string_view text)
{
    UpstreamServer s;
    std::string_view host;
    return read_server_address(text, &s, &host) == AddressFault::None;
}

UpstreamServer parse_server_address(std::string_view text, const std::string &field)
{
    UpstreamServer s;
    std::string_view host;
    switch (read_server_address(text, &s, &host)) {
    case AddressFault::None: break;
    case AddressFault::Byte: refuse(field, json_string(text) + " holds a byte no address has");
    case AddressFault::Ipv6Form: refuse(field, json_string(text) + " is not \"[IPv6]:PORT\"");
    case AddressFault::Ipv6: refuse(field, json_string(text) + ": " + json_string(host) + " is not an IPv6 address");
    case AddressFault::NoPort: refuse(field, json_string(text) + " has no port (ADDRESS:PORT)");
    case AddressFault::Ipv4:
        refuse(field, json_string(text) + ": " + json_string(host)
                          + " is not an IPv4 address (IP literals only: nothing is resolved at run time;"
                            " IPv6 goes in brackets)");
    case AddressFault::Port: refuse(field, json_string(text) + ": the port must be 1 to 65535");
    }
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(s.family == 6 ? AF_INET6 : AF_INET, s.ip.data(), buf, sizeof buf);
    const std::string port = std::to_string(s.port);
    s.address = s.family == 6 ? "[" + std::string(buf) + "]:" + port : std::string(buf) + ":" + port;
    return s;
}

ApiUpdate parse_api_update(std::string_view body)
{
    ApiReader reader(ApiReader::Root::Update, "the body");
    reader.read(body);
    return std::move(reader.update);
}

PolicyTrust parse_policy_trust(std::string_view json, const std::string &policy)
{
    ApiReader reader(ApiReader::Root::Trust, "policies[" + json_string(policy) + "]", policy);
    reader.read(json);
    return std::move(reader.trust);
}

std::vector<ListedRoutes> listed_route_hosts(std::string_view list)
{
    ApiReader reader(ApiReader::Root::List, "the list", "routes");
    reader.read(list);
    return std::move(reader.hosts);
}

std::vector<std::string> pushed_policies(std::string_view list)
{
    ApiReader reader(ApiReader::Root::List, "the list");
    reader.read(list);
    return std::move(reader.pushed);
}

std::vector<std::string> pushed_certificates(std::string_view list)
{
    ApiReader reader(ApiReader::Root::List, "the list", "certificates");
    reader.read(list);
    return std::move(reader.pushed);
}

std::vector<UpstreamServers> listed_servers(std::string_view list, std::string_view section)
{
    ApiReader reader(ApiReader::Root::List, "the list", std::string(section));
    reader.read(list);
    return std::move(reader.listed);
}

ListenerCertificate parse_listener_certificate(std::string_view json, const std::string &name)
{
    ApiReader reader(ApiReader::Root::Certificate, "certificates[" + json_string(name) + "]", name);
    reader.read(json);
    return std::move(reader.certificate);
}

std::vector<UpstreamServer> parse_server_list(std::string_view json)
{
    ApiReader reader(ApiReader::Root::Servers, "servers");
    reader.read(json);
    return std::move(reader.servers);
}

uint64_t server_list_fingerprint(const std::vector<UpstreamServer> &servers)
{
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](std::string_view bytes) {
        for (unsigned char c : bytes) {
            h ^= c;
            h *= 0x100000001b3ull;
        }
        h ^= 0xff;  // a field separator no text byte can fake
        h *= 0x100000001b3ull;
    };
    for (const UpstreamServer &s : servers) {
        mix(s.address);
        for (unsigned n : {s.weight, s.max_conns, s.max_fails, s.fail_timeout, static_cast<unsigned>(s.down)}) {
            mix(std::to_string(n));
        }
    }
    return h;
}

}  // namespace gtls
