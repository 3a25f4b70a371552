// The nginx headers, included as C from the module's C++ files.
#pragma once

#include <new>
#include <string_view>

extern "C" {
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_event_connect.h>
#include <ngx_http.h>
}

// C++ objects in nginx memory: built in place in a pool cleanup's data, so
// that destroying the pool runs the destructor (the nginx-otel way).
template <typename T>
void ngx_gtls_pool_destroy(void *data)
{
    static_cast<T *>(data)->~T();
}

template <typename T>
T *ngx_gtls_pool_new(ngx_pool_t *pool)
{
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(pool, sizeof(T));
    if (cln == nullptr) {
        return nullptr;
    }
    T *object = new (cln->data) T();
    cln->handler = ngx_gtls_pool_destroy<T>;
    return object;
}

namespace gtls_glue {

// Objects that every request makes and drops, kept by the worker (one
// thread) for the next request: a request's pool then grows by a cleanup
// entry only, where the object itself would often take a new pool block
// (a page from malloc, per request).
template <typename T>
class Recycled {
public:
    static T *make(ngx_pool_t *pool)
    {
        ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(pool, 0);
        if (cln == nullptr) {
            return nullptr;
        }
        slot_t *slot = free_;
        if (slot != nullptr) {
            free_ = slot->next;
        } else {
            slot = static_cast<slot_t *>(::operator new(sizeof(slot_t), std::nothrow));
            if (slot == nullptr) {
                return nullptr;
            }
        }
        T *object = new (slot->bytes) T();
        cln->data = object;
        cln->handler = release;
        return object;
    }

    // the pool cleanup handler of what make() returned
    static void release(void *data)
    {
        static_cast<T *>(data)->~T();
        auto *slot = reinterpret_cast<slot_t *>(data);
        slot->next = free_;
        free_ = slot;
    }

private:
    union slot_t {
        slot_t *next;
        alignas(T) unsigned char bytes[sizeof(T)];
    };
    static inline slot_t *free_ = nullptr;
};

}  // namespace gtls_glue

// A field of a conf struct by offset: a directive's own (cmd->offset), or
// one of another module's private struct, by the offset its directive
// table gives (ngx_gtls_nginx_layout.cc).
template <typename T>
T *ngx_gtls_field(void *conf, size_t offset)
{
    return reinterpret_cast<T *>(static_cast<u_char *>(conf) + offset);
}

// An ngx_str_t's bytes, as C++ reads them.
inline std::string_view ngx_gtls_sv(const ngx_str_t &s)
{
    return std::string_view(reinterpret_cast<const char *>(s.data), s.len);
}
