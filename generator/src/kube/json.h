// What every reader and writer of the API's JSON here needs of RapidJSON:
// a member, a string member, and a value as text.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <string_view>

namespace g2n::kube {

// `object`'s member `key`; null when it is absent or `object` is not an
// object.
inline const rapidjson::Value *member(const rapidjson::Value &object, const char *key)
{
    if (!object.IsObject()) return nullptr;
    auto it = object.FindMember(key);
    return it != object.MemberEnd() ? &it->value : nullptr;
}

// `object`'s string member `key`; empty when it is absent, not a string,
// or `object` is not an object.
inline std::string_view string_member(const rapidjson::Value &object, const char *key)
{
    if (!object.IsObject()) return {};
    auto it = object.FindMember(key);
    return it != object.MemberEnd() && it->value.IsString()
               ? std::string_view(it->value.GetString(), it->value.GetStringLength())
               : std::string_view();
}

// `value` as compact JSON text.
inline std::string json_text(const rapidjson::Value &value)
{
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    value.Accept(writer);
    return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace g2n::kube
