// What the upstream API changes, kept and followed by every worker: the
// state zone (gateway_tls_upstream_state_zone) holding the servers and
// trust last pushed, across reloads; the trust of named policies put in
// place; and each worker's catching up with what another worker took,
// closing what removed servers leave behind. The endpoint that writes it
// is ngx_http_gateway_tls_upstream_api.cc.
#pragma once

#include <string>
#include <string_view>

#include "gtls_upstream_api.h"
#include "ngx_gtls_nginx_layout.h"
#include "ngx_http_gateway_tls_module.h"

// One entry per upstream (of http{} or of stream{}: their names are apart),
// the list last pushed, and per policy its trust. Entries are numbered as
// they are written: a push that a worker of a replaced configuration
// handled (a reload's race) reaches the workers of the new one, whose
// timers look for entries newer than what they run.
// A hostname of a route table is an entry too ("TABLE HOST"): its rules'
// JSON, empty once removed. So is a listener's certificate
// (gateway_tls_certificate), its chain and key.
enum ngx_http_gtls_entry_kind_e {
    NGX_HTTP_GTLS_ENTRY_SERVERS,
    NGX_HTTP_GTLS_ENTRY_TRUST,
    NGX_HTTP_GTLS_ENTRY_STREAM_SERVERS,
    NGX_HTTP_GTLS_ENTRY_ROUTES,
    NGX_HTTP_GTLS_ENTRY_CERTIFICATE
};

struct ngx_http_gtls_state_entry_t {
    ngx_http_gtls_state_entry_t  *next;
    uint64_t                      sequence;
    uint64_t                      fingerprint;  // of the configured servers (or trust) it replaced
    ngx_uint_t                    kind;         // ngx_http_gtls_entry_kind_e
    size_t                        name_len, json_len;
    u_char                        data[1];      // name, then the servers' JSON
};

// ---- the state zone

ngx_int_t ngx_http_gtls_state_init_zone(ngx_shm_zone_t *zone, void *data);
// An entry written in the zone, not yet kept (null: no room)
ngx_http_gtls_state_entry_t *ngx_http_gtls_new_entry(ngx_shm_zone_t *zone, ngx_http_gtls_entry_kind_e kind,
                                                     std::string_view name, uint64_t fingerprint,
                                                     const std::string &json);
// A new entry freed unkept
void ngx_http_gtls_drop_entry(ngx_shm_zone_t *zone, ngx_http_gtls_state_entry_t *entry);
// Replaces (or adds) the zone's entry for the entry's upstream or policy,
// numbered next
void ngx_http_gtls_keep_entry(ngx_shm_zone_t *zone, ngx_http_gtls_state_entry_t *entry);
// init_module, after a reload that sized the zone anew (nginx made a new
// one): what the zone it replaces holds copied into it, and that zone
// marked replaced, so that the workers still running on it (nginx tells
// them to leave only after starting the new ones) refuse the API
void ngx_http_gtls_carry_resized_zone(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf);
// Whether this worker's zone was replaced so
bool ngx_http_gtls_state_replaced(ngx_http_gtls_main_conf_t *mcf);
// init_module: the entries still valid for this configuration made
// current (its workers inherit them), the others freed
void ngx_http_gtls_take_kept_entries(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf);

// ---- policies' trust

ngx_int_t ngx_http_gtls_collect_trusted(ngx_cycle_t *cycle, ngx_http_gtls_main_conf_t *mcf,
                                        const ngx_gtls_stream_export_t *stream);
ngx_http_gtls_trusted_t *ngx_http_gtls_find_trusted(ngx_http_gtls_main_conf_t *mcf, const std::string &name);
uint64_t ngx_http_gtls_pushed_fingerprint(const ngx_http_gtls_trusted_t *t, const gtls::PolicyTrust &pushed);
void ngx_http_gtls_replace_trust(ngx_http_gtls_trusted_t *t, const gtls::Trust *trust, uint64_t sequence);

// ---- route tables

// The table a state entry of routes names, and its hostname; null when
// this configuration has no such table
ngx_http_gtls_route_table_t *ngx_http_gtls_routes_of_entry(ngx_http_gtls_main_conf_t *mcf, std::string_view name,
                                                           std::string *host);

// ---- the upstreams the API replaces

ngx_http_gtls_main_conf_t *ngx_http_gtls_cycle_main_conf(ngx_cycle_t *cycle);
ngx_gtls_upstream_set_t *ngx_http_gtls_set_of(ngx_http_gtls_main_conf_t *mcf, ngx_uint_t kind);
const char *ngx_http_gtls_upstream_noun(ngx_uint_t kind);
gtls_glue::DynamicUpstream *ngx_http_gtls_find_dynamic(ngx_http_gtls_main_conf_t *mcf, ngx_uint_t kind,
                                                        std::string_view name);

// ---- each worker catching up

// What other workers took made current here, and what removed servers
// leave behind closed
void ngx_http_gtls_notice_changes(ngx_cycle_t *cycle);
// init_process: the timer that notices them once a second
void ngx_http_gtls_start_noticing(ngx_cycle_t *cycle);
