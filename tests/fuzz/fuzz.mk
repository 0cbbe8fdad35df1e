# Fuzzers (libFuzzer, clang). Included by tests/tests.mk.
#   make fuzz-tests [FUZZ_SECONDS=60]    run every target on its seed corpus
#   make fuzz-proxy_proto FUZZ_TIME=300  one target for FUZZ_TIME seconds
#
# FUZZ_SECONDS is each target's budget: 20 s each, 80 s in all, which CI
# runs on every submission (60 s each until CI neared its 45 minutes; run
# longer by hand: FUZZ_SECONDS=300).
#
# Each target is built by clang straight from the sources it covers, not
# from libmmp.a, so that all of it is instrumented. Seeds are committed in
# tests/fuzz/corpus/TARGET/ (real HAProxy and nginx headers among them:
# tests/fuzz/capture-seeds.sh); a run copies them to $(BUILD)/fuzz-corpus/TARGET,
# where libFuzzer adds what it finds.

FUZZ_SECONDS ?= 20
FUZZ_MAX_LEN ?= 70000
FUZZ_CFLAGS  ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Iinclude -Iuser
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CORPUS  := $(BUILD)/fuzz-corpus

FUZZ_TARGETS := proxy_proto spp allowlist udp_classify
FUZZ_SRCS_proxy_proto  := user/proto/proxy_proto.c user/proto/crc32c.c user/proto/pp_tlv_fmt.c
FUZZ_SRCS_spp          := user/proto/udp_spp.c
FUZZ_SRCS_allowlist    := user/proto/allowlist.c user/proto/line_file.c
FUZZ_SRCS_udp_classify := user/udp/udp_classify.c user/lib/sockaddr.c user/proto/udp_spp.c user/proto/proxy_proto.c user/proto/crc32c.c

.PHONY: fuzz-tests $(addprefix fuzz-,$(FUZZ_TARGETS))

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRCS_$*)

# fuzz-TARGET: seeds copied to a writable corpus, then FUZZ_TIME seconds (default: FUZZ_SECONDS).
$(addprefix fuzz-,$(FUZZ_TARGETS)): fuzz-%: $(FUZZ_DIR)/fuzz_%
	@mkdir -p $(FUZZ_DIR)/artifacts $(FUZZ_CORPUS)/$*
	@cp tests/fuzz/corpus/$*/* $(FUZZ_CORPUS)/$*/
	@t=$${FUZZ_TIME:-$(FUZZ_SECONDS)}; [ $$t -ge 1 ] || t=1; \
	echo "== fuzz_$* for $$t s"; \
	$(FUZZ_DIR)/fuzz_$* -max_total_time=$$t -max_len=$(FUZZ_MAX_LEN) \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/$*- -print_final_stats=1 $(FUZZ_CORPUS)/$*

fuzz-tests: $(addprefix fuzz-,$(FUZZ_TARGETS))
