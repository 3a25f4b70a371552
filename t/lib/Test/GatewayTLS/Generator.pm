package Test::GatewayTLS::Generator;

# gateway2nginx as the tests run it (once, or run in the background), the
# manifests they give it, a served configuration and the status it writes.

use strict;
use warnings;

use Exporter 'import';
use File::Path qw(make_path);
use JSON::PP ();
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(sleep time);
use Test::More ();

use Test::GatewayTLS::Env qw(:DEFAULT $Module $Nginx $Root);
use Test::GatewayTLS::Nginx;

our @EXPORT = qw(churn_lists convert_and_serve endpoint_membership gateway_manifests http_ingress_yaml ingress_yaml kustomize_deploy
                listener_set_yaml listener_sets_from_all_namespaces read_status
                plaintext_service_manifests routes_from_all_namespaces run_generator run_metric secret_yaml serve_manifests service_manifests
                slow_app_manifests start_file_run start_gateway2nginx start_run status_port stop_served
                web_route_yaml);
our @EXPORT_OK = qw(@TestEndpoints);

# The sum of the samples whose name and labels RE matches, on the
# /metrics of gateway2nginx run's --health-listen 127.0.0.1:PORT.
sub run_metric {
    my ($port, $re) = @_;
    my $metrics = `curl -s http://127.0.0.1:$port/metrics`;
    my $sum = 0;
    $sum += $1 while $metrics =~ /^$re (\S+)$/mg;
    return $sum;
}

# What the tests' gateway2nginx is told besides ARGS: their backends are on
# loopback, which endpoints may point at only where the operator allows.
our @TestEndpoints = ('--allow-endpoints', '127.0.0.0/8', '--allow-endpoints', '::1/128');

# `gateway2nginx run ARGS...` in the background (with the test endpoints,
# and the nginx the tests run for its nginx -t unless ARGS name one), its
# standard error appended to LOG; returns its pid.
sub start_run {
    my ($log, @args) = @_;
    return start_gateway2nginx([], $log, 'run', @args, @TestEndpoints);
}

# `gateway2nginx run -f IN -o OUT` as the tests of changes through files
# run it: starting nginx itself, routes by table, the upstream API on
# 127.0.0.1:API_PORT, listeners at OFFSET from their ports, no status
# listener, a DEBOUNCE (default 100) ms debounce, and ARGS besides.
sub start_file_run {
    my ($log, $in, $out, %o) = @_;
    return start_run($log, '-f', $in, '-o', $out, '--start-nginx', '--nginx', nginx_binary(),
                     '--upstream-api', "127.0.0.1:$o{api_port}", '--routes', 'table', '--port-offset', $o{offset},
                     '--listen-address', '127.0.0.1', '--module-dir', module_dir(), '--status-listen', 'off',
                     '--debounce', $o{debounce} // 100, @{$o{args} // []});
}

# `PREFIX... gateway2nginx ARGS...` (PREFIX: such as setpriv and its
# options, to run it as another user) in the background, with the nginx
# the tests run unless ARGS name one, its standard error appended to LOG;
# returns its pid (the prefix execs what it runs).
sub start_gateway2nginx {
    my ($prefix, $log, @args) = @_;
    my $bin = $ENV{GATEWAY2NGINX} || "$Root/build/gateway2nginx";
    push @args, '--nginx', $Nginx if $ENV{TEST_NGINX_BINARY} && !grep { $_ eq '--nginx' } @args;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>>', $log or die "$log: $!";
        exec(@$prefix, $bin, @args) or die "$bin: $!";
    }
    track_child($pid);
    return $pid;
}

# Runs gateway2nginx with ARGS (and @TestEndpoints, unless ARGS say
# --allow-endpoints or --no-test-endpoints); returns (exit code, its output).
sub run_generator {
    my @args = @_;
    if (grep { $_ eq '--no-test-endpoints' } @args) {
        @args = grep { $_ ne '--no-test-endpoints' } @args;
    } elsif (!grep { $_ eq '--allow-endpoints' } @args) {
        push @args, @TestEndpoints;
    }
    my $bin = $ENV{GATEWAY2NGINX} || "$Root/build/gateway2nginx";
    # the nginx the tests run: its --check, and its build's module paths
    unshift @args, '--nginx', $Nginx if $ENV{TEST_NGINX_BINARY};
    my $cmd = join ' ', map { "'$_'" } $bin, @args;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# gateway_manifests() YAML whose listener takes routes of every namespace.
# Dies when there is no such listener: an edit that misses its mark must
# not leave a test quietly testing something else.
sub routes_from_all_namespaces {
    my ($yaml) = @_;
    $yaml =~ s/^(  - \{name: http, port: 80, protocol: HTTP)\}$/$1, allowedRoutes: {namespaces: {from: All}}}/m
        or die "routes_from_all_namespaces: no HTTP listener on port 80 in the manifests\n";
    return $yaml;
}

# YAML with its Gateway (the one of gatewayClassName ours) admitting
# ListenerSets from every namespace
sub listener_sets_from_all_namespaces {
    my ($yaml) = @_;
    $yaml =~ s/^(  gatewayClassName: ours\n)/$1  allowedListeners: {namespaces: {from: All}}\n/m
        or die "listener_sets_from_all_namespaces: no Gateway of class ours in the manifests\n";
    return $yaml;
}

# ListenerSet team/NAME on Gateway ns/gw with LISTENERS (each a line of
# YAML, flow style: {name: ..., port: ..., protocol: ...})
sub listener_set_yaml {
    my ($name, @listeners) = @_;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {name: $name, namespace: team}\n"
         . "spec:\n  parentRef: {kind: Gateway, group: gateway.networking.k8s.io, name: gw, namespace: ns}\n  listeners:\n"
         . join('', map { "  - $_\n" } @listeners);
}

# HTTPRoute ns/NAME on Gateway ns/gw: each of PATHS (PathPrefix) to Service
# ns/web port 443
sub web_route_yaml {
    my ($name, @paths) = @_;
    my $rules = join '', map { "  - matches: [{path: {value: $_}}]\n    backendRefs: [{name: web, port: 443}]\n" } @paths;
    return "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: $name, namespace: ns}\n"
         . "spec:\n  parentRefs: [{name: gw}]\n  rules:\n$rules";
}

# deploy/ rendered by `kubectl kustomize`, through an overlay in DIR that
# takes COMPONENTS (names under deploy/components/) when there are any, as
# a platform team's overlay would; the text is written to DIR/NAME.yaml.
# Returns (exit code, the text or kubectl's complaint, the objects by
# "Kind/name").
sub kustomize_deploy {
    my ($dir, $name, @components) = @_;
    my $target = "$Root/deploy";
    if (@components) {
        my $overlay = "$dir/$name.overlay";
        make_path($overlay);
        # kustomize takes relative paths only
        my $up = join '/', map { '..' } grep { length } split m{/}, $overlay;
        spit("$overlay/kustomization.yaml", "resources:\n- $up$Root/deploy\ncomponents:\n"
             . join('', map { "- $up$Root/deploy/components/$_\n" } @components));
        $target = $overlay;
    }
    my $text = `kubectl kustomize '$target' 2>&1`;
    my $rc = $? >> 8;
    spit("$dir/$name.yaml", $text);
    return ($rc, $text, {}) if $rc != 0;
    my $json = `python3 -c 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))' '$dir/$name.yaml'`;
    return ($rc, $text, { map { ("$_->{kind}/$_->{metadata}{name}" => $_) } @{ JSON::PP::decode_json($json) } });
}

# gateway_manifests() and Service ns/app (port 80, plain HTTP) whose one
# endpoint is 127.0.0.1:PORT (start_slow_backend's), with HTTPRoute ns/r
# sending each of PATHS (PathPrefix) there.
sub slow_app_manifests {
    my ($port, @paths) = @_;
    my $rules = join '', map { "  - matches: [{path: {type: PathPrefix, value: $_}}]\n    backendRefs: [{name: app, port: 80}]\n" } @paths;
    return gateway_manifests() . <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: ns, labels: {kubernetes.io/service-name: app}}
ports: [{name: http, port: $port}]
endpoints: [{addresses: ["127.0.0.1"]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
$rules
YAML
}

# Manifests for tests of routes: our GatewayClass, Gateway ns/gw with an
# HTTP listener on port 80 (generator/tests/testdata/http-gateway.yaml), and for each NAME => BACKEND a Service ns/NAME
# whose endpoint is that local TLS backend, verified by a BackendTLSPolicy
# (the test CA, hostname abc.example.com).
sub gateway_manifests {
    my %services = @_;
    my $ca = do { local (@ARGV, $/) = (certs_dir() . '/ca.crt'); <> };
    $ca =~ s/^/    /mg;
    my $yaml = do { local (@ARGV, $/) = ("$Root/generator/tests/testdata/http-gateway.yaml"); <> };
    $yaml .= <<"YAML";
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: ns}
data:
  ca.crt: |
$ca
YAML
    for my $name (sort keys %services) {
        $yaml .= service_manifests($name, $services{$name},
                                   "    caCertificateRefs: [{group: \"\", kind: ConfigMap, name: ca}]\n");
    }
    return $yaml;
}

# A Service ns/NAME whose endpoint is the local TLS backend BACKEND, and a
# BackendTLSPolicy ns/NAME-tls for it: hostname abc.example.com and
# VALIDATION (more YAML lines of spec.validation, indented by four), with
# OPTIONS (spec.options, the inside of a flow mapping) when given.
sub service_manifests {
    my ($name, $backend, $validation, $options) = @_;
    my $options_line = defined $options ? "  options: {$options}\n" : '';
    return plaintext_service_manifests($name, 'https', 443, backend_port($backend)) . <<"YAML";
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: $name-tls, namespace: ns}
spec:
  targetRefs: [{group: "", kind: Service, name: $name}]
${options_line}  validation:
    hostname: abc.example.com
$validation
YAML
}

# A Service ns/NAME of port PORT (named PORT_NAME, with APP_PROTOCOL when
# given) whose endpoint is 127.0.0.1:ENDPOINT_PORT, and no BackendTLSPolicy:
# a backend spoken to in plaintext.
sub plaintext_service_manifests {
    my ($name, $port_name, $port, $endpoint_port, $app_protocol) = @_;
    my $protocol = defined $app_protocol ? ", appProtocol: $app_protocol" : '';
    return <<"YAML";
---
apiVersion: v1
kind: Service
metadata: {name: $name, namespace: ns}
spec:
  ports: [{name: $port_name, port: $port$protocol}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $name-local
  namespace: ns
  labels: {kubernetes.io/service-name: $name}
ports: [{name: $port_name, port: $endpoint_port}]
endpoints: [{addresses: ["127.0.0.1"]}]
YAML
}

# Writes YAML under the server root, runs gateway2nginx on it (with
# --check), starts the backends and the generated nginx; returns the port
# of the Gateway's port-80 listener (in list context, and the generator's
# output). stop_served() stops both.
# routes => 'table': the routes are served by the module's route table
# (--routes table), filled through the upstream API before this returns;
# spares => N, and N spare upstreams of each kind (--spare-backends).
sub serve_manifests {
    my ($yaml, %opts) = @_;
    my $dir = servroot();
    open my $fh, '>', "$dir/manifests.yaml" or die "$!";
    print $fh $yaml;
    close $fh;
    my $offset = server_port() + 20 - 80;
    my $module = $ENV{GTLS_MODULE} || $Module;
    (my $module_dir = $module) =~ s{/[^/]+$}{};
    my $routes = $opts{routes} // 'locations';
    my $api = server_port() + 18;
    my @table = $routes eq 'table' ? ('--routes', 'table', '--upstream-api', "127.0.0.1:$api") : ();
    push @table, '--spare-backends', $opts{spares} if $opts{spares};
    my ($rc, $out) = run_generator('-f', "$dir/manifests.yaml", '-o', "$dir/out", '--port-offset', $offset,
                                   '--listen-address', '127.0.0.1', '--module-dir', $module_dir, '--check',
                                   '--status-listen', '127.0.0.1:' . status_port(), @table);
    Test::More::is($rc, 0, "gateway2nginx writes a configuration that passes nginx -t (routes: $routes)")
        or Test::More::diag($out);
    start_backends();
    start_nginx("$dir/out", 'nginx.conf', 80 + $offset);
    if (@table) {
        my $token = slurp("$dir/out/upstream-api.token");
        chomp $token;
        my ($code, $reply) = api_request($api, '/upstreams', 'PUT', slurp("$dir/out/route-tables.json"), $token);
        Test::More::is($code, 200, 'the route tables are filled through the upstream API') or Test::More::diag($reply);
    }
    return wantarray ? (80 + $offset, $out) : 80 + $offset;
}

# A Secret NAME of namespace NS holding the test certificates' files:
# ca => FILE as ca.crt, cert => NAME as tls.crt and tls.key (NAME.crt,
# NAME.key; then of type kubernetes.io/tls), or both, as ingress-nginx's
# proxy-ssl-secret holds them
sub secret_yaml {
    my ($name, $ns, %files) = @_;
    my $b64 = sub { encode_base64(slurp(certs_dir() . "/$_[0]"), '') };
    my $data = join '', ($files{ca} ? "  ca.crt: " . $b64->($files{ca}) . "\n" : ''),
                        ($files{cert} ? "  tls.crt: " . $b64->("$files{cert}.crt") . "\n"
                                        . "  tls.key: " . $b64->("$files{cert}.key") . "\n" : '');
    return "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: $name\n  namespace: $ns\n"
         . ($files{cert} ? "type: kubernetes.io/tls\n" : '') . "data:\n$data";
}

# An Ingress as ingress-nginx's documentation writes one (namespace ns,
# IngressClass nginx): NAME, its rule's HOST and one path (PATH, "/" by
# default, Prefix) to SERVICE's port PORT (a name: "http" by default);
# ANNOTATIONS ("key: value" under nginx.ingress.kubernetes.io/) and TLS (the
# host's certificate Secret) where given
sub ingress_yaml {
    my (%a) = @_;
    my $annotations = join '', map { "    nginx.ingress.kubernetes.io/$_\n" } @{ $a{annotations} // [] };
    $annotations = "  annotations:\n$annotations" if $annotations ne '';
    my $tls = $a{tls} ? "  tls: [{hosts: [$a{host}], secretName: $a{tls}}]\n" : '';
    my ($path, $port) = ($a{path} // '/', $a{port} // 'http');
    return <<"YAML";
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: $a{name}
  namespace: ns
${annotations}spec:
  ingressClassName: nginx
${tls}  rules:
  - host: $a{host}
    http:
      paths:
      - {path: $path, pathType: Prefix, backend: {service: {name: $a{service}, port: {name: $port}}}}
YAML
}

# An Ingress NAME of HOST's paths to Service NAME's port "http", and that
# Service reaching the plain backend
sub http_ingress_yaml {
    my ($name, $host) = @_;
    return ingress_yaml(name => $name, host => $host, service => $name)
         . plaintext_service_manifests($name, 'http', 80, backend_port('plain'));
}

# gateway2nginx convert of INGRESSES (YAML, written under the server
# root), checked to exit EXIT, its output then served beside INGRESSES
# with every object Accepted (serve_manifests); returns the HTTP port and
# convert's report. LABEL names the checks.
sub convert_and_serve {
    my ($label, $ingresses, $exit) = @_;
    my $dir = servroot();
    put_file($dir, 'ingresses.yaml', $ingresses);
    File::Path::remove_tree("$dir/converted");
    my $bin = $ENV{GATEWAY2NGINX} || 'build/gateway2nginx';
    my $report = `'$bin' convert -f '$dir/ingresses.yaml' -o '$dir/converted' 2>&1`;
    Test::More::is($? >> 8, $exit, "$label: convert exits $exit") or Test::More::diag($report);
    my $class = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: gateway2nginx}\n"
              . "spec: {controllerName: gateway2nginx.io/controller}\n";
    my $port = serve_manifests($class . "---\n" . slurp("$dir/converted/gateway-api.yaml") . $ingresses);
    my $status = read_status("$dir/out/status.yaml");
    my @false = grep { /=False/ } map { @$_ } values %$status;
    Test::More::is("@false", '', "$label: every converted object is Accepted, its references resolved");
    return ($port, $report);
}

# Where a served configuration's gateway_tls_status answers.
sub status_port { server_port() + 19 }

sub stop_served {
    stop_nginx(servroot() . '/out');
    stop_backends();
}

# Endpoint churn (t/310, t/335): COUNT lists of PORTS that scale up and
# down over a moving window of up to MOST endpoints, and every EVERY-th a
# rollout onto three endpoints the previous list (the first: FIRST) did
# not have.
sub churn_lists {
    my ($count, $every, $most, $ports, @previous) = @_;
    my @lists;
    for my $i (1 .. $count) {
        my @list;
        if ($i % $every == 0) {
            my %old = map { $_ => 1 } @previous;
            @list = (grep { !$old{$_} } @$ports)[0 .. 2];
        } else {
            my $start = ($i * 5) % @$ports;
            @list = map { $ports->[($start + $_) % @$ports] } 0 .. $i % $most;
        }
        push @lists, [@list];
        @previous = @list;
    }
    return @lists;
}

# When each endpoint was in the lists pushed, from the CONFIGURED ones on:
# `$joined->(TIME, LIST)` takes a list pushed at TIME and returns the
# endpoints new in it; `$strays->(LOG, SLACK, FROM, SKIP...)` reads a
# backend's access log of "PORT MSEC" lines from time FROM on, leaving out
# the SKIP ports, and returns how many lines it read and those of an
# endpoint outside its time in the lists (SLACK seconds either side: what
# was in flight at a change).
sub endpoint_membership {
    my %since = map { $_ => 0 } @_;   # port => when it joined (current members)
    my @intervals;                     # [port, from, to]
    my $joined = sub {
        my ($now, @list) = @_;
        my %in = map { $_ => 1 } @list;
        push @intervals, map { [$_, delete $since{$_}, $now] } grep { !$in{$_} } sort keys %since;
        my @new = grep { !exists $since{$_} } @list;
        $since{$_} = $now for @new;
        return @new;
    };
    my $strays = sub {
        my ($log, $slack, $from, @skip) = @_;
        my %skip = map { $_ => 1 } @skip;
        my @all = (@intervals, map { [$_, $since{$_}, 9e9] } keys %since);
        my ($lines, @strays) = (0);
        for (split /\n/, slurp($log)) {
            my ($p, $t) = split ' ';
            next if $skip{$p} || $t < $from;
            $lines++;
            push @strays, "$p at $t" unless grep { $_->[0] == $p && $t >= $_->[1] - $slack && $t <= $_->[2] + $slack } @all;
        }
        return ($lines, @strays);
    };
    return ($joined, $strays);
}

sub read_status {
    my $file = shift;
    open my $fh, '<', $file or die "$file: $!\n";
    local $/;
    my $text = <$fh>;
    close $fh;
    my %status;
    for my $doc (split /^---\s*$/m, $text) {
        my ($kind) = $doc =~ /^kind: (\S+)/m or next;
        my ($name) = $doc =~ /^  name: (\S+)/m;
        my ($ns) = $doc =~ /^  namespace: (\S+)/m;
        my (@entries, %cond);
        my ($ref, $in_ref, $ref_kind) = ('', 0, '');
        my ($generation) = $doc =~ /^  generation: (\d+)/m;
        push @entries, "generation=$generation" if defined $generation;
        my $listeners = $kind eq 'Gateway' || $kind eq 'ListenerSet';
        for my $line (split /\n/, $doc) {
            # a Gateway's (a ListenerSet's) listeners: "listener NAME: ..." entries
            if ($listeners && $line =~ /^    - name: (\S+)/) {
                ($ref, $in_ref) = ("listener $1", 0);
            } elsif ($listeners && $line =~ /^      attachedRoutes: (\d+)/) {
                push @entries, "$ref: attachedRoutes=$1";
            } elsif ($listeners && $line =~ /^          kind: (\S+)/) {
                push @entries, "$ref: supportedKind=$1";
            } elsif ($kind eq 'Gateway' && $line =~ /^      value: (\S+)/) {
                push @entries, "address=$1";
            } elsif ($kind eq 'Gateway' && $line =~ /^  attachedListenerSets: (\d+)/) {
                push @entries, "attachedListenerSets=$1";
            } elsif ($kind eq 'GatewayClass' && $line =~ /^    - name: (\S+)/) {
                push @entries, "supportedFeature=$1";
            } elsif ($line =~ /^\s+- (?:ancestorRef|parentRef):/) {
                ($ref, $in_ref, $ref_kind) = ('', 1, '');
            } elsif ($in_ref && $line =~ /^\s+kind: (\S+)/) {
                $ref_kind = $1;
            } elsif ($in_ref && $line =~ /^\s+namespace: (\S+)/) {
                # a route's ListenerSet parent: "ListenerSet NS/NAME"
                $ref = ($ref_kind eq 'ListenerSet' ? 'ListenerSet ' : '') . $1;
            } elsif ($in_ref && $line =~ /^\s+name: (\S+)/) {
                $ref .= "/$1";
                $in_ref = 0;
            } elsif ($line =~ /^\s+- type: (\S+)/) {
                %cond = (type => $1);
            } elsif ($line =~ /^\s+status: "(\w+)"/) {
                $cond{status} = $1;
            } elsif ($line =~ /^\s+reason: (\S+)/) {
                push @entries, "$ref: $cond{type}=$cond{status}/$1";
            } elsif ($line =~ /^\s+observedGeneration: (\d+)/ && defined $generation && $1 != $generation) {
                push @entries, "$ref: stale $cond{type} (observedGeneration $1)";
            }
        }
        $status{defined $ns ? "$kind $ns/$name" : "$kind $name"} = \@entries;  # GatewayClass: no namespace
    }
    return \%status;
}

1;
