# Unit tests (cmocka) and fuzzers (libFuzzer). Included by tests/tests.mk.
#   make unit-tests                  build and run every tests/unit/test_*.c
#   make fuzz-tests [FUZZ_SECONDS=60] run each fuzzer on a seed corpus
#
# A unit test tests/unit/test_X.c becomes $(BUILD)/tests/test_X, linked
# against $(BUILD)/libmmp.a (which may need libbpf/pthread: $(LDLIBS)).
# Fuzzers are built by clang straight from the sources they cover, not from
# libmmp.a, so that the whole parser is instrumented.

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
UNIT_HDRS := $(wildcard tests/unit/*.h)

# Helpers shared by some tests (tests/unit/*.c that are not test_*.c): each
# test binary that uses one lists its object as a prerequisite below.
TC_FIXTURES := $(BUILD)/tests/tc_fixtures.o

FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 70000
FUZZ_CFLAGS  ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Iinclude -Iuser
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CORPUS  := $(BUILD)/fuzz-corpus
FUZZ_PP      := $(FUZZ_DIR)/fuzz_proxy_proto
FUZZ_PP_SRCS := tests/fuzz/fuzz_proxy_proto.c user/proxy_proto.c user/crc32c.c

.PHONY: unit-tests fuzz-tests fuzz-corpus

$(BUILD)/tests/%.o: tests/unit/%.c $(UNIT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_tc_rewrite $(BUILD)/tests/test_tc_packet $(BUILD)/tests/test_tc_icmp: $(TC_FIXTURES)

# Fault injection: pipe2 fails on demand, close and the worker's close are recorded.
$(BUILD)/tests/test_splice_fds: LDLIBS += -Wl,--wrap=pipe2,--wrap=close,--wrap=mmp_conn_close

# The test's source, then any helper objects it depends on (above).
$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libmmp.a $(HEADERS) $(UNIT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(filter %.o,$^) $(BUILD)/libmmp.a -lcmocka $(LDLIBS)

# Run every test binary, even after a failure; fail if any failed.
unit-tests: $(UNIT_BINS)
	@failed=0; \
	for t in $(UNIT_BINS); do \
		echo "== $$t"; \
		$$t || { echo "FAILED: $$t"; failed=$$((failed + 1)); }; \
	done; \
	if [ $$failed -ne 0 ]; then echo "unit-tests: $$failed suite(s) failed"; exit 1; fi; \
	echo "unit-tests: all $(words $(UNIT_BINS)) suite(s) passed"

$(FUZZ_PP): $(FUZZ_PP_SRCS) user/proxy_proto.h
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -o $@ $(FUZZ_PP_SRCS)

# Seed headers, written with printf (octal escapes) so no binary file is
# committed. The v2 CRC32C seed carries the checksum of exactly these bytes.
SIG2 := \015\012\015\012\000\015\012QUIT\012
BLK4 := \177\000\000\001\012\000\000\002\037\220\001\273
fuzz-corpus:
	@mkdir -p $(FUZZ_CORPUS)
	@printf 'PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1\r\n' > $(FUZZ_CORPUS)/seed-v1-tcp4
	@printf 'PROXY TCP6 2001:db8::1 ::ffff:10.0.0.1 1234 443\r\n' > $(FUZZ_CORPUS)/seed-v1-tcp6
	@printf 'PROXY UNKNOWN\r\n' > $(FUZZ_CORPUS)/seed-v1-unknown
	@printf 'PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ::1 65535 0\r\n' > $(FUZZ_CORPUS)/seed-v1-unknown-long
	@printf '$(SIG2)\041\021\000\014$(BLK4)payload' > $(FUZZ_CORPUS)/seed-v2-tcp4
	@printf '$(SIG2)\041\042\000\044\040\001\015\270\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\001\004\322\001\273' > $(FUZZ_CORPUS)/seed-v2-udp6
	@printf '$(SIG2)\040\000\000\000' > $(FUZZ_CORPUS)/seed-v2-local
	@printf '$(SIG2)\041\021\000\023$(BLK4)\003\000\004\031\334\275\100' > $(FUZZ_CORPUS)/seed-v2-crc32c
	@printf '$(SIG2)\041\021\000\046$(BLK4)\002\000\013example.com\005\000\004id42\004\000\002ab' > $(FUZZ_CORPUS)/seed-v2-tlvs

fuzz-tests: $(FUZZ_PP) fuzz-corpus
	@mkdir -p $(FUZZ_DIR)/artifacts
	$(FUZZ_PP) -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ -print_final_stats=1 $(FUZZ_CORPUS)
