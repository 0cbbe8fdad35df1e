# Integration tests: real sockets in network namespaces, HAProxy/nginx as the
# load balancer, mmproxy in between, tests/tools/ as client and upstream.
# Included from tests/tests.mk (the top-level Makefile defines BUILD and BIN).
#
#   make integration-tests                 build everything, run the suite (root)
#   make integration-tools                 only the test tools
#   MMP_BIN=/usr/bin/go-mmproxy bash tests/integration/run-all.sh
#   MMP_ENGINE=sockmap make integration-tests

TEST_TOOLS_DIR    := $(BUILD)/tests/tools
TEST_TOOLS_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE $(SAN_FLAGS)
# mmpt_*.c (mmpt_common.c, mmpt_connect.c) are shared objects, each compiled
# once and linked into every tool; every other tests/tools/*.c is one tool.
TEST_TOOLS_LIB_SRCS := $(wildcard tests/tools/mmpt_*.c)
TEST_TOOLS_LIB_OBJS := $(patsubst tests/tools/%.c,$(TEST_TOOLS_DIR)/%.o,$(TEST_TOOLS_LIB_SRCS))
TEST_TOOLS_HDRS   := $(wildcard tests/tools/*.h)
# mmpt_common.c's SHA-256 is libcrypto's.
TEST_TOOLS_LDLIBS := -lcrypto
# mmpt-faults.c is no tool but an LD_PRELOAD shim (t23): built as a .so, without sanitizers.
# mmpt-drops.c loads a BPF program of its own (tests/tools/bpf/): built by its own rules below.
TEST_TOOLS_SRCS   := $(filter-out $(TEST_TOOLS_LIB_SRCS) tests/tools/mmpt-faults.c tests/tools/mmpt-drops.c,$(wildcard tests/tools/*.c))
TEST_TOOLS        := $(patsubst tests/tools/%.c,$(TEST_TOOLS_DIR)/%,$(TEST_TOOLS_SRCS))
TEST_TOOLS_OBJS   := $(TEST_TOOLS:=.o)

.PHONY: integration-tests integration-tools

integration-tools: $(TEST_TOOLS) $(TEST_TOOLS_DIR)/mmpt-faults.so $(TEST_TOOLS_DIR)/mmpt-drops

$(TEST_TOOLS_DIR)/mmpt-faults.so: tests/tools/mmpt-faults.c
	@mkdir -p $(TEST_TOOLS_DIR)
	$(CC) -O2 -g -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -shared -fPIC -o $@ $< -ldl

$(TEST_TOOLS_OBJS) $(TEST_TOOLS_LIB_OBJS): $(TEST_TOOLS_DIR)/%.o: tests/tools/%.c $(TEST_TOOLS_HDRS)
	@mkdir -p $(TEST_TOOLS_DIR)
	$(CC) $(TEST_TOOLS_CFLAGS) -c -o $@ $<

$(TEST_TOOLS): $(TEST_TOOLS_DIR)/%: $(TEST_TOOLS_DIR)/%.o $(TEST_TOOLS_LIB_OBJS)
	$(CC) $(TEST_TOOLS_CFLAGS) -o $@ $^ $(TEST_TOOLS_LDLIBS)

# mmpt-drops: the tc tests' PAWS verdict (tc-lib.sh), a test-only BPF program and its skeleton.
$(TEST_TOOLS_DIR)/drop_watch.bpf.o: tests/tools/bpf/drop_watch.bpf.c tests/tools/bpf/drop_watch.h vmlinux/vmlinux.h
	@mkdir -p $(TEST_TOOLS_DIR)
	$(call bpf_object,-Itests/tools)

$(TEST_TOOLS_DIR)/drop_watch.skel.h: $(TEST_TOOLS_DIR)/drop_watch.bpf.o
	$(call bpf_skeleton,drop_watch)

$(TEST_TOOLS_DIR)/mmpt-drops: tests/tools/mmpt-drops.c $(TEST_TOOLS_DIR)/drop_watch.skel.h tests/tools/bpf/drop_watch.h $(TEST_TOOLS_LIB_OBJS)
	$(CC) $(TEST_TOOLS_CFLAGS) $(LIBBPF_CFLAGS) -Itests/tools -I$(TEST_TOOLS_DIR) -o $@ $< $(TEST_TOOLS_LIB_OBJS) $(LIBBPF_LIBS) $(TEST_TOOLS_LDLIBS)

integration-tests: $(BIN) $(TEST_TOOLS) $(TEST_TOOLS_DIR)/mmpt-faults.so $(TEST_TOOLS_DIR)/mmpt-drops
	MMP_BIN=$${MMP_BIN:-$(BIN)} MMP_TOOLS=$(TEST_TOOLS_DIR) bash tests/integration/run-all.sh $(INTEGRATION_FILES)
