# nginx-gateway-tls: `make` builds, `make test` installs what is missing,
# builds and runs every test, `make demo` shows the module at work.

SHELL        := /bin/bash
# in parallel unless told otherwise (make -j1)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS    += -j$(shell nproc)
endif
# SANITIZE=1: the module, the generator and the unit tests built with ASan
# and UBSan in build/sanitize, and the suite run with their runtimes
# preloaded into Debian's nginx (and whatever else the tests start).
SANITIZE     ?= 0
BUILD        := $(CURDIR)/build$(if $(filter 1,$(SANITIZE)),/sanitize)
SAN_FLAGS    := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
NGINX_SRC    := /usr/share/nginx/src
NGINX_BUILD  := $(BUILD)/nginx
MODULE_SO    := $(NGINX_BUILD)/objs/ngx_http_gateway_tls_module.so
STREAM_SO    := $(NGINX_BUILD)/objs/ngx_stream_gateway_tls_module.so
MODULES_DIR  := /usr/lib/nginx/modules
CXX          ?= g++
CXXFLAGS     ?= -O2 -g
CXXFLAGS     += -std=c++17 -Wall -Wextra -Werror -Ingx_module/core
ifeq ($(SANITIZE),1)
CXXFLAGS     += $(SAN_FLAGS) -Wno-maybe-uninitialized  # false positives in <regex> under ASan
NGX_SAN_OPTS := --with-cc-opt="$(SAN_FLAGS)" --with-ld-opt="$(SAN_FLAGS)"
# nginx alone gets the runtimes, through a wrapper the tests use as their
# nginx (TEST_NGINX_BINARY, and gateway2nginx --nginx for --check); what the
# sanitizers find is logged under $(SAN_LOGS), and any log fails the run.
SAN_LOGS     := $(BUILD)/sanitizer-logs
SAN_NGINX    := $(BUILD)/nginx-sanitized
SAN_CHECK    := if ls $(SAN_LOGS)/* >/dev/null 2>&1; then echo "sanitizer reports:"; cat $(SAN_LOGS)/*; exit 1; \
                else echo "ASan and UBSan: no report from nginx and the modules or from gateway2nginx"; fi
SAN_ENV      := TEST_NGINX_BINARY=$(SAN_NGINX) \
                ASAN_OPTIONS=detect_leaks=0:log_path=$(SAN_LOGS)/asan \
                UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(SAN_LOGS)/ubsan
endif

# The Gateway API conformance suite the replays take their manifests from:
# a checkout (or release tree) of kubernetes-sigs/gateway-api, or nothing
# (the replays skip, saying so).
GATEWAY_API_DIR ?=
export GATEWAY_API_DIR

# Debian packages the build, the tests and the demo need.
DEPS := nginx-core nginx-dev libnginx-mod-stream libssl-dev libpcre2-dev zlib1g-dev help2man \
        libyaml-cpp-dev rapidjson-dev libcurl4-openssl-dev libmicrohttpd-dev libboost-test-dev libtest-base-perl g++ make openssl curl perl \
        ca-certificates time wrk prometheus valgrind python3-grpcio python3-protobuf python3-h2 python3-yaml iproute2

CORE_SRCS  := $(wildcard ngx_module/core/*.cc)
CORE_HDRS  := $(wildcard ngx_module/core/*.h)
UNIT_SRCS  := $(wildcard ngx_module/tests/*.cc)
MODULE_SRCS := $(wildcard ngx_module/*.cc ngx_module/*.h) $(CORE_SRCS) $(CORE_HDRS) config
GEN_SRCS    := $(filter-out generator/src/main.cc,$(wildcard generator/src/*.cc generator/src/*/*.cc)) \
               ngx_module/core/gtls_spec.cc ngx_module/core/gtls_match.cc ngx_module/core/gtls_upstream_api.cc \
               ngx_module/core/gtls_upstream_api_json.cc \
               ngx_module/core/gtls_access.cc ngx_module/core/gtls_json.cc ngx_module/core/gtls_http_fields.cc \
               ngx_module/core/gtls_routes.cc ngx_module/core/gtls_routes_json.cc
GEN_TESTS   := $(wildcard generator/tests/*.cc)
GEN_LIBS    := -lyaml-cpp -lcurl -lmicrohttpd -lcrypto -lpcre2-8 -pthread
GENERATOR   := $(BUILD)/gateway2nginx

.PHONY: all deps deps-all module generator man docs golden unit-tests test test-unit test-valgrind test-nginx check-rendering test-stress test-debian deb test-deb image test-deploy \
        conformance install demo bench fuzz clean

all: module $(GENERATOR) $(BUILD)/unit_tests $(BUILD)/generator_tests

# (a download the mirror drops is tried again: Acquire::Retries)
# kubectl: Debian's kubernetes-client where the release has one, unless a
# kubectl is already there (the tests of the API client drive the API
# server simulation with it, and skip, saying why, without one).
deps:
	@missing=$$(for p in $(DEPS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done; command -v kubectl >/dev/null || ! apt-cache show kubernetes-client >/dev/null 2>&1 || echo kubernetes-client); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq -o Acquire::Retries=3 \
	    && apt-get install -y -qq -o Acquire::Retries=3 --no-install-recommends $$missing >/dev/null; \
	fi

# nginx's own build system compiles the module against Debian's headers
# with Debian's configure flags, so the .so loads into Debian's binary.
$(NGINX_BUILD)/objs/Makefile: config
	rm -rf $(NGINX_BUILD) && mkdir -p $(BUILD)
	cp -r $(NGINX_SRC) $(NGINX_BUILD)
	cd $(NGINX_BUILD) && source ./conf_flags && \
	  ./configure "$${NGX_CONF_FLAGS[@]}" --with-stream --with-stream_ssl_module $(NGX_SAN_OPTS) \
	    --add-dynamic-module=$(CURDIR) > $(BUILD)/configure.log

$(MODULE_SO): $(NGINX_BUILD)/objs/Makefile $(MODULE_SRCS)
	$(MAKE) -C $(NGINX_BUILD) -f objs/Makefile modules > $(BUILD)/module-build.log 2>&1 \
	  || { cat $(BUILD)/module-build.log; exit 1; }
	@echo "built $@"

module: $(MODULE_SO)

# Both modules built with what they assume about nginx deliberately wrong
# (NGX_GTLS_LAYOUT_FAULT in ngx_gtls_nginx_layout.h), for t/190: nginx
# must refuse each with the module's line, not run it.
FAULT_BUILD := $(BUILD)/nginx-layout-fault
FAULT_SO    := $(FAULT_BUILD)/objs/ngx_stream_gateway_tls_module.so
$(FAULT_SO): $(MODULE_SO)
	rm -rf $(FAULT_BUILD) && cp -r $(NGINX_BUILD) $(FAULT_BUILD)
	find $(FAULT_BUILD)/objs -name "*.o" -delete && rm -f $(FAULT_BUILD)/objs/*.so
	sed -i 's/^CFLAGS = /CFLAGS = -DNGX_GTLS_LAYOUT_FAULT=1 /' $(FAULT_BUILD)/objs/Makefile
	$(MAKE) -C $(FAULT_BUILD) -f objs/Makefile modules > $(BUILD)/layout-fault-build.log 2>&1 \
	  || { cat $(BUILD)/layout-fault-build.log; exit 1; }

generator: $(GENERATOR)

# The command line is written once, in generator/src/cli.cc (--help): the
# man page is made from it by help2man, and `make docs` copies it into
# docs/gateway2nginx.md (t/202-usage.t checks that both agree with it).
man: $(BUILD)/gateway2nginx.1
$(BUILD)/gateway2nginx.1: $(GENERATOR) debian/gateway2nginx.h2m
	help2man --no-info --section=1 --include=debian/gateway2nginx.h2m --output=$@ $(GENERATOR)

docs: $(GENERATOR)
	$(GENERATOR) --help | perl -0pi -e 'my $$u = do { local $$/; <STDIN> }; \
	  s/(<!-- usage: [^\n]*-->\n```\n).*?(```\n<!-- end usage -->)/$$1$$u$$2/s or die "no usage block\n"' docs/gateway2nginx.md

# Each source compiled once into an object under $(OBJ), with its header
# dependencies (-MMD), shared by gateway2nginx and both test binaries.
OBJ         := $(BUILD)/obj
objects      = $(patsubst %.cc,$(OBJ)/%.o,$(1))
$(OBJ)/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(TEST_FLAGS) -Igenerator/src -MMD -MP -c -o $@ $<
$(OBJ)/generator/tests/%.o $(OBJ)/ngx_module/tests/%.o: TEST_FLAGS := -DBOOST_TEST_DYN_LINK
-include $(patsubst %.o,%.d,$(call objects,$(sort $(CORE_SRCS) $(UNIT_SRCS) $(GEN_SRCS) $(GEN_TESTS) generator/src/main.cc)))

$(BUILD)/unit_tests: $(call objects,$(CORE_SRCS) $(UNIT_SRCS))
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ -lboost_unit_test_framework -lssl -lcrypto -lpcre2-8

$(GENERATOR): $(call objects,$(GEN_SRCS) generator/src/main.cc)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(GEN_LIBS)

$(BUILD)/generator_tests: $(call objects,$(GEN_SRCS) $(GEN_TESTS))
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ -lboost_unit_test_framework $(GEN_LIBS)

$(BUILD)/test-certs/leaf.crt: t/lib/make-certs.sh
	rm -rf $(BUILD)/test-certs
	sh t/lib/make-certs.sh $(BUILD)/test-certs

# GENERATOR_TESTS_RUN: the generator's tests to run (Boost's --run_test);
# test-debian's chroots leave out the hostile input corpus, which renders
# and reads back with the generator's own code alone (the longest, five
# minutes: it runs under this machine's `make test`). All of them run as
# two processes side by side, one the corpus for nginx 1.22 alone (half
# of the time).
GENERATOR_TESTS = GTLS_TEST_CERTS=$(BUILD)/test-certs $(BUILD)/generator_tests --report_level=short --color_output=no
HOSTILE_1_22 := hostile_input/no_string_field_changes_the_shape_of_the_configuration
test-unit: $(BUILD)/unit_tests $(BUILD)/generator_tests $(BUILD)/test-certs/leaf.crt
	GTLS_TEST_CERTS=$(BUILD)/test-certs $(BUILD)/unit_tests --report_level=short --color_output=no
	$(if $(GENERATOR_TESTS_RUN),$(GENERATOR_TESTS) --run_test='$(GENERATOR_TESTS_RUN)', \
	  $(GENERATOR_TESTS) --run_test='$(HOSTILE_1_22)' & corpus=$$!; \
	  $(GENERATOR_TESTS) --run_test='!$(HOSTILE_1_22)'; rest=$$?; \
	  wait $$corpus && [ $$rest = 0 ])

# The generator's golden files (generator/tests/testdata/NAME.*) written
# afresh from NAME.in.yaml: review the diff, then commit it.
golden: $(BUILD)/generator_tests
	UPDATE_GOLDEN=1 $(BUILD)/generator_tests --run_test=golden
	git status --short generator/tests/testdata

# Both unit test binaries under valgrind: no memory error, no definite or
# indirect leak (OpenSSL's and yaml-cpp's process-lifetime caches are "still
# reachable", which is not a leak). The generator's tests but the hostile
# corpus (its own code alone, for minutes under valgrind) run as two
# processes side by side, about even: VALGRIND_HALF's suites, and the rest;
# a property test that resolves at every round (route_changes) takes
# GTLS_PROPERTY_ROUNDS of them (40, not 300: seconds, not minutes).
VALGRIND := valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=3 --quiet
VALGRIND_HALF := run_mode,gateway_tls,yaml_tree,policy_trust
test-valgrind: $(BUILD)/unit_tests $(BUILD)/generator_tests $(BUILD)/test-certs/leaf.crt
	GTLS_TEST_CERTS=$(BUILD)/test-certs $(VALGRIND) $(BUILD)/unit_tests --report_level=short --color_output=no
	GTLS_TEST_CERTS=$(BUILD)/test-certs GTLS_PROPERTY_ROUNDS=40 $(VALGRIND) $(BUILD)/generator_tests --report_level=short \
	  --color_output=no --run_test='$(VALGRIND_HALF)' & half=$$!; \
	GTLS_TEST_CERTS=$(BUILD)/test-certs GTLS_PROPERTY_ROUNDS=40 $(VALGRIND) $(BUILD)/generator_tests --report_level=short \
	  --color_output=no --run_test='!hostile_input,$(VALGRIND_HALF)'; rest=$$?; wait $$half && [ $$rest = 0 ]

# TESTS: the test files prove runs (make test-nginx TESTS=t/230-stream-sni-servers.t,
# also through test-debian's chroot); the ConformanceReport needs them all.
TESTS ?= t/
test-nginx: module $(FAULT_SO) $(GENERATOR) $(BUILD)/generator_tests $(if $(filter 1,$(SANITIZE)),$(SAN_NGINX))
	$(if $(filter 1,$(SANITIZE)),rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS))
	rm -f $(CONFORMANCE_RESULTS)
	$(SAN_ENV) GTLS_MODULE=$(MODULE_SO) GTLS_LAYOUT_FAULT_MODULE=$(FAULT_SO) GATEWAY2NGINX=$(GENERATOR) prove --timer -r $(TESTS)
	$(if $(filter 1,$(SANITIZE)),@$(SAN_CHECK))
	$(if $(filter t/,$(TESTS)),@$(CONFORMANCE_REPORT) > /dev/null)

# The suite (or TESTS) STRESS_RUNS times beside a CPU hog (stress-ng, twice
# as many CPU workers as cores): what holds only on an idle machine fails
# here (t/lib/stress.sh).
STRESS_RUNS ?= 3
test-stress: DEPS += stress-ng
test-stress: module $(FAULT_SO) $(GENERATOR) $(BUILD)/generator_tests | deps
	GTLS_MODULE=$(MODULE_SO) GTLS_LAYOUT_FAULT_MODULE=$(FAULT_SO) GATEWAY2NGINX=$(GENERATOR) \
	  t/lib/stress.sh $(STRESS_RUNS) $(TESTS)

# The Gateway API conformance replays alone (also part of test-nginx): the
# suite's BackendTLSPolicy, TLSRoute, client certificate, TCPRoute, UDPRoute
# and ListenerSet tests, then the rest (t/400), each served in both modes
# (render: gateway2nginx -f; run: gateway2nginx run, the t/4*-run.t files,
# t/402 and t/470), whether they earn every feature the GatewayClass claims
# in each mode (t/490), and a ConformanceReport per mode.
CONFORMANCE_T := t/410-conformance-backendtls.t t/420-conformance-tlsroute.t t/430-conformance-client-certs.t \
                 t/440-conformance-tcproute.t t/450-conformance-udproute.t t/460-conformance-listenerset.t \
                 t/411-conformance-backendtls-run.t t/421-conformance-tlsroute-run.t \
                 t/431-conformance-client-certs-run.t t/441-conformance-tcproute-run.t \
                 t/451-conformance-udproute-run.t t/461-conformance-listenerset-run.t \
                 t/470-conformance-infrastructure.t \
                 t/400-conformance.t t/402-conformance-run.t \
                 t/490-conformance-claims.t t/491-conformance-counts.t
CONFORMANCE_RESULTS := $(foreach t,$(CONFORMANCE_T),t/servroot-$(basename $(notdir $(t)))/conformance-results.json)
# The report of the replays that ran: they skip, saying so, where
# GATEWAY_API_DIR (a checkout of kubernetes-sigs/gateway-api: its
# conformance/ manifests) is not given.
CONFORMANCE_REPORT = ran=$$(ls $(CONFORMANCE_RESULTS) 2>/dev/null); \
  if [ -z "$$ran" ]; then echo "ConformanceReport: not written, no conformance replay ran" >&2; \
  else perl t/lib/conformance-report.pl $(BUILD)/conformance-report $$ran; fi
# GATEWAY_API_VERSION=vX.Y.Z: the suite's copy of that release,
# GATEWAY_API_DIR/vX.Y.Z (tests newer than it are left out), its reports
# kept as docs/conformance-report-vX.Y.Z-MODE.yaml; CONFORMANCE_KEEP=NAME
# keeps those of another revision as docs/conformance-report-NAME-MODE.yaml.
CONFORMANCE_SUITE = $(if $(GATEWAY_API_VERSION),$(GATEWAY_API_DIR)/$(GATEWAY_API_VERSION),$(GATEWAY_API_DIR))
CONFORMANCE_KEEP ?= $(GATEWAY_API_VERSION)
conformance: module $(GENERATOR)
	rm -f $(CONFORMANCE_RESULTS)
	GATEWAY_API_DIR=$(CONFORMANCE_SUITE) GTLS_MODULE=$(MODULE_SO) GATEWAY2NGINX=$(GENERATOR) prove -v $(CONFORMANCE_T)
	@export GATEWAY_API_DIR=$(CONFORMANCE_SUITE); $(CONFORMANCE_REPORT)
	$(if $(CONFORMANCE_KEEP),@for mode in render run; do \
	  if [ -f $(BUILD)/conformance-report-$$mode.yaml ]; then \
	    cp $(BUILD)/conformance-report-$$mode.yaml docs/conformance-report-$(CONFORMANCE_KEEP)-$$mode.yaml; \
	    echo "kept as docs/conformance-report-$(CONFORMANCE_KEEP)-$$mode.yaml" >&2; fi; done)

# Every one-shot gateway2nginx run of the suite (TESTS) repeated by BASE's
# build (a git revision) and compared: a change that must not change the
# output shows it this way (t/lib/check-rendering.sh).
BASE ?= HEAD
check-rendering: module $(FAULT_SO) $(GENERATOR)
	GTLS_MODULE=$(MODULE_SO) GTLS_LAYOUT_FAULT_MODULE=$(FAULT_SO) GATEWAY2NGINX=$(GENERATOR) \
	  t/lib/check-rendering.sh $(BASE) $(TESTS)

# Debian's nginx with the ASan and UBSan runtimes preloaded, for SANITIZE=1.
$(SAN_NGINX):
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nLD_PRELOAD="%s %s" ASAN_OPTIONS="$${ASAN_OPTIONS:-detect_leaks=0}:verify_asan_link_order=0" exec /usr/sbin/nginx "$$@"\n' \
	  "$$(gcc -print-file-name=libasan.so)" "$$(gcc -print-file-name=libubsan.so)" > $@
	chmod +x $@

test: deps
	$(MAKE) all
	$(MAKE) test-unit
	$(if $(filter 1,$(SANITIZE)),,$(MAKE) test-valgrind)
	$(MAKE) test-nginx

# Another Debian release (RELEASE=trixie, sid): the modules built against
# that release's nginx-dev and the suite run against its nginx, in a
# debootstrap chroot of it under build/debian/RELEASE (.ci/debian-chroot),
# in a network namespace of its own (two releases' suites run side by side).
# The suite there (TESTS=t/) is what that release's nginx, OpenSSL and
# compiler can change: the module's tests (t/0*, t/1*), configurations
# gateway2nginx renders served by that nginx (t/2*), the module's
# upstream API (t/310, t/315, t/330-t/335): DEBIAN_MODULE_TESTS; and the
# conformance replays in mode render (t/4*): DEBIAN_REPLAY_TESTS, left
# out where it is set empty (.ci/run). What tests gateway2nginx's own
# code, whatever nginx serves, runs on this machine alone: gateway2nginx
# run (the other t/3*: files, the API server simulation, reloads,
# fairness), the replays in mode run (t/402, the t/4*-run.t files, t/470),
# and t/265's hostile strings (their escaping is the generator's; nginx -t
# judging each takes four minutes). TESTS='$(wildcard t/*.t)' runs every
# file there.
RELEASE ?= trixie
DEBIAN_MODULE_TESTS = $(filter-out t/265-%,$(sort $(wildcard t/0*.t t/1*.t t/2*.t t/310-*.t t/315-*.t t/33*.t)))
DEBIAN_REPLAY_TESTS = $(filter-out t/402-% t/4%-run.t t/470-%,$(sort $(wildcard t/4*.t)))
DEBIAN_TESTS = $(if $(filter t/,$(TESTS)),$(DEBIAN_MODULE_TESTS) $(DEBIAN_REPLAY_TESTS),$(TESTS))
test-debian:
	.ci/debian-chroot $(RELEASE) deps
	.ci/debian-chroot $(RELEASE) -j2 all
	DEBIAN_CHROOT_NET=private .ci/debian-chroot $(RELEASE) test-unit test-nginx TESTS='$(DEBIAN_TESTS)' \
	  GENERATOR_TESTS_RUN='!hostile_input'

# Debian packages for this machine's release, built as Debian builds its
# nginx module packages (debhelper, dh_nginx: enabled on installation,
# depending on this nginx's ABI), checked by lintian: build/deb/*.deb.
# Built again only when a file they are built from changed (the tree as
# git sees it, tracked and new files; else every file but build/ and the
# servroots): build/deb/.built says when they were.
DEB_DEPS := build-essential debhelper dpkg-dev lintian fakeroot
PACKAGED_LIST := { git ls-files -z --cached --others --exclude-standard 2>/dev/null \
  || find . \( -path ./build -o -path './t/servroot*' -o -path ./.git \) -prune -o -type f -print0; }
PACKAGED := $(wildcard $(patsubst ./%,%,$(shell $(PACKAGED_LIST) | tr '\0' '\n')))
DEB_BUILT := $(BUILD)/deb/.built
deb: DEPS += $(DEB_DEPS)
deb: $(DEB_BUILT)
$(DEB_BUILT): $(PACKAGED) | deps
	@mkdir -p $(BUILD) && touch $(BUILD)/.deb-started  # a file changed during the build is newer than the stamp
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/nginx-gateway-tls
	$(PACKAGED_LIST) | tar --null -T - -cf - | tar -C $(BUILD)/deb/nginx-gateway-tls -xf -
	cd $(BUILD)/deb/nginx-gateway-tls && dpkg-buildpackage -b -us -uc -J$$(nproc) > ../build.log 2>&1 \
	  || { tail -40 ../build.log; exit 1; }
	cd $(BUILD)/deb && lintian --fail-on error,warning --display-info *.changes
	@ls $(BUILD)/deb/*.deb
	mv $(BUILD)/.deb-started $@

# The packages of RELEASE built in its chroot (this machine's release:
# here, `make deb`, whose packages the image is made of too), then
# installed with apt on a fresh debootstrap of RELEASE, and nginx -t with
# both modules in use.
HOST_RELEASE := $(shell . /etc/os-release 2>/dev/null && echo "$$VERSION_CODENAME")
ON_HOST = $(filter $(HOST_RELEASE),$(RELEASE))
test-deb: DEPS += $(DEB_DEPS)
test-deb: $(if $(ON_HOST),$(DEB_BUILT))
	$(if $(ON_HOST),,.ci/debian-chroot $(RELEASE) deb)
	.ci/deb-install-test $(RELEASE) $(if $(ON_HOST),$(BUILD)/deb,$(CURDIR)/build/debian/$(RELEASE)/src/build/deb)

# The OCI image (deploy/image/build): the packages `make deb` builds, in a
# Debian rootfs of this release, as an OCI layout in build/image/oci; built
# a second time from the same packages, and the two digests compared.
# Again only when the packages or deploy/image/ changed (build/image/.built).
IMAGE_DEPS := mmdebstrap umoci dpkg-dev
# What every target here installs, at once: .ci/run's lanes run side by
# side, and apt takes one at a time
deps-all: DEPS += $(DEB_DEPS) $(IMAGE_DEPS)
deps-all: deps
IMAGE_BUILT := $(BUILD)/image/.built
image: DEPS += $(IMAGE_DEPS) $(DEB_DEPS)
image: $(IMAGE_BUILT)
$(IMAGE_BUILT): $(DEB_BUILT) $(wildcard deploy/image/*) | deps
	@touch $(BUILD)/.image-started
	deploy/image/build $(BUILD)/deb $(BUILD)/image
	deploy/image/inspect $(BUILD)/image/oci
	deploy/image/build $(BUILD)/deb $(BUILD)/image.again
	@a=$$(deploy/image/inspect $(BUILD)/image/oci | awk '$$1 == "digest" {print $$2}'); \
	b=$$(deploy/image/inspect $(BUILD)/image.again/oci | awk '$$1 == "digest" {print $$2}'); \
	if [ "$$a" = "$$b" ]; then echo "built twice: the same digest $$a"; rm -rf $(BUILD)/image.again; \
	else echo "built twice: $$a and $$b differ (both kept under $(BUILD))" >&2; exit 1; fi
	mv $(BUILD)/.image-started $@

# The image run as deploy/'s Deployment says, against the API server
# simulation (t/378-deploy-image.t: no container engine runs here, so its
# rootfs in namespaces of its own), and the manifests' own test (t/377).
test-deploy: DEPS += $(IMAGE_DEPS) $(DEB_DEPS)
test-deploy: $(IMAGE_BUILT) module $(GENERATOR) | deps
	GTLS_IMAGE=$(BUILD)/image/oci GTLS_MODULE=$(MODULE_SO) GATEWAY2NGINX=$(GENERATOR) \
	  prove t/377-deploy.t t/378-deploy-image.t

install: module $(GENERATOR)
	install -m 0644 $(MODULE_SO) $(STREAM_SO) $(MODULES_DIR)/
	install -m 0755 $(GENERATOR) /usr/local/bin/gateway2nginx
	mkdir -p /usr/share/nginx/modules-available /etc/nginx/modules-enabled
	echo 'load_module modules/ngx_http_gateway_tls_module.so;' \
	  > /usr/share/nginx/modules-available/mod-http-gateway-tls.conf
	ln -sf /usr/share/nginx/modules-available/mod-http-gateway-tls.conf \
	  /etc/nginx/modules-enabled/50-mod-http-gateway-tls.conf
	# after Debian's 50-mod-stream.conf, which loads ngx_stream_module.so
	echo 'load_module modules/ngx_stream_gateway_tls_module.so;' \
	  > /usr/share/nginx/modules-available/mod-stream-gateway-tls.conf
	ln -sf /usr/share/nginx/modules-available/mod-stream-gateway-tls.conf \
	  /etc/nginx/modules-enabled/60-mod-stream-gateway-tls.conf

demo: deps
	$(MAKE) module $(GENERATOR)
	GTLS_MODULE=$(MODULE_SO) GATEWAY2NGINX=$(GENERATOR) bash conf-examples/demo.sh

# libFuzzer targets (clang from Debian, ASan and UBSan): the module's SPEC
# parsing and matching, its PEM loading, the upstream API's bodies (servers
# and trust; route tables, matched), and the generator's whole pipeline
# on arbitrary bytes as YAML. Each runs FUZZ_SECONDS from the seed corpus in
# the repository; what it learns stays under build/fuzz.
FUZZ_SECONDS ?= 60
FUZZ_CXX     := clang++-14
# pointer-overflow is left out: Debian's RapidJSON 1.1.0 adds to its null
# stack pointer before the first allocation (internal::Stack::Reserve),
# on every parse; fixed upstream after 1.1.0.
FUZZ_FLAGS   := -O1 -g -std=c++17 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                -fno-sanitize=pointer-overflow -Ingx_module/core -Igenerator/src
FUZZ_TARGETS ?= spec pem upstream_api routes generator hostile kube

fuzz: DEPS += clang-14 libclang-rt-14-dev
fuzz: deps $(BUILD)/test-certs/leaf.crt
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/spec ngx_module/fuzz/fuzz_spec.cc $(CORE_SRCS) -lpcre2-8 -lssl -lcrypto
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/pem ngx_module/fuzz/fuzz_pem.cc $(CORE_SRCS) -lpcre2-8 -lssl -lcrypto
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/upstream_api ngx_module/fuzz/fuzz_upstream_api.cc $(CORE_SRCS) -lpcre2-8 -lssl -lcrypto
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/routes ngx_module/fuzz/fuzz_routes.cc $(CORE_SRCS) -lpcre2-8 -lssl -lcrypto
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/generator generator/fuzz/fuzz_generator.cc $(GEN_SRCS) $(GEN_LIBS)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/hostile generator/fuzz/fuzz_hostile.cc $(GEN_SRCS) $(GEN_LIBS)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -o $(BUILD)/fuzz/kube generator/fuzz/fuzz_kube.cc $(GEN_SRCS) $(GEN_LIBS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  seeds=ngx_module/fuzz/corpus/$$t; [ $$t = generator ] && seeds=generator/fuzz/corpus; \
	  [ $$t = hostile ] && seeds=generator/fuzz/corpus-hostile; \
	  [ $$t = kube ] && seeds=generator/fuzz/corpus-kube; \
	  mkdir -p $(BUILD)/fuzz/corpus-$$t $(BUILD)/fuzz/crashes-$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  GTLS_TEST_CERTS=$(BUILD)/test-certs $(BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -rss_limit_mb=4096 \
	    -artifact_prefix=$(BUILD)/fuzz/crashes-$$t/ $(BUILD)/fuzz/corpus-$$t $$seeds 2> $(BUILD)/fuzz/$$t.log \
	    || { tail -40 $(BUILD)/fuzz/$$t.log; exit 1; }; \
	  grep -E 'DONE|stat::number_of_executed_units|stat::peak_rss_mb' $(BUILD)/fuzz/$$t.log; \
	done

# Benchmarks print ratios measured side by side in one run (bench/).
bench: deps
	$(MAKE) all
	bash bench/run.sh

clean:
	rm -rf $(BUILD) t/servroot*
