// libFuzzer target: the upstream API's route bodies. Whatever is accepted
// must read back the same from what the module keeps of it, every match
// must name an action that exists, and requests made from the rules' own
// paths (and the fuzzed text) must match without crashing, each choice one
// of the entry's own, a redirect's Location holding no byte a header line
// may not, request header edits sending no empty field and no field a
// route may not touch (framing, Via); nothing may throw anything but
// gtls::ApiError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gtls_http_fields.h"
#include "gtls_routes.h"
#include "gtls_routes_json.h"

namespace {

struct Request : gtls::RouteRequest {
    std::optional<std::string_view> header(std::string_view) const override { return value; }
    std::optional<std::string_view> value;
};

void match_all(const gtls::HostRoutes &h, std::string_view text)
{
    for (const gtls::RouteMatch &m : h.matches()) {
        if (m.action >= h.actions().size()) std::abort();
        for (std::string_view path : {std::string_view(m.path), text}) {
            Request r;
            r.method = m.method.empty() ? std::string_view("GET") : std::string_view(m.method);
            r.path = path;
            r.args = text;
            r.value = text;
            gtls::RouteChoice c = h.match(r);
            if (c.match != nullptr && (c.match < h.matches().data() || c.match >= h.matches().data() + h.matches().size())) std::abort();
            if (c.match != nullptr && c.action != &h.actions()[c.match->action]) std::abort();
            // a Location never carries what would end or split a header line
            if (c.action != nullptr && c.action->redirect) {
                const gtls::RequestTarget target{"http", text, path, text, 8080, text, text};
                for (unsigned char ch : gtls::redirect_location(*c.action->redirect, *c.match, target)) {
                    if (ch <= 0x20 || ch >= 0x7f) std::abort();
                }
            }
        }
    }
}

// Every action's header edits over fields of the fuzzed text's names
void edit_all(const gtls::HostRoutes &h, std::string_view text)
{
    const std::vector<gtls::HeaderField> fields{{"Host", text}, {text, "v"}, {"X-A", text}, {"x-a", "w"}};
    for (const gtls::RouteAction &a : h.actions()) {
        for (size_t b = 0; b <= a.backends.size(); b++) {
            const gtls::WeightedBackend *backend = b < a.backends.size() ? &a.backends[b] : nullptr;
            const gtls::HeaderEdits e = gtls::edit_request_headers(fields, a, backend);
            if (e.dropped.size() != fields.size()) std::abort();
            if (!gtls::edits_request_headers(a, backend) && (!e.appended.empty() || e.dropped != std::vector<bool>(fields.size(), false))) std::abort();
            for (const gtls::HeaderValue &f : e.appended) {
                if (f.value.empty() || !gtls::is_header_name(f.name) || gtls::is_connection_header(f.name)
                    || gtls::is_gateway_request_header(f.name)) {
                    std::abort();
                }
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string body(reinterpret_cast<const char *>(data), size);
    try {
        for (const gtls::TableUpdate &t : gtls::parse_route_update(body)) {
            gtls::RouteTable table;
            for (const gtls::HostUpdate &u : t.hosts) {
                if (u.routes == nullptr) {
                    table.remove(u.host);
                    continue;
                }
                const std::string kept = gtls::host_routes_json(*u.routes);
                if (gtls::host_routes_json(*gtls::parse_host_routes(kept, u.host)) != kept) std::abort();
                match_all(*u.routes, body);
                edit_all(*u.routes, body);
                table.replace(u.routes);
                if (table.find(u.host == "*" ? "any.test" : u.host[0] == '*' ? "x" + u.host.substr(1) : u.host) == nullptr) {
                    std::abort();
                }
            }
        }
    } catch (const gtls::ApiError &) {
    }
    return 0;
}
