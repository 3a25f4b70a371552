// The parts of http.conf's locations, shared by render/http.cc,
// render/locations.cc and render/filters.cc (private to render/).
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "render/render.h"

namespace g2n {

// http-level blocks that locations share: split_clients for weighted
// backends, maps that append to request headers or test conditions. Each
// distinct block is written once and named by its variable.
struct Splits {
    std::ostringstream text;
    std::map<std::string, std::string> var_by_body;

    // `head` (map, split_clients) over `source` with `body`: its variable
    nginx::Name variable(const char *kind, nginx::Word head, const nginx::Token &source,
                         const nginx::Fragment &body)
    {
        std::string key = std::string(kind) + "\n" + source.text() + "\n" + body.text();
        auto [it, added] = var_by_body.emplace(std::move(key), std::string(kind) + "_" + std::to_string(var_by_body.size() + 1));
        nginx::Name name(it->second);
        if (added) {
            nginx::Writer w(text);
            w.open(head, {source, nginx::Token::variable(name)});
            w.fragment(body);
            w.close();
            w.blank();
        }
        return name;
    }

    // The module's exact share (gateway_tls_share) for OWNER (a place
    // that alone counts its requests): a variable of its own, "1" for N
    // of every D requests
    nginx::Name share(const char *kind, const std::string &owner, int numerator, int denominator)
    {
        std::string key = std::string(kind) + "\n" + owner;
        auto [it, added] = var_by_body.emplace(std::move(key), std::string(kind) + "_" + std::to_string(var_by_body.size() + 1));
        nginx::Name name(it->second);
        if (added) {
            nginx::Writer w(text);
            w.directive("gateway_tls_share", {nginx::Token::variable(name),
                                              nginx::Token::value(std::to_string(numerator) + "/" + std::to_string(denominator))});
            w.blank();
        }
        return name;
    }
};

// Via on what this gateway proxies, and whether a request's Via names it
extern const nginx::Name kVia;
extern const nginx::Name kLoop;

// The URL scheme and upstream of one backend (https://NAME, grpcs://NAME).
nginx::Script scheme(const WeightedUpstream &b);
// One directive of each module the location goes out by (proxy_X, grpc_X).
std::vector<nginx::Word> per_module(const PassModules &m, const nginx::Word &proxy, const nginx::Word &grpc);
// What proxy_pass takes for a set of weighted backends: the upstream URL,
// or a split_clients variable over them ("" stands for an invalid share:
// then `failed_split` names the variable to test).
nginx::Script proxy_target(Splits &splits, const std::vector<WeightedUpstream> &backends,
                           std::optional<nginx::Name> *failed_split = nullptr);
const RouteFilter *filter_of(const Location &l, FilterType type);
void render_path_rewrite(nginx::Writer &w, const Location &l, const PathModifier &p, bool break_flag);
void render_request_headers(nginx::Writer &w, Splits &shared, const Location &l, const PassModules &modules);
void render_response_headers(nginx::Writer &w, const Location &l, const PassModules &modules);
void render_cors(nginx::Writer &w, Splits &shared, const Location &l, const PassModules &modules);
void render_redirect(nginx::Writer &w, const Server &s, const Location &l, const RouteFilter &r);
void render_timeouts(nginx::Writer &w, const Location &l, const PassModules &modules);
void render_retry(nginx::Writer &w, const Location &l, const PassModules &modules);
// The named location render_retry's error_page sends to, in a server with retries.
void render_retries_exhausted(nginx::Writer &w, const Server &s);
std::string mirror_uri(size_t n);
void render_mirror_locations(nginx::Writer &w, Splits &splits, const Server &s, const std::vector<const Mirror *> &mirrors);
nginx::Name backend_split(Splits &splits, const std::vector<WeightedUpstream> &backends, bool *failed);
nginx::Name conditional_target(Splits &splits, const Location &l);
void render_location(nginx::Writer &w, Splits &splits, const Server &s, const Location &l,
                     std::vector<const Mirror *> *mirrors);

}  // namespace g2n
