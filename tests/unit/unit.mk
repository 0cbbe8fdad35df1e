# Unit tests (cmocka). Included by tests/tests.mk. (Fuzzers: tests/fuzz/fuzz.mk.)
#   make unit-tests                  build and run every tests/unit/test_*.c
#
# A unit test tests/unit/test_X.c becomes $(BUILD)/tests/test_X, linked
# against $(BUILD)/libmmp.a (which may need libbpf/pthread: $(LDLIBS)).

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
UNIT_HDRS := $(wildcard tests/unit/*.h) bpf/common.h
# bpf/common.h: the TC verdicts and wire constants the BPF programs and their tests share.
UNIT_CFLAGS = $(CFLAGS) -Ibpf

# Helpers shared by some tests (tests/unit/*.c that are not test_*.c): each
# test binary that uses one lists its object as a prerequisite below.
TC_FIXTURES := $(BUILD)/tests/tc_fixtures.o

.PHONY: unit-tests

$(BUILD)/tests/%.o: tests/unit/%.c $(UNIT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_tc_rewrite $(BUILD)/tests/test_tc_packet $(BUILD)/tests/test_tc_icmp: $(TC_FIXTURES)

# Fault injection: pipe2 fails (or gives an 8 KiB pipe F_SETPIPE_SZ will not grow)
# on demand, close, the worker's close and the log are recorded, epoll is left out.
$(BUILD)/tests/test_splice_fds: LDLIBS += -Wl,--wrap=pipe2,--wrap=close,--wrap=fcntl,--wrap=mmp_conn_close,--wrap=mmp_loop_watch,--wrap=mmp_log

# The sweep's bpf() reads of the flow map are counted.
$(BUILD)/tests/test_tc_collect: LDLIBS += -Wl,--wrap=bpf_map_get_next_key,--wrap=bpf_map_lookup_elem,--wrap=bpf_map_lookup_batch

# The test's source, then any helper objects it depends on (above).
$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libmmp.a $(HEADERS) $(UNIT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(filter %.o,$^) $(BUILD)/libmmp.a -lcmocka $(LDLIBS)

# Run every test binary, even after a failure; fail if any failed.
unit-tests: $(UNIT_BINS)
	@failed=0; \
	for t in $(UNIT_BINS); do \
		echo "== $$t"; \
		$$t || { echo "FAILED: $$t"; failed=$$((failed + 1)); }; \
	done; \
	if [ $$failed -ne 0 ]; then echo "unit-tests: $$failed suite(s) failed"; exit 1; fi; \
	echo "unit-tests: all $(words $(UNIT_BINS)) suite(s) passed"
