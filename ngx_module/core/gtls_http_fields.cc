#include "gtls_http_fields.h"

#include <algorithm>
#include <cctype>
#include <strings.h>

#include <cstring>

namespace gtls {

bool is_header_name(std::string_view name)
{
    static constexpr std::string_view kSymbols = "!#$%&'*+.^_`|~-";
    return !name.empty() && name.size() <= kMaxHeaderNameBytes
           && std::all_of(name.begin(), name.end(), [](char ch) {
                  return std::isalnum(static_cast<unsigned char>(ch)) || kSymbols.find(ch) != std::string_view::npos;
              });
}

bool is_header_value(std::string_view value)
{
    return std::none_of(value.begin(), value.end(), [](char ch) {
        return (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f;
    });
}

namespace {

bool named(std::string_view name, std::string_view lower_case)
{
    return name.size() == lower_case.size() && strncasecmp(name.data(), lower_case.data(), name.size()) == 0;
}

}  // namespace

bool is_connection_header(std::string_view name)
{
    static constexpr std::string_view kNames[] = {"connection", "content-length", "keep-alive", "proxy-connection",
                                                  "te",         "trailer",        "transfer-encoding", "upgrade"};
    return std::any_of(std::begin(kNames), std::end(kNames), [&](std::string_view known) { return named(name, known); });
}

bool is_retryable_status(unsigned status)
{
    return std::find(std::begin(kRetryableStatuses), std::end(kRetryableStatuses), status) != std::end(kRetryableStatuses);
}

bool variable_names_field(std::string_view suffix, std::string_view field)
{
    if (suffix.size() != field.size()) return false;
    for (size_t i = 0; i < field.size(); i++) {
        const char ch = field[i] == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(field[i])));
        if (ch != suffix[i]) return false;
    }
    return true;
}

bool is_gateway_request_header(std::string_view name) { return named(name, "via"); }

}  // namespace gtls
