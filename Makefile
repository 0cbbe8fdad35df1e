# mmproxy-bpf — top-level build.
#   make            binary + BPF objects (clang -> bpftool gen object -> bpftool gen skeleton)
#   make test       every test (installs deps first; needs root, re-runs through sudo)
#   make demo       HAProxy -> mmproxy-bpf -> upstream in namespaces (needs root)
#   make demo-container  the same with the upstream in a "container" ns on a bridge (no Docker needed)
#   make install    binary, man page and systemd unit
#   make deb        the Debian package (debian/), in build/deb/
#   make vmlinux    regenerate the committed vmlinux/vmlinux.h from the running kernel
#   make bench      quick benchmark (~5 min); make bench-full for everything

# make SANITIZE=1: binary, unit tests and test tools with ASan and UBSan (a UBSan report is fatal), built in build-san/.
ifeq ($(SANITIZE),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
BUILD     ?= build-san
endif
BUILD    ?= build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PREFIX   ?= /usr/local
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CFLAGS   ?= -O2 -g
CFLAGS   += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -std=gnu11 -D_GNU_SOURCE \
            -Iinclude -Iuser -I$(BUILD) -DMMP_VERSION='"$(VERSION)"' $(SAN_FLAGS)
LIBBPF_CFLAGS := $(shell pkg-config --cflags libbpf 2>/dev/null)
LIBBPF_LIBS   := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf)
LIBXDP_LIBS   := $(shell pkg-config --libs libxdp 2>/dev/null || echo -lxdp)
# --metrics: libmicrohttpd (Debian libmicrohttpd-dev).
MHD_CFLAGS    := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS      := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
LDLIBS   += $(LIBXDP_LIBS) $(LIBBPF_LIBS) $(MHD_LIBS) -lpthread
# sd_notify for Type=notify units (user/lib/notify.c); without libsystemd-dev, notifications are no-ops.
SYSTEMD_LIBS := $(shell pkg-config --libs libsystemd 2>/dev/null)
ifneq ($(SYSTEMD_LIBS),)
CFLAGS   += -DMMP_HAVE_LIBSYSTEMD $(shell pkg-config --cflags libsystemd)
LDLIBS   += $(SYSTEMD_LIBS)
endif

# Capabilities dropped after set-up (user/lib/privileges.c): libcap-ng (Debian libcap-ng-dev).
CAPNG_CFLAGS := $(shell pkg-config --cflags libcap-ng 2>/dev/null)
CAPNG_LIBS   := $(shell pkg-config --libs libcap-ng 2>/dev/null || echo -lcap-ng)
CFLAGS   += $(CAPNG_CFLAGS)
LDLIBS   += $(CAPNG_LIBS)

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -Ivmlinux -Wall

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS    := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

# Every user/**/*.c except main.c is a library object, shared with tests and fuzzers.
# Sources include each other by path from user/ ("core/conn.h", "engine/engine.h").
USER_SRCS := $(filter-out user/main.c,$(shell find user -name '*.c' | sort))
USER_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
HEADERS   := $(wildcard include/*.h) $(shell find user -name '*.h')

BIN := $(BUILD)/mmproxy-bpf

# Keep the BPF objects: they are inputs of the skeletons, not throwaway intermediates.
.SECONDARY: $(BPF_OBJS) $(SKELS)

.PHONY: all test test-root demo demo-root demo-container demo-container-root install deb vmlinux clean bench bench-full deps
all: $(BIN)

$(BUILD) $(BUILD)/user:
	@mkdir -p $@

# The two steps of every BPF program, the test-only ones too
# (tests/integration/integration.mk). $(call bpf_object,EXTRA_CFLAGS):
# clang, then bpftool gen object, which links and strips the object.
# $(call bpf_skeleton,NAME): the skeleton, whose struct is NAME_bpf.
define bpf_object
	$(CLANG) $(BPF_CFLAGS) $(1) -c $< -o $@.tmp.o
	$(BPFTOOL) gen object $@ $@.tmp.o || { rm -f $@ $@.tmp.o; false; }
	@rm -f $@.tmp.o
endef

define bpf_skeleton
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$(1))_bpf > $@.tmp && mv $@.tmp $@
endef

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(HEADERS) $(wildcard bpf/*.h) vmlinux/vmlinux.h | $(BUILD)
	$(call bpf_object,)

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call bpf_skeleton,$*)

$(BUILD)/user/%.o: user/%.c $(HEADERS) $(SKELS) | $(BUILD)/user
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LIBBPF_CFLAGS) $(MHD_CFLAGS) -c $< -o $@

# Rebuilt from scratch: `ar r` keeps members of deleted sources, which then shadow nothing but link stale code.
$(BUILD)/libmmp.a: $(USER_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/user/main.o $(BUILD)/libmmp.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h

deps:
	@scripts/as-root.sh bash scripts/deps.sh

# test and demo need root (network namespaces, IP_TRANSPARENT, BPF): as-root.sh
# re-runs them through sudo, or says plainly that root is needed.
test:
	@scripts/as-root.sh $(MAKE) --no-print-directory test-root

# The integration suite runs once per engine: the same tests, parametrised.
TEST_ENGINES ?= splice sockmap tc

test-root: deps all
	@$(MAKE) --no-print-directory check-refs check-man
	@$(MAKE) --no-print-directory unit-tests
	@$(MAKE) --no-print-directory SANITIZE=1 unit-tests
	@$(MAKE) --no-print-directory fuzz-tests
	@for engine in $(TEST_ENGINES); do \
		echo "== integration suite, engine $$engine"; \
		MMP_ENGINE=$$engine $(MAKE) --no-print-directory integration-tests || exit 1; \
	done
	@for engine in $(TEST_ENGINES); do \
		echo "== integration subset under SANITIZE=1 (ASan + UBSan), engine $$engine"; \
		ASAN_OPTIONS=detect_leaks=0 MMP_ENGINE=$$engine $(MAKE) --no-print-directory SANITIZE=1 \
			INTEGRATION_FILES="$(SAN_INTEGRATION_FILES)" \
			integration-tests || exit 1; \
	done
	@$(MAKE) --no-print-directory bench-tests

# One pass per engine under the sanitizers: bad input, half-close, UDP flows and the hand-off paths,
# not the timing-sensitive files (ASan slows every packet the control plane touches). Memory errors
# and undefined behaviour fail the run; leak reports are off here, since the test tools exit
# without freeing what they hold.
SAN_INTEGRATION_FILES ?= t01 t03 t06 t21 t30 t40

# The docs against the tree: every path and DESIGN § cited exists (check-refs),
# and the man page lists the options --help prints, with the same defaults
# (check-man). Both are in `make test`; neither needs root.
.PHONY: check-refs check-man
check-refs:
	@python3 scripts/check-refs.py

check-man: $(BIN)
	@python3 scripts/check-man-options.py $(BIN) docs/mmproxy-bpf.8

demo:
	@scripts/as-root.sh $(MAKE) --no-print-directory demo-root

demo-root: deps all
	@bash scripts/demo.sh

# The upstream beyond loopback (docs/DESIGN.md §14): a "container" namespace on a Linux bridge.
demo-container:
	@scripts/as-root.sh $(MAKE) --no-print-directory demo-container-root

demo-container-root: deps all
	@bash scripts/demo.sh --container

install: $(BIN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/sbin/mmproxy-bpf
	install -D -m 0644 docs/mmproxy-bpf.8 $(DESTDIR)$(PREFIX)/share/man/man8/mmproxy-bpf.8
	install -D -m 0644 scripts/mmproxy-bpf.service $(DESTDIR)/etc/systemd/system/mmproxy-bpf.service
	install -D -m 0644 scripts/mmproxy-bpf@.service $(DESTDIR)/etc/systemd/system/mmproxy-bpf@.service
	install -D -m 0644 scripts/mmproxy-bpf@.socket $(DESTDIR)/etc/systemd/system/mmproxy-bpf@.socket

# make deb: dpkg-buildpackage writes its results next to the tree it builds,
# so it builds a copy of the sources in DEB_DIR/src and the .deb lands in
# DEB_DIR. Emptied first, so that build/deb/mmproxy-bpf_*.deb names one file.
# Offline, as root or not (Rules-Requires-Root: no), unsigned; DEB_JOBS
# parallel jobs. The sources are the tracked top-level entries the build needs.
DEB_DIR  ?= build/deb
DEB_JOBS ?= 2
DEB_SRC  := Makefile README.md bpf debian docs include scripts user vmlinux
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "make deb: dpkg-buildpackage or dh is missing: apt-get install dpkg-dev debhelper (or make deps)" >&2; exit 1; }
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	cp -a $(DEB_SRC) $(DEB_DIR)/src/
	cd $(DEB_DIR)/src && MMP_GIT_VERSION=$(VERSION) dpkg-buildpackage -us -uc -b -j$(DEB_JOBS)
	rm -rf $(DEB_DIR)/src
	@ls -1 $(DEB_DIR)/*.deb

clean:
	rm -rf $(BUILD)

-include tests/tests.mk
-include bench/bench.mk
