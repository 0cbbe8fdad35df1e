# Benchmark suite, included by the top-level Makefile.
#   make bench-tools   loadgen, upstream and udpgen into $(BUILD)/bench/
#   make bench         quick side-by-side run: bench/run.sh --quick, every scenario
#                      (stream50 and wrk through HAProxy to nginx included) against
#                      go-mmproxy, and go-mmproxy HEAD and mmproxy-rs when installed
#                      (~20 min with the three engines and all peers)
#   make bench-full    longer runs, 5 rounds, also behind HAProxy (~45 min)
#   make bench-field   field loads with tcpkali and wrk through HAProxy to
#                      nginx, against the peers (bench/field.sh, ~15 min)
#   make bench-scale   100,000 connections held through the tc engine: RSS,
#                      slab, map memory, pp and connection rates (bench/scale.sh;
#                      BENCH_SCALE_ARGS="-c 3000 --configs ..." for the peers)
#   make bench-bridged the upstream in a "container" on a Linux bridge: pp50 and
#                      bulk1-down through no proxy, mmproxy-bpf (3 engines) and
#                      go-mmproxy with its iptables recipe (bench/bridged.sh, ~2 min;
#                      BENCH_BRIDGED_ARGS="--rounds 5 -T 3" for more, and
#                      "--scenarios udp-rr,udp-stream --engines tc,splice" for UDP)
#   make bench-tests   correctness only (no speed asserted): histogram unit
#                      test, loadgen through upstream echo directly and
#                      through mmproxy-bpf (splice), one short round of
#                      bench/bridged.sh (pp50, and udp-rr through tc);
#                      prints "N passed, M failed"

BENCH_OUT    := $(BUILD)/bench
BENCH_CFLAGS := $(CFLAGS) -Ibench -pthread
BENCH_LIBS   := -pthread -lm
BENCH_HDRS   := $(wildcard bench/*.h)

BENCH_COMMON  := addr proxyhdr pattern
# What the two load generators share: options, CPU samples, report pieces.
LOADGEN_COMMON := cli histogram cpustat report_common
LOADGEN_OBJS  := $(addprefix $(BENCH_OUT)/,$(addsuffix .o,\
	loadgen lg_worker lg_report $(LOADGEN_COMMON) $(BENCH_COMMON)))
UPSTREAM_OBJS := $(addprefix $(BENCH_OUT)/,$(addsuffix .o,upstream $(BENCH_COMMON)))
UDPGEN_OBJS   := $(addprefix $(BENCH_OUT)/,$(addsuffix .o,\
	udpgen udp_flow udp_stream udp_rr udp_echo udp_report $(LOADGEN_COMMON) \
	$(BENCH_COMMON)))
BENCH_TOOLS   := $(BENCH_OUT)/loadgen $(BENCH_OUT)/upstream $(BENCH_OUT)/udpgen $(BENCH_OUT)/tc_cost \
	$(BENCH_OUT)/steer_cost

.PHONY: bench-tools bench-tests bench-field bench-scale bench-bridged

bench-tools: $(BENCH_TOOLS)

$(BENCH_OUT):
	@mkdir -p $@

$(BENCH_OUT)/%.o: bench/%.c $(BENCH_HDRS) | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

$(BENCH_OUT)/loadgen: $(LOADGEN_OBJS)
	$(CC) $(BENCH_CFLAGS) -o $@ $^ $(BENCH_LIBS)

$(BENCH_OUT)/upstream: $(UPSTREAM_OBJS)
	$(CC) $(BENCH_CFLAGS) -o $@ $^ $(BENCH_LIBS)

$(BENCH_OUT)/udpgen: $(UDPGEN_OBJS)
	$(CC) $(BENCH_CFLAGS) -o $@ $^ $(BENCH_LIBS)

# The tc program's cost per packet (BPF_PROG_TEST_RUN): needs the skeleton.
$(BENCH_OUT)/tc_cost: bench/tc_cost.c $(BUILD)/tc.skel.h include/mmp_tc.h | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -Iinclude -I$(BUILD) $(LIBBPF_CFLAGS) -o $@ $< $(LIBBPF_LIBS)

# The reply-steering program's cost per packet (docs/DESIGN.md §14).
$(BENCH_OUT)/steer_cost: bench/steer_cost.c $(BUILD)/steer.skel.h include/mmp_steer.h | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -Iinclude -I$(BUILD) $(LIBBPF_CFLAGS) -o $@ $< $(LIBBPF_LIBS)

$(BENCH_OUT)/test_histogram: $(BENCH_OUT)/test_histogram.o $(BENCH_OUT)/histogram.o
	$(CC) $(BENCH_CFLAGS) -o $@ $^ -lcmocka $(BENCH_LIBS)

# mmproxy-bpf engines to compare, e.g. make bench BENCH_ENGINES=splice,sockmap,tc
BENCH_ENGINES ?= tc,splice,sockmap

# Root is needed for namespaces and for the proxy (IP_TRANSPARENT, BPF).
bench: bench-tools $(BIN)
	@scripts/as-root.sh bash bench/run.sh --quick --engines $(BENCH_ENGINES)

bench-full: bench-tools $(BIN)
	@scripts/as-root.sh bash bench/run.sh --full --with-haproxy --engines $(BENCH_ENGINES)

bench-field: bench-tools $(BIN)
	@scripts/as-root.sh bash bench/field.sh $(BENCH_FIELD_ARGS)

bench-scale: bench-tools $(BIN)
	@scripts/as-root.sh bash bench/scale.sh $(BENCH_SCALE_ARGS)

bench-bridged: bench-tools $(BIN)
	@scripts/as-root.sh bash bench/bridged.sh $(BENCH_BRIDGED_ARGS)

# t49 (the scale smoke test) holds its 10,000 connections with these.
integration-tests: $(BENCH_OUT)/loadgen $(BENCH_OUT)/upstream

bench-tests: bench-tools $(BENCH_OUT)/test_histogram $(BIN)
	@scripts/as-root.sh bash bench/tests.sh
