// nginx.conf: the modules, the worker and event settings, and the
// includes of http.conf and stream.conf.
#include "render/render.h"

#include <sstream>

namespace g2n {

std::vector<nginx::Token> resolver_arguments(const std::string &resolver);

nginx::Token hash_bucket_size(size_t longest_key)
{
    return nginx::Token::number(static_cast<long>(nginx::hash_bucket_size(longest_key)));
}

std::string render_nginx_conf(const Plan &plan, const Options &o)
{
    std::ostringstream out;
    out << kHeader;
    nginx::Writer w(out);
    w.comment("Run: nginx -p OUTDIR -c nginx.conf");
    w.blank();
    w.directive("load_module", {nginx::Token::value(o.module_dir + "/ngx_http_gateway_tls_module.so")});
    if (!plan.stream_servers.empty()) {
        // TLS listeners: nginx's stream module, then ours
        if (!o.stream_module.empty()) w.directive("load_module", {nginx::Token::value(o.stream_module)});
        w.directive("load_module", {nginx::Token::value(o.module_dir + "/ngx_stream_gateway_tls_module.so")});
    }
    w.blank();
    w.directive("worker_processes", {"auto"});
    // each connection is a descriptor, and a proxied one is two
    w.directive("worker_rlimit_nofile", {"16384"});
    w.directive("pid", {"nginx.pid"});
    w.directive("error_log", {"logs/error.log", "notice"});
    w.blank();
    w.open("events");
    // a client's connection and its upstream's, or a UDP client's datagram
    // session (its address and port) and its upstream's, which lasts until
    // it is idle: 4,096 clients a worker, where 1,024 connections were
    // used up by a burst of 500 UDP clients
    w.directive("worker_connections", {"8192"});
    w.close();
    w.blank();
    w.open("http");
    w.directive("access_log", {"logs/access.log"});
    w.directive("client_body_temp_path", {"temp/client_body"});
    w.directive("proxy_temp_path", {"temp/proxy"});
    w.directive("fastcgi_temp_path", {"temp/fastcgi"});
    w.directive("uwsgi_temp_path", {"temp/uwsgi"});
    w.directive("scgi_temp_path", {"temp/scgi"});
    // server names and header names are the tenants': nginx's hashes of
    // them must take the longest that validation lets through
    w.directive("server_names_hash_bucket_size", {hash_bucket_size(kMaxHostnameBytes)});
    w.directive("proxy_headers_hash_bucket_size", {hash_bucket_size(kMaxHeaderNameBytes)});
    // before any map: the SNI maps of server names (misdirected requests)
    w.directive("map_hash_bucket_size", {hash_bucket_size(kMaxHostnameBytes)});
    if (!o.resolver.empty()) w.directive("resolver", resolver_arguments(o.resolver));
    w.blank();
    w.directive("include", {"http.conf"});
    w.close();
    if (!plan.stream_servers.empty()) {
        w.blank();
        w.open("stream");
        // before any map, which fixes the size: the SNI maps of TLSRoute hostnames
        w.directive("map_hash_bucket_size", {hash_bucket_size(kMaxHostnameBytes)});
        // the SNI, read by ssl_preread (Passthrough) or the handshake (Terminate)
        w.open("map", {"$ssl_preread_server_name", "$gateway_tls_sni"});
        w.entry(nginx::Token::map_key(""), {"$ssl_server_name"});
        w.directive("default", {"$ssl_preread_server_name"});
        w.close();
        w.directive("log_format", {"gateway_tls", "$remote_addr [$time_local] $gateway_tls_sni $upstream_addr $status "
                                                  "$bytes_sent $bytes_received $upstream_ssl_verify $upstream_ssl_policy"});
        w.directive("access_log", {"logs/stream-access.log", "gateway_tls"});
        if (!o.resolver.empty()) w.directive("resolver", resolver_arguments(o.resolver));
        w.blank();
        w.directive("include", {"stream.conf"});
        w.close();
    }
    return out.str();
}

std::vector<nginx::Token> resolver_arguments(const std::string &resolver)
{
    // the operator's --resolver: addresses and parameters, split on spaces
    std::vector<nginx::Token> out;
    std::istringstream words(resolver);
    for (std::string word; words >> word;) out.push_back(nginx::Token::value(word));
    return out;
}

}  // namespace g2n
