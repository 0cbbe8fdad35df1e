#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Scale scenario: hold N connections through a proxy, each pinging once per
# interval, and measure what holding them costs (issue 26, "Scale").
#
#   bench/scale.sh                                   100,000 through mmproxy-bpf/tc
#   bench/scale.sh -c 9000 --configs mmproxy-bpf/tc,go-mmproxy,mmproxy-rs
#
# The load generators (the load balancer's side) run in a namespace of their
# own, joined to the proxy's by a veth pair (TEST-NET 198.51.100.0/24; the
# tc engine hooks it with --iface), and connect from 126 addresses; the
# proxy and the upstreams share the other namespace's lo. With everything in
# one namespace (--one-ns) the generators' connect() competes for ports with
# the proxy's transparent binds to the header clients' ports (every one of
# 1024-65535): a port with a bind-made bucket is skipped, and as TIME_WAIT
# keeps them, connrate fell from 7,700 to 1,500-3,100 a second within 30 s,
# on any engine, with nothing held.
#
# Per configuration:
#   1. connrate (loadgen -m connrate -c 50) with none held: the base rate;
#   2. N connections opened by several `loadgen -m hold` processes (the
#      open-files hard limit is per process), paced at --ramp-rate, each
#      from its own /16 of 127/8 source addresses, against several
#      `upstream -m echo` processes sharing one SO_REUSEPORT port;
#   3. once all are open and the proxy is done with them (tc: every flow in
#      mmp_tc_flows and the proxy's fds back to their count before), a
#      sample: the proxy's RSS and peak RSS, its fds, Slab and SUnreclaim
#      (/proc/meminfo), the TCP slab (/proc/slabinfo), the memlock of the
#      instance's pinned maps (bpftool map show);
#   4. connrate again while they are held, then the holders stop: their pp
#      rate, and how many of the held connections echoed a message (byte-
#      exact) while measured;
#   5. connrate once more with none held: the ratio is held / mean(before, after).
# Deltas against the sample before the holders are divided by N.
# Slab is the whole host's: other load on the machine moves it.
#
# A proxy that keeps two sockets per flow (go-mmproxy, mmproxy-rs, and
# mmproxy-bpf's splice and sockmap engines) needs 2 N fds: past the
# open-files hard limit it is skipped with that reason, not run to failure.
#
# Results: one line per configuration in bench/results/<date>-<host>-scale.jsonl,
# and a table on stdout. Needs root; make bench-tools first.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TOOLS=$BUILD/bench
BIN=${MMPROXY_BPF:-$BUILD/mmproxy-bpf}
GO_MMPROXY=${GO_MMPROXY:-$(command -v go-mmproxy || true)}
MMPROXY_RS=${MMPROXY_RS:-/usr/local/bin/mmproxy-rs}

ORIG_ARGS="$*"
CONNS=100000
PER_PROC=15000 # held connections per loadgen process (fd limit 20,000)
PER_UPSTREAM=12000 # upstream connections per echo process
RAMP_RATE=2000 # new held connections per second, all holders together
INTERVAL=10 # seconds between one held connection's messages
CONNRATE_S=3
CONNRATE_ROUNDS=5 # per phase; medians, the host is shared and noisy
CONFIGS=mmproxy-bpf/tc
OUT_DIR=$BENCH_DIR/results
ONE_NS=0

usage() {
	cat <<EOF
usage: bench/scale.sh [options]
  -c, --conns N        connections held [$CONNS]
  --per-proc N         held connections per loadgen process [$PER_PROC]
  --ramp-rate R        new held connections per second [$RAMP_RATE]
  --interval S         seconds between one held connection's messages [$INTERVAL]
  --connrate-s S       seconds of each connection-rate run [$CONNRATE_S]
  --connrate-rounds N  connection-rate runs per phase, median kept [$CONNRATE_ROUNDS]
  --configs LIST       none, mmproxy-bpf/ENGINE, go-mmproxy, mmproxy-rs [$CONFIGS]
                       (none: the generators connect straight to echo servers on the
                       proxy's address, no header: what holding costs the kernel alone)
  --out DIR            where the results go [bench/results]
  --one-ns             generators on the proxy's lo too (the first runs; see above)
Environment: MMPROXY_BPF, GO_MMPROXY, MMPROXY_RS override the binaries.
EOF
}

while (($#)); do
	case $1 in
	-c | --conns) CONNS=$2; shift ;;
	--per-proc) PER_PROC=$2; shift ;;
	--ramp-rate) RAMP_RATE=$2; shift ;;
	--interval) INTERVAL=$2; shift ;;
	--connrate-s) CONNRATE_S=$2; shift ;;
	--connrate-rounds) CONNRATE_ROUNDS=$2; shift ;;
	--configs) CONFIGS=$2; shift ;;
	--out) OUT_DIR=$2; shift ;;
	--one-ns) ONE_NS=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "scale.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

log() { printf '%s\n' "$*" >&2; }
die() { log "scale.sh: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, IP_TRANSPARENT, BPF): sudo bench/scale.sh"
for t in loadgen upstream; do
	[[ -x $TOOLS/$t ]] || die "$TOOLS/$t missing: run 'make bench-tools' first"
done
for t in bpftool jq python3; do
	command -v $t >/dev/null || die "$t missing (scripts/deps.sh installs it)"
done
NOFILE=$(ulimit -Hn)
((PER_PROC + 100 <= NOFILE)) || die "--per-proc $PER_PROC does not fit the open-files hard limit $NOFILE: lower it"
((PER_UPSTREAM + 100 <= NOFILE)) || die "PER_UPSTREAM $PER_UPSTREAM does not fit the open-files hard limit $NOFILE"
# 62 source /16s of 127/8 (127.2 to 127.63) at most, one per holder, and
# distinct client ip:port pairs in the headers (10.128.0.0/9 holds 2^23 hosts).
HOLDERS=$(((CONNS + PER_PROC - 1) / PER_PROC))
((HOLDERS <= 60)) || die "-c $CONNS needs $HOLDERS holders, more than 60: raise --per-proc"
UPSTREAMS=$(((CONNS + PER_UPSTREAM - 1) / PER_UPSTREAM + 1)) # +1: SO_REUSEPORT spreads unevenly

# ---- state and cleanup --------------------------------------------------

NS=mmps-$$
NSC=mmps-$$-lb # the generators' (only without --one-ns)
PIN_DIR=/sys/fs/bpf/mmproxy-bpf-scale-$$
TMP=$(mktemp -d /tmp/mmps-scale.XXXXXX)
PIDS=()
NS_MADE=0

# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"

cleanup() {
	local pid
	# 10 s each: a proxy holding 100k flows takes longer to close them than run.sh's.
	for pid in "${PIDS[@]}"; do stop_pid "$pid" 100; done
	((NS_MADE)) && ns_del "$NS" "$NSC"
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_lb() { nsenter --net="/run/netns/$LB_NS" "$@"; }

# bg_ns LOG CMD...: CMD in the proxy's namespace (bg_lb: the generators')
# at the hard fd limit, in the background; its PID (nsenter execs it) in BG_PID.
bg_lb() { BG_NS=$LB_NS bg_ns "$@"; }
bg_ns() {
	local out=$1 ns=${BG_NS:-$NS}
	shift
	(ulimit -n "$NOFILE"; exec nsenter --net="/run/netns/$ns" "$@") >"$out" 2>&1 &
	BG_PID=$!
	PIDS+=("$BG_PID")
}

forget_pid() {
	local p keep=()
	for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

# ---- topology and upstreams ---------------------------------------------

PORT_PROXY=8443
PORT_UP=9000

ip netns add "$NS"
NS_MADE=1
in_ns "$NS" ip link set lo up
# Transparent proxying (docs/DESIGN.md §3a item 8), as bench/run.sh.
in_ns "$NS" ip rule add from 127.0.0.1/8 iif lo table 123
in_ns "$NS" ip route add local 0.0.0.0/0 dev lo table 123
in_ns "$NS" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1
in_ns "$NS" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
in_ns "$NS" sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

if ((ONE_NS)); then
	LB_NS=$NS
	PROXY_ADDR=127.0.0.1
	IFACE_ARGS=()
	# holder_src I / connrate: a /16 of 127/8 each.
	holder_src() { echo "127.$((2 + $1)).0.0/16"; }
	CONNRATE_SRC=127.1.0.0/16
else
	LB_NS=$NSC
	PROXY_ADDR=198.51.100.1
	ip netns add "$NSC"
	in_lb ip link set lo up
	ip link add "mmps$$c" netns "$NSC" type veth peer name "mmps$$p" netns "$NS"
	in_ns "$NS" ip addr add 198.51.100.1/24 dev "mmps$$p"
	in_lb ip addr add 198.51.100.2/24 dev "mmps$$c"
	in_ns "$NS" ip link set "mmps$$p" up
	in_lb ip link set "mmps$$c" up
	# 126 client addresses (.129-.254), shared by every generator: 8 million
	# tuples toward the proxy's ip:port.
	for ((i = 129; i < 255; i++)); do echo "addr add 198.51.100.$i/24 dev mmps$$c"; done | in_lb ip -batch -
	in_lb sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
	IFACE_ARGS=(--iface "mmps$$p")
	holder_src() { echo 198.51.100.128/25; }
	CONNRATE_SRC=198.51.100.128/25
fi

for ((i = 0; i < UPSTREAMS; i++)); do
	bg_ns "$TMP/upstream-$i.log" "$TOOLS/upstream" -m echo --threads 1 -l "127.0.0.1:$PORT_UP"
	wait_listen "$NS" tcp "$PORT_UP" "$BG_PID" 10 || die "upstream $i did not start: $(tail -n 3 "$TMP/upstream-$i.log")"
done

# ---- samples ------------------------------------------------------------

meminfo_kb() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
proxy_fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# The TCP and TCPv6 slabs' bytes in use (sockets of both sides of every flow).
tcp_slab_kb() { awk '$1 == "TCP" || $1 == "TCPv6" { s += $2 * $4 } END { print int(s / 1024) }' /proc/slabinfo; }
# memlock of the instance's pinned maps (hash maps are preallocated: fixed by --tc-max-flows).
maps_kb() {
	local f sum=0 b
	for f in "$PIN_DIR"/*; do
		[[ -e $f ]] || continue
		b=$(bpftool -j map show pinned "$f" 2>/dev/null | jq -r '.bytes_memlock // 0' 2>/dev/null) || b=0
		sum=$((sum + ${b:-0}))
	done
	echo $((sum / 1024))
}
tc_flows() { "$BIN" stats --pin-dir "$PIN_DIR" --json 2>/dev/null | jq -r '.tc.flows // 0' 2>/dev/null || echo 0; }

# cpu_ticks PID: the proxy's user + system clock ticks so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# idle_cpu PID: the proxy's CPU share over CPU_WINDOW_S with nothing new
# coming in: what the flows it holds cost it by themselves.
CPU_WINDOW_S=5
idle_cpu() {
	local t0 t1
	t0=$(cpu_ticks "$1")
	sleep "$CPU_WINDOW_S"
	t1=$(cpu_ticks "$1")
	awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v w="$CPU_WINDOW_S" 'BEGIN { printf "%.3f", d / hz / w }'
}

# sample PID: one JSON object of the numbers above.
sample() {
	printf '{"rss_kb":%s,"hwm_kb":%s,"fds":%s,"slab_kb":%s,"sunreclaim_kb":%s,"tcp_slab_kb":%s,"maps_kb":%s,"tc_flows":%s}' \
		"$(status_kb "$1" VmRSS)" "$(status_kb "$1" VmHWM)" "$(proxy_fds "$1")" "$(meminfo_kb Slab)" \
		"$(meminfo_kb SUnreclaim)" "$(tcp_slab_kb)" "$(maps_kb)" "$(tc_flows)"
}

# ---- one configuration --------------------------------------------------

CLIENT_OFFSET=0 # header clients never repeat over the whole run (TIME_WAIT)

# connrate NAME: CONNRATE_ROUNDS connection-rate runs with fresh header
# clients; prints {"conns_per_s": median, "runs": [...], "us_per_conn":
# median of the proxy's CPU per connection, "errors": sum}, or null. The
# CPU per connection is what the other tenants of a shared host move least.
connrate() {
	local out=$TMP/connrate-$1.out r json all=()
	for ((r = 0; r < CONNRATE_ROUNDS; r++)); do
		in_lb "$TOOLS/loadgen" -m connrate -c 50 -s 64 --threads 1 -T "$CONNRATE_S" --warmup 1 \
			--proxy "$HDR_CONNRATE" --client-range 10.128.0.0/9 --client-offset "$CLIENT_OFFSET" \
			--source-range "$CONNRATE_SRC" --watch-pid "$PROXY_PID" -q "$PROXY_ADDR:$PORT_PROXY" >"$out" 2>&1 || true
		json=$(sed -n 's/^JSON //p' "$out" | tail -n 1)
		if [[ -z $json ]]; then
			log "  connrate $1: no result: $(tail -n 3 "$out" | tr '\n' ' ')"
			continue
		fi
		CLIENT_OFFSET=$(jq -r .client_next <<<"$json")
		all+=("$json")
	done
	((${#all[@]})) || { echo null; return; }
	json=$(printf '%s\n' "${all[@]}" | jq -cs '{conns_per_s: (map(.conns_per_s) | sort | .[length / 2 | floor]),
		runs: map(.conns_per_s), errors: (map(.errors) | add),
		us_per_conn: (map(if .msgs > 0 then .cpu_s.watched / .msgs * 1e6 else null end) | map(select(. != null))
			| sort | if length > 0 then .[length / 2 | floor] * 100 | round / 100 else null end)}')
	log "  connrate $1: $json"
	echo "$json"
}

# The "proxy" of the none configuration: echo servers on the proxy's ip:port
# (one SO_REUSEPORT group, as many as the upstreams), reached without a header.
# PROXY_PID is the first (its CPU and fds are sampled as a proxy's would be).
NONE_PIDS=()
start_none() {
	local i
	HDR_CONNRATE=none HDR_HOLD=none
	for ((i = 0; i < UPSTREAMS; i++)); do
		bg_ns "$TMP/none-$i.log" "$TOOLS/upstream" -m echo --threads 1 -l "$PROXY_ADDR:$PORT_PROXY"
		wait_listen "$NS" tcp "$PORT_PROXY" "$BG_PID" 10 || return 1
		NONE_PIDS+=("$BG_PID")
	done
	PROXY_PID=${NONE_PIDS[0]}
}

stop_proxy() {
	local pid
	if ((${#NONE_PIDS[@]})); then
		for pid in "${NONE_PIDS[@]}"; do stop_pid "$pid" 100; forget_pid "$pid"; done
		NONE_PIDS=()
		return
	fi
	stop_pid "$PROXY_PID" 100
	forget_pid "$PROXY_PID"
}

start_proxy() {
	local cfg=$1 max_flows=$(((CONNS * 5 / 4) > 65536 ? CONNS * 5 / 4 : 65536))
	local -a cmd
	HDR_CONNRATE=v1 HDR_HOLD=v2
	case $cfg in
	none) start_none; return ;;
	mmproxy-bpf/*)
		cmd=("$BIN" run -l "$PROXY_ADDR:$PORT_PROXY" -4 "127.0.0.1:$PORT_UP" --listeners 2 "${IFACE_ARGS[@]}"
			--engine "${cfg#*/}" --pin-dir "$PIN_DIR" --tc-max-flows "$max_flows" -v 0) ;;
	go-mmproxy) cmd=("$GO_MMPROXY" -l "$PROXY_ADDR:$PORT_PROXY" -4 "127.0.0.1:$PORT_UP" -listeners 2 -v 0) ;;
	mmproxy-rs) cmd=("$MMPROXY_RS" -l "$PROXY_ADDR:$PORT_PROXY" -4 "127.0.0.1:$PORT_UP" --listeners 2) ;;
	*) die "unknown configuration $cfg" ;;
	esac
	bg_ns "$TMP/proxy-${cfg//\//-}.log" "${cmd[@]}"
	PROXY_PID=$BG_PID
	wait_listen "$NS" tcp "$PORT_PROXY" "$PROXY_PID" 10
}

# Why CFG cannot hold CONNS here, or nothing.
why_not() {
	case $1 in
	none) ;;
	mmproxy-bpf/tc) [[ -x $BIN ]] || echo "$BIN not built" ;;
	mmproxy-bpf/*) [[ -x $BIN ]] || { echo "$BIN not built"; return; } ;;&
	go-mmproxy) [[ -n $GO_MMPROXY ]] || { echo "go-mmproxy not installed"; return; } ;;&
	mmproxy-rs) [[ -x $MMPROXY_RS ]] || { echo "mmproxy-rs not installed (docs/benchmarks.md: peers)"; return; } ;;&
	*)
		# Its fds per held flow, for as long as it is held: two sockets, and
		# for go-mmproxy and mmproxy-rs two splice pipes (measured: 6.0 and
		# 5.9 a flow at 3,000 and 2,000); mmproxy-bpf's splice engine takes
		# pipes only for a flow whose destination filled up (DESIGN §3d),
		# sockmap never; those are counted at 2 here.
		local fpf=6
		[[ $1 == mmproxy-bpf/* ]] && fpf=2
		((fpf * CONNS + 100 <= NOFILE)) ||
			echo "keeps $fpf fds per held flow: $((fpf * CONNS)) > the open-files hard limit $NOFILE"
		;;
	esac
}

RESULTS=$TMP/results.jsonl
: >"$RESULTS"

run_config() {
	local cfg=$1 reason base0 before held after_hold base1 i per t0 ready last_ready flows fds_before
	local -a holders=()
	reason=$(why_not "$cfg")
	if [[ -n $reason ]]; then
		log "== $cfg: skipped: $reason"
		jq -cn --arg c "$cfg" --arg r "$reason" --argjson n "$CONNS" '{config:$c, conns:$n, skipped:$r}' >>"$RESULTS"
		return 0
	fi
	log "== $cfg: $CONNS connections, $HOLDERS holders, $UPSTREAMS upstreams, ramp $RAMP_RATE/s, one message per ${INTERVAL}s each"
	start_proxy "$cfg" || die "$cfg did not start: $(tail -n 5 "$TMP/proxy-${cfg//\//-}.log")"
	base0=$(connrate base-before)
	sleep 1
	before=$(sample "$PROXY_PID")
	local cpu_before cpu_held
	cpu_before=$(idle_cpu "$PROXY_PID")
	fds_before=$(jq .fds <<<"$before")

	t0=$(date +%s.%N)
	per=$((CONNS / HOLDERS))
	for ((i = 0; i < HOLDERS; i++)); do
		local n=$per
		((i == HOLDERS - 1)) && n=$((CONNS - per * (HOLDERS - 1)))
		# -T is only a bound: SIGTERM ends the measurement (and reports) sooner.
		bg_lb "$TMP/hold-$i.out" "$TOOLS/loadgen" -m hold -c "$n" --interval "$INTERVAL" -s 64 --threads 1 \
			--connect-rate "$(python3 -c "print($RAMP_RATE / $HOLDERS)")" -T 100000 --warmup 0 \
			--proxy "$HDR_HOLD" --client-range 10.128.0.0/9 --client-offset "$((CLIENT_OFFSET + i * per))" \
			--source-range "$(holder_src "$i")" -q "$PROXY_ADDR:$PORT_PROXY"
		holders+=("$BG_PID")
	done
	CLIENT_OFFSET=$((CLIENT_OFFSET + CONNS))
	# Every holder says READY once all its connections are open (or its grace ran out).
	local deadline=$(($(date +%s) + CONNS / RAMP_RATE + 120))
	while :; do
		ready=$(cat "$TMP"/hold-*.out 2>/dev/null | grep -c '^READY' || true)
		((ready == HOLDERS)) && break
		(($(date +%s) < deadline)) || die "$cfg: only $ready of $HOLDERS holders ready after the ramp"
		for i in "${holders[@]}"; do kill -0 "$i" 2>/dev/null || die "$cfg: a holder died: $(tail -n 3 "$TMP"/hold-*.out)"; done
		sleep 0.5
	done
	last_ready=$(date +%s.%N)
	local opened
	opened=$(cat "$TMP"/hold-*.out | awk '/^READY/ { s += $2 } END { print s }')
	log "  ramp: $opened open after $(python3 -c "print(round($last_ready - $t0, 1))") s"
	# The proxy is done with them when its fds are back (tc: every flow handed off).
	deadline=$(($(date +%s) + 60))
	while :; do
		flows=$(tc_flows)
		[[ $cfg == mmproxy-bpf/tc ]] || flows=$opened
		((flows >= opened && $(proxy_fds "$PROXY_PID") <= fds_before + 2)) && break
		[[ $cfg != mmproxy-bpf/tc ]] && break
		(($(date +%s) < deadline)) || { log "  $flows of $opened flows in the kernel after 60 s"; break; }
		sleep 1
	done
	sleep 2
	held=$(sample "$PROXY_PID")
	cpu_held=$(idle_cpu "$PROXY_PID")
	log "  held: $held; proxy CPU $cpu_before -> $cpu_held"
	local base_held
	base_held=$(connrate held)
	# Every held connection had its turn while measured (one interval, and margin).
	while python3 -c "import sys,time; sys.exit(0 if time.time() < $last_ready + $INTERVAL + 3 else 1)"; do sleep 0.5; done
	for i in "${holders[@]}"; do kill -TERM "$i" 2>/dev/null || true; done
	for i in "${holders[@]}"; do wait "$i" 2>/dev/null || true; forget_pid "$i"; done
	after_hold=$(cat "$TMP"/hold-*.out | sed -n 's/^JSON //p' | jq -s '{
		open: (map(.conns_open) | add), alive: (map(.alive) | add),
		pp_per_s: (map(.msgs_per_s) | add), msgs: (map(.msgs) | add),
		errors: (map(.errors) | add), io_errors: (map(.io_errors) | add),
		connect_errors: (map(.connect_errors) | add), verify_errors: (map(.verify_errors) | add),
		verified_bytes: (map(.verified_bytes) | add),
		p50_us: (map(.lat_us.p50) | max), p99_us: (map(.lat_us.p99) | max)}')
	log "  holders: $(jq -c . <<<"$after_hold")"
	rm -f "$TMP"/hold-*.out
	sleep 2 # the held flows' FINs
	base1=$(connrate base-after)
	stop_proxy
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	jq -cn --arg c "$cfg" --argjson n "$CONNS" --argjson before "$before" --argjson held "$held" \
		--argjson hold "$after_hold" --argjson b0 "$base0" --argjson bh "$base_held" --argjson b1 "$base1" \
		--argjson interval "$INTERVAL" --argjson cpu0 "$cpu_before" --argjson cpu1 "$cpu_held" '
		def rate(x): if x == null then null else x.conns_per_s end;
		def cost(x): if x == null then null else x.us_per_conn end;
		{config: $c, conns: $n, interval_s: $interval, before: $before, held: $held, holders: $hold,
		 proxy_cpu_before: $cpu0, proxy_cpu_held: $cpu1,
		 connrate_before: rate($b0), connrate_held: rate($bh), connrate_after: rate($b1),
		 connrate_ratio: (if $b0 == null or $b1 == null or $bh == null then null
			else rate($bh) / ((rate($b0) + rate($b1)) / 2) end),
		 us_per_conn_before: cost($b0), us_per_conn_held: cost($bh), us_per_conn_after: cost($b1),
		 cost_ratio: (if cost($b0) == null or cost($b1) == null or cost($bh) == null then null
			else ((cost($b0) + cost($b1)) / 2) / cost($bh) end),
		 rss_per_flow_b: (($held.rss_kb - $before.rss_kb) * 1024 / $n),
		 slab_per_flow_b: (($held.slab_kb - $before.slab_kb) * 1024 / $n),
		 tcp_slab_per_flow_b: (($held.tcp_slab_kb - $before.tcp_slab_kb) * 1024 / $n)}' >>"$RESULTS"
}

IFS=, read -r -a CFG_LIST <<<"$CONFIGS"
START=$(date +%s)
for cfg in "${CFG_LIST[@]}"; do run_config "$cfg"; done

mkdir -p "$OUT_DIR"
OUT=$OUT_DIR/$(date +%Y-%m-%d-%H%M)-$(hostname -s)-scale.jsonl
jq -c --arg one "$ONE_NS" --arg cmd "bench/scale.sh $ORIG_ARGS" --argjson el "$(($(date +%s) - START))" --arg bin "$BIN" \
	--arg ver "$("$BIN" version 2>/dev/null | head -n 1)" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
	'. + {command: $cmd, elapsed_s: $el, mmproxy_bpf: $bin, mmproxy_bpf_version: $ver, loadavg_at_end: $load,
		generators: (if $one == "1" then "proxy netns lo" else "own netns, veth" end)}' \
	"$RESULTS" >"$OUT"
python3 - "$OUT" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'config':<16} {'held':>7} {'alive':>7} {'RSS/flow':>9} {'slab/flow':>10} {'TCP slab/flow':>14} {'maps':>9} {'pp/s':>8} {'conn/s none':>12} {'conn/s held':>12} {'ratio':>6} {'us/conn none/held':>18} {'CPU idle/held':>14}")
for r in rows:
    if 'skipped' in r:
        print(f"{r['config']:<16} skipped: {r['skipped']}")
        continue
    h = r['holders']
    none = ((r['connrate_before'] or 0) + (r['connrate_after'] or 0)) / 2
    ratio = r['connrate_ratio']
    print(f"{r['config']:<16} {h['open']:>7} {h['alive']:>7} {r['rss_per_flow_b']:>8.0f}B {r['slab_per_flow_b']:>9.0f}B "
          f"{r['tcp_slab_per_flow_b']:>13.0f}B {r['held']['maps_kb']/1024:>7.1f}MB {h['pp_per_s']:>8.0f} "
          f"{none:>12.0f} {r['connrate_held'] or 0:>12.0f} {ratio if ratio is None else round(ratio, 2)!s:>6} {((r['us_per_conn_before'] or 0) + (r['us_per_conn_after'] or 0)) / 2:>9.0f}/{r['us_per_conn_held'] or 0:<8.0f} {r['proxy_cpu_before']:>6}/{r['proxy_cpu_held']:<7}")
EOF
log "scale.sh: results $OUT"
