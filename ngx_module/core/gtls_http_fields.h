// HTTP field names and values a tenant may give (header matches and
// modifiers): the one set of rules gateway2nginx checks routes with and
// the module checks what it is sent at run time. Pure C++, no nginx types.
#pragma once

#include <cstddef>
#include <string_view>

namespace gtls {

inline constexpr size_t kMaxHeaderNameBytes = 256;    // the CRDs'
inline constexpr size_t kMaxHeaderValueBytes = 4096;

// An RFC 9110 token of at most kMaxHeaderNameBytes
bool is_header_name(std::string_view name);

// No control character but a tab (a CR or LF would start a forged field)
bool is_header_value(std::string_view value);

// Fields that frame a message or belong to one connection (RFC 9110
// 7.6.1, RFC 9112 6): nginx sets them toward either side itself. A route
// that set, added or removed one would desynchronize a connection other
// clients share (a Content-Length that disagrees with the body is request
// smuggling) or reopen the Upgrade nginx keeps to WebSocket. Any case.
bool is_connection_header(std::string_view name);

// Backend answers a retry may be made on: nginx's proxy_next_upstream
// names these alone (http_403 ... http_504)
inline constexpr unsigned kRetryableStatuses[] = {403, 404, 429, 500, 502, 503, 504};
bool is_retryable_status(unsigned status);

// Whether a field of name `field` is what nginx's $http_SUFFIX names:
// without case, "-" written "_" (as ngx_http_variable_unknown_header)
bool variable_names_field(std::string_view suffix, std::string_view field);

// Request fields the gateway itself sets: Via, its loop marker (a route
// that could drop it could loop). Any case.
bool is_gateway_request_header(std::string_view name);

}  // namespace gtls
