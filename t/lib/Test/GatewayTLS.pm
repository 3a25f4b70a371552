package Test::GatewayTLS;

# A small Test::Nginx work-alike on Test::Base (Debian's libtest-base-perl):
# the same block format, run by prove, against Debian's nginx with the
# module built by this tree. Each test file gets its own server root with a
# fresh certificate set (t/lib/make-certs.sh) and TLS backends: nginx
# servers that echo the SNI they saw, the path and whether the TLS session
# was resumed, and that log every request they receive.
#
# Sections: main_config, http_config, config, request (or "request eval"
# for a list), more_headers, error_code, response_body, response_body_like,
# response_headers, error_log, no_error_log, access_log, backend_log,
# no_backend_log, must_die, log_level.
#
# Its parts, by role, under Test/GatewayTLS/: Env (server root, ports,
# helpers), Nginx (processes, backends, clients), Generator (gateway2nginx
# and its manifests), Kube (the API server simulation), Conformance (the
# suite's replays), Blocks (the block format). A test file uses this one.

use strict;
use warnings;

use Exporter 'import';
use Test::GatewayTLS::Env;
use Test::GatewayTLS::Nginx;
use Test::GatewayTLS::Generator qw(:DEFAULT @TestEndpoints);
use Test::GatewayTLS::Kube;
use Test::GatewayTLS::Conformance;
use Test::GatewayTLS::Blocks;

# what the tests call, and @Test::GatewayTLS::TestEndpoints for those that
# pass the generator's endpoints themselves
our @TestEndpoints;
our @EXPORT = qw(run_tests run_metric servroot certs_dir backend_port server_port spki_pin cert_pin
                 setup start_backends stop_backends start_nginx stop_nginx http_request
                 run_generator read_status gateway_manifests serve_manifests stop_served request
                 convert_and_serve http_ingress_yaml ingress_yaml secret_yaml own_conf_head
                 status_port service_manifests plaintext_service_manifests tls_exchange slurp spit
                 conformance_manifests conformance_setup tls_secret_yaml serve_conformance_gateway
                 conformance_conditions stop_conformance_gateway conformance_begin nginx_binary
                 nginx_stream_module nginx_version worker_pids wait_workers_replaced parent_pid churn_lists endpoint_membership api_request
                 operator_token operator_token_file bearer wait_for count_in put_file
                 start_numbered_backends start_run start_file_run start_gateway2nginx slow_app_manifests kustomize_deploy module_dir routes_from_all_namespaces
                 listener_sets_from_all_namespaces web_route_yaml listener_set_yaml
                 start_kube_api kubectl kubeconfig kube_apply kubectl_missing kube_web_yaml kube_slice_yaml
                 kube_route_yaml kube_host_route_yaml kube_tls_service_yaml rbac_check audit_requests start_slow_backend start_slow_reader track_child
                 certificate_sha256 presented_certificate ask_kept_alive open_kept_tls close_kept_tls certificate_names presented_certificates
                 unread_by_server connections_to conformance_has start_ready_server conformance_newer_route
                 conformance_drop_kind weighted_shares conformance_mode start_conformance_run conformance_run_settled
                 stop_conformance_run);

1;
