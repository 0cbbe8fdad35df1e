#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark to an upstream on a Linux bridge (issue 25, docs/DESIGN.md §14):
# the upstream runs in a "container" namespace, as on docker0, and the same
# scenarios as bench/run.sh (bench/scenarios.sh) run through every
# configuration in interleaved rounds (A B C A B C ...).
#
#   bench/bridged.sh                          pp50 and bulk1-down, 3 rounds
#   bench/bridged.sh --scenarios udp-rr,udp-stream --engines tc,splice
#                                             UDP: tc's fast path and the relay
#   bench/bridged.sh --rounds 5 -T 5 --engines splice,sockmap,tc
#   bench/bridged.sh --smoke --scenarios pp50 --engines splice --out DIR
#                                             one short round (bench/tests.sh)
#
#   client ns (the load balancer): 198.51.100.2, clients from .129-.254
#        | veth (the host's uplink)
#   host ns: 198.51.100.1, the proxies listen on 198.51.100.1:8443;
#            ip_forward on; 203.0.113.0/24 (the clients in the PROXY
#            headers) routed back out of the uplink, as a default route would
#        | bridge ${TAG}br 172.17.0.1/16 (docker0's addresses)
#   container ns: 172.17.0.2/16, default route via 172.17.0.1, the upstreams
#
# Configurations:
#   none            the generator connects to 172.17.0.2 from the client ns,
#                   routed by the host over the bridge;
#   mmproxy-bpf/E   after `mmproxy-bpf setup-routing` (its fwmark rule; the
#                   replies are steered per tuple at the bridge's tc ingress);
#                   tc splices TCP flows in the kernel between the uplink and
#                   the bridge (§14; "kernel" in the results counts them);
#                   UDP (-p udp) flows of tc take the
#                   kernel's fast path (§14), of splice the userspace relay;
#                   a tc UDP run whose exit totals show no datagram moved in
#                   the kernel each way is dropped;
#   go-mmproxy      Debian's, with the manual recipe from its issues: ip rule
#                   fwmark 1 lookup 100, ip route local 0.0.0.0/0 dev lo table
#                   100, and an iptables mangle rule marking everything from
#                   the container. That rule also swallows the container's
#                   own outbound traffic, so it exists only while go-mmproxy
#                   runs (it would break "none"). UDP: go-mmproxy -p udp,
#                   the same recipe.
# UDP scenarios turn tx checksum offload off on the client's veth, as a NIC's
# datagrams carry whole checksums: a veth passes partial ones, which the fast
# path leaves to userspace toward an upstream beyond loopback (§14). TCP
# scenarios run with it on, as before.
# Every rule lives in the bench's namespaces and is removed after its run
# (go-mmproxy) or at the end (setup-routing's, by cleanup-routing); after
# each run the script checks that no filter or rule was left behind.
# Results: bench/results/<date>-<host>-bridged.json and a table of medians
# with ratios against none and go-mmproxy (bench/report.py).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"
# shellcheck source=scenarios.sh
source "$BENCH_DIR/scenarios.sh"
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TOOLS=$BUILD/bench
BIN=${MMPROXY_BPF:-$BUILD/mmproxy-bpf}
GO_MMPROXY=${GO_MMPROXY:-$(command -v go-mmproxy || true)}

ORIG_ARGS="$*"
ROUNDS=3
DURATION=2
WARMUP=1
ENGINES=splice,sockmap,tc
SCENARIOS=pp50,bulk1-down
ONLY_CONFIGS=
LG_THREADS=1
UP_THREADS=2
OUT_DIR=$BENCH_DIR/results
SMOKE=0

usage() {
	cat <<EOF
usage: bench/bridged.sh [options]
  --rounds N            rounds of every configuration (at least 3) [3]
  -T, --duration S      measured seconds per run [2]
  --warmup S            warm-up seconds per run [1]
  --engines LIST        mmproxy-bpf engines, comma-separated [splice,sockmap,tc]
  --scenarios LIST      scenarios of bench/run.sh, TCP and UDP (udp-rr,
                        udp-stream) [pp50,bulk1-down]
  --configs LIST        subset of the configurations, e.g. none,go-mmproxy
  --loadgen-threads N   generator threads [1]
  --upstream-threads N  upstream server threads [2]
  --out DIR             where results go [bench/results]
  --smoke               one round of 1 s each (a check that the script works,
                        not a measurement; bench/tests.sh runs it)
Environment: MMPROXY_BPF, GO_MMPROXY override the binaries.
EOF
}

while (($#)); do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	-T | --duration) DURATION=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--engines) ENGINES=$2; shift ;;
	--scenarios) SCENARIOS=$2; shift ;;
	--configs) ONLY_CONFIGS=$2; shift ;;
	--loadgen-threads) LG_THREADS=$2; shift ;;
	--upstream-threads) UP_THREADS=$2; shift ;;
	--out) OUT_DIR=$2; shift ;;
	--smoke) SMOKE=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bridged.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

log() { printf '%s\n' "$*" >&2; }
die() { log "bridged.sh: $*"; exit 1; }

if ((SMOKE)); then
	ROUNDS=1 DURATION=1 WARMUP=0.3
elif ((ROUNDS < 3)); then
	die "--rounds must be at least 3 (medians of fewer mean little; --smoke for a quick check)"
fi
[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, IP_TRANSPARENT, BPF): sudo bench/bridged.sh"
for t in loadgen upstream udpgen; do
	[[ -x $TOOLS/$t ]] || die "$TOOLS/$t missing: run 'make bench-tools' first"
done
command -v python3 >/dev/null || die "python3 missing (scripts/deps.sh installs it)"
IFS=, read -r -a WANT <<<"$SCENARIOS"
WANT_UDP=0
for s in "${WANT[@]}"; do
	line=$(scenario_line "$s") || die "unknown scenario '$s' (have: $ALL_SCENARIOS)"
	[[ $line == *"|loadgen|"* || $line == *"|udpgen|"* ]] ||
		die "scenario '$s' needs HAProxy and nginx (bench/run.sh); use one of: $(printf '%s\n' "${SCENARIO_TABLE[@]}" | grep -E '\|(loadgen|udpgen)\|' | cut -d'|' -f1 | paste -sd, -)"
	[[ $line == *"|udpgen|"* ]] && WANT_UDP=1
done
((WANT_UDP)) && ! command -v ethtool >/dev/null &&
	die "UDP scenarios need ethtool (the client's tx offload off; scripts/deps.sh installs it)"

# ---- state and cleanup --------------------------------------------------

TAG=mmpb-$$
NS=$TAG-host
NSC=$TAG-client
NSB=$TAG-ctr
BR=${TAG}br
PIN_DIR=/sys/fs/bpf/mmproxy-bpf-bridged-$$
TMP=$(mktemp -d /tmp/mmpb-bridged.XXXXXX)
RAW=$TMP/runs.jsonl
: >"$RAW"
PIDS=()
NS_MADE=()
ROUTING_SET=0
GO_RULES=0
LEFTOVERS=0


cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
	((GO_RULES)) && go_rules del
	((ROUTING_SET)) && in_ns "$NS" "$BIN" cleanup-routing >/dev/null 2>&1
	ns_del "${NS_MADE[@]}"
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- topology -----------------------------------------------------------

CTR_IP=172.17.0.2
HOST_IP=198.51.100.1
PORT_PROXY=8443
declare -A UP_PORT=([echo]=9000 [sink]=9001 [source]=9002 [udpecho]=9100 [udpsink]=9101)

setup_topology() {
	local ns
	for ns in "$NS" "$NSC" "$NSB"; do
		ip netns add "$ns"
		NS_MADE+=("$ns")
		in_ns "$ns" ip link set lo up
	done
	# The uplink: clients and the load balancer behind it.
	ip link add "${TAG}c" netns "$NSC" type veth peer name "${TAG}p" netns "$NS"
	in_ns "$NSC" ip addr add 198.51.100.2/24 dev "${TAG}c"
	in_ns "$NS" ip addr add "$HOST_IP/24" dev "${TAG}p"
	in_ns "$NSC" ip link set "${TAG}c" up
	in_ns "$NS" ip link set "${TAG}p" up
	# Clients connect from 126 addresses in turn, as in run.sh: a client
	# ip:port comes back only after its TIME_WAIT.
	for ((i = 129; i < 255; i++)); do
		echo "addr add 198.51.100.$i/24 dev ${TAG}c"
	done | in_ns "$NSC" ip -batch -
	in_ns "$NSC" ip route add 172.17.0.0/16 via "$HOST_IP"
	in_ns "$NSC" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1
	# The bridge and the container on it, as docker0 has them.
	in_ns "$NS" ip link add "$BR" type bridge
	in_ns "$NS" ip addr add 172.17.0.1/16 dev "$BR"
	ip link add "${TAG}v" netns "$NS" type veth peer name eth0 netns "$NSB"
	in_ns "$NS" ip link set "${TAG}v" master "$BR" up
	in_ns "$NS" ip link set "$BR" up
	in_ns "$NSB" ip addr add "$CTR_IP/16" dev eth0
	in_ns "$NSB" ip link set eth0 up
	in_ns "$NSB" ip route add default via 172.17.0.1
	in_ns "$NSB" sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535
	# The host routes the container's own traffic ("none"), and the client
	# addresses of the PROXY headers are behind its uplink: a reply that is
	# not delivered locally leaves there, as it would on a real host.
	in_ns "$NS" sysctl -qw net.ipv4.ip_forward=1 net.core.somaxconn=65535 \
		net.ipv4.tcp_max_syn_backlog=65535 net.ipv4.ip_local_port_range="1024 65535"
	in_ns "$NS" ip route add 203.0.113.0/24 via 198.51.100.2
}

start_upstreams() {
	local kind
	# nsenter execs the server, so $! is its own PID.
	for kind in echo sink source; do
		nsenter --net="/run/netns/$NSB" "$TOOLS/upstream" -m "$kind" --threads "$UP_THREADS" \
			-l "$CTR_IP:${UP_PORT[$kind]}" >"$TMP/upstream-$kind.log" 2>&1 &
		PIDS+=($!)
		wait_listen "$NSB" tcp "${UP_PORT[$kind]}" $! || die "upstream $kind did not start: $(tail -n 2 "$TMP/upstream-$kind.log")"
	done
	((WANT_UDP)) || return 0
	# udp-rr's echo; udp-stream's sink is udpgen's own, bound in the
	# container with --sink-netns.
	nsenter --net="/run/netns/$NSB" "$TOOLS/udpgen" echo --threads "$UP_THREADS" \
		-l "$CTR_IP:${UP_PORT[udpecho]}" >"$TMP/udpecho.log" 2>&1 &
	PIDS+=($!)
	wait_listen "$NSB" udp "${UP_PORT[udpecho]}" $! || die "udp echo did not start: $(tail -n 2 "$TMP/udpecho.log")"
}

# client_tx_csum on|off: the client veth's tx checksum offload. Off for UDP:
# a veth hands on partial checksums, which the fast path leaves to userspace
# toward an upstream beyond loopback (docs/DESIGN.md §14); a NIC's datagrams
# carry whole ones (as in tests/integration/upstream-lib.sh).
client_tx_csum() {
	in_ns "$NSC" ethtool -K "${TAG}c" tx "$1" >/dev/null 2>&1 ||
		die "ethtool -K ${TAG}c tx $1 failed"
}

# go_rules add|del: go-mmproxy's manual recipe for a container upstream.
go_rules() {
	local op=$1 a=-A
	[[ $op == del ]] && a=-D
	in_ns "$NS" ip rule "$op" fwmark 1 lookup 100
	in_ns "$NS" ip route "$op" local 0.0.0.0/0 dev lo table 100
	in_ns "$NS" iptables -w -t mangle "$a" PREROUTING -i "$BR" -s "$CTR_IP" -j MARK --set-mark 1
	if [[ $op == add ]]; then GO_RULES=1; else GO_RULES=0; fi
}

# leftovers: what a stopped configuration left in the host ns, one per line.
leftovers() {
	in_ns "$NS" tc filter show dev "$BR" ingress 2>/dev/null | grep -m1 . | sed 's/^/tc filter on the bridge: /'
	in_ns "$NS" ip rule list fwmark 1 2>/dev/null | sed 's/^/ip rule: /'
	in_ns "$NS" iptables -w -t mangle -S PREROUTING 2>/dev/null | grep -- '-j MARK' | sed 's/^/iptables: /'
	[[ -n $(find "$PIN_DIR" -mindepth 1 2>/dev/null) ]] && echo "pins in $PIN_DIR"
	return 0
}

# ---- configurations -----------------------------------------------------

CONFIGS=(none)
IFS=, read -r -a ENGINE_LIST <<<"$ENGINES"
if [[ -x $BIN ]]; then
	for e in "${ENGINE_LIST[@]}"; do CONFIGS+=("mmproxy-bpf/$e"); done
else
	log "bridged.sh: $BIN not built: mmproxy-bpf configurations skipped ('make' builds it)"
fi
if [[ -n $GO_MMPROXY ]]; then
	if command -v iptables >/dev/null; then
		CONFIGS+=(go-mmproxy)
	else
		log "bridged.sh: iptables not installed: go-mmproxy skipped (its recipe needs it; scripts/deps.sh installs it)"
	fi
else
	log "bridged.sh: go-mmproxy not installed: skipped (scripts/deps.sh installs it)"
fi
if [[ -n $ONLY_CONFIGS ]]; then
	kept=()
	for c in "${CONFIGS[@]}"; do
		[[ ",$ONLY_CONFIGS," == *",$c,"* ]] && kept+=("$c")
	done
	CONFIGS=("${kept[@]}")
	((${#CONFIGS[@]})) || die "--configs $ONLY_CONFIGS: none of them is available"
fi

# start_proxy CFG UPPORT PROTO: sets PROXY_PID (empty for none).
PROXY_PID=
start_proxy() {
	local cfg=$1 up=$2 proto=$3
	local -a cmd
	PROXY_PID=
	: >"$TMP/proxy.log"
	case $cfg in
	none) return 0 ;;
	mmproxy-bpf/*)
		# --detach: as in run.sh, a tc instance never leaves its filters for a successor.
		# -v 1 (run.sh: -v 0) for the "totals:" line at exit, which proves the
		# connections were steered; nothing else is logged unless a connection fails.
		cmd=("$BIN" run -l "$HOST_IP:$PORT_PROXY" -4 "$CTR_IP:$up" -6 "[::1]:$up"
			--listeners 2 --engine "${cfg#*/}" --pin-dir "$PIN_DIR" --detach -v 1)
		# The generator's PROXY headers come from any source here, as in run.sh.
		[[ $proto == udp ]] && cmd+=(-p udp --udp-any-source) ;;
	go-mmproxy)
		go_rules add
		cmd=("$GO_MMPROXY" -l "$HOST_IP:$PORT_PROXY" -4 "$CTR_IP:$up" -6 "[::1]:$up" -listeners 2 -v 0)
		[[ $proto == udp ]] && cmd+=(-p udp) ;;
	esac
	(ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec nsenter --net="/run/netns/$NS" "${cmd[@]}") \
		>>"$TMP/proxy.log" 2>&1 &
	PROXY_PID=$!
	PIDS+=("$PROXY_PID")
	wait_listen "$NS" "$proto" "$PORT_PROXY" "$PROXY_PID"
}

stop_proxy() {
	local keep=() p left
	if [[ -n $PROXY_PID ]]; then
		stop_pid "$PROXY_PID"
		for p in "${PIDS[@]}"; do [[ $p == "$PROXY_PID" ]] || keep+=("$p"); done
		PIDS=("${keep[@]}")
	fi
	PROXY_PID=
	((GO_RULES)) && go_rules del
	left=$(leftovers)
	if [[ -n $left ]]; then
		LEFTOVERS=$((LEFTOVERS + 1))
		log "  left behind after $1: $(tr '\n' ';' <<<"$left")"
	fi
	[[ -d $PIN_DIR ]] && rm -rf "$PIN_DIR"
	return 0
}

# steered_check WHAT: the stopped mmproxy-bpf's totals show its connections
# steered (docs/DESIGN.md §14), not delivered some other way; in --smoke the
# line is shown.
steered_check() {
	local totals n
	totals=$(grep -m1 -o 'totals: .*' "$TMP/proxy.log" || true)
	((SMOKE)) && log "  $1: $totals"
	n=$(grep -o ', steered [0-9]*' <<<"$totals" | grep -o '[0-9]*$' || true)
	if [[ -z $n || $n == 0 ]]; then
		log "  $1: no connection was steered (${totals:-no totals line}): the result is dropped"
		return 1
	fi
}

# in_kernel_check WHAT UPKIND: the stopped tc instance's "udp totals:" line
# shows datagrams moved by the fast path (docs/DESIGN.md §14): forwards, and
# replies where the upstream answers (udp-rr's echo; the sink never does).
# Prints the two counters and the relay's for the results.
in_kernel_check() {
	local totals fwd rep relay_fwd relay_sent
	totals=$(grep -m1 -o 'udp totals: .*' "$TMP/proxy.log" || true)
	fwd=$(grep -o ' fast_fwd_dgrams=[0-9]*' <<<"$totals" | cut -d= -f2 || true)
	rep=$(grep -o ' fast_reply_dgrams=[0-9]*' <<<"$totals" | cut -d= -f2 || true)
	relay_fwd=$(grep -o ' fwd_dgrams=[0-9]*' <<<"$totals" | cut -d= -f2 || true)
	relay_sent=$(grep -o ' sent_dgrams=[0-9]*' <<<"$totals" | cut -d= -f2 || true)
	((SMOKE)) && log "  $1: fast_fwd_dgrams ${fwd:-?} fast_reply_dgrams ${rep:-?} (relay: fwd ${relay_fwd:-?} sent ${relay_sent:-?})"
	printf '{"fast_fwd_dgrams":%s,"fast_reply_dgrams":%s,"fwd_dgrams":%s,"sent_dgrams":%s}\n' \
		"${fwd:-null}" "${rep:-null}" "${relay_fwd:-null}" "${relay_sent:-null}"
	if [[ -z $fwd || $fwd == 0 ]] || [[ $2 == udpecho && (-z $rep || $rep == 0) ]]; then
		log "  $1: the fast path moved no datagram (${totals:-no udp totals line}): the result is dropped"
		return 1
	fi
}

# tcp_kernel_counts WHAT: the stopped tc instance's flows spliced in the kernel
# between the uplink and the bridge (docs/DESIGN.md §14), as JSON for the
# results: "tc" (hand-offs done) and "tc beyond loopback" from its totals.
tcp_kernel_counts() {
	local totals tc beyond
	totals=$(grep -m1 -o 'totals: .*' "$TMP/proxy.log" || true)
	tc=$(grep -o ', tc [0-9]*' <<<"$totals" | grep -o '[0-9]*$' || true)
	beyond=$(grep -o 'tc beyond loopback [0-9]*' <<<"$totals" | grep -o '[0-9]*$' || true)
	((SMOKE)) && log "  $1: tc ${tc:-?}, tc beyond loopback ${beyond:-?}"
	printf '{"tc_flows":%s,"tc_beyond_loopback":%s}\n' "${tc:-null}" "${beyond:-null}"
}

# ---- one run ------------------------------------------------------------

CLIENT_OFFSET=0
json_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# run_one SCENARIO-LINE CFG ROUND
run_one() {
	local name tool args upkind hdr cfg=$2 round=$3 up target out=$TMP/out.txt json proto=tcp kernel=
	IFS='|' read -r name tool args upkind hdr <<<"$1"
	[[ $tool == udpgen ]] && proto=udp
	up=${UP_PORT[$upkind]}
	local -a cmd
	read -r -a cmd <<<"$args"
	if ! start_proxy "$cfg" "$up" "$proto"; then
		log "  $name / $cfg round $round: proxy did not start; log:"
		tail -n 5 "$TMP/proxy.log" >&2 || true
		printf '{"scenario":"%s","config":"%s","round":%d,"ok":false,"error":"proxy did not start"}\n' \
			"$name" "$cfg" "$round" >>"$RAW"
		stop_proxy "$cfg"
		return 0
	fi
	target=$HOST_IP:$PORT_PROXY
	[[ $cfg == none ]] && target=$CTR_IP:$up hdr=none
	if [[ $tool == udpgen ]]; then
		cmd=("$TOOLS/udpgen" "${cmd[@]}" --threads "$LG_THREADS" -T "$DURATION" --warmup "$WARMUP"
			--proxy "$hdr" --client-range 203.0.113.0/24 --client-offset "$CLIENT_OFFSET" -q)
		[[ $upkind == udpsink ]] && cmd+=(--sink "$CTR_IP:$up" --sink-netns "/run/netns/$NSB")
	else
		cmd=("$TOOLS/loadgen" "${cmd[@]}" --threads "$LG_THREADS" -T "$DURATION" --warmup "$WARMUP"
			--proxy "$hdr" --client-range 203.0.113.0/24 --client-offset "$CLIENT_OFFSET" -q
			--source-range 198.51.100.128/25)
	fi
	[[ -n $PROXY_PID ]] && cmd+=(--watch-pid "$PROXY_PID")
	cmd+=("$target")
	if ! in_ns "$NSC" "${cmd[@]}" >"$out" 2>&1; then
		log "  $name / $cfg round $round: generator failed:"
		tail -n 5 "$out" >&2
	fi
	stop_proxy "$cfg"
	json=$(sed -n 's/^JSON //p' "$out" | tail -n 1)
	if [[ -z $json ]]; then
		printf '{"scenario":"%s","config":"%s","round":%d,"ok":false,"error":"no result"}\n' \
			"$name" "$cfg" "$round" >>"$RAW"
		return 0
	fi
	if [[ $proto == tcp && $cfg == mmproxy-bpf/* ]] && ! steered_check "$name / $cfg round $round"; then
		printf '{"scenario":"%s","config":"%s","round":%d,"ok":false,"error":"not steered"}\n' \
			"$name" "$cfg" "$round" >>"$RAW"
		return 0
	fi
	[[ $proto == tcp && $cfg == mmproxy-bpf/tc ]] && kernel=$(tcp_kernel_counts "$name / $cfg round $round")
	if [[ $proto == udp && $cfg == mmproxy-bpf/tc ]]; then
		if ! kernel=$(in_kernel_check "$name / $cfg round $round" "$upkind"); then
			printf '{"scenario":"%s","config":"%s","round":%d,"ok":false,"error":"not in the kernel","kernel":%s}\n' \
				"$name" "$cfg" "$round" "$kernel" >>"$RAW"
			return 0
		fi
	fi
	printf '{"scenario":"%s","config":"%s","round":%d,"ok":true,"result":%s%s}\n' \
		"$name" "$cfg" "$round" "$json" "${kernel:+,\"kernel\":$kernel}" >>"$RAW"
	# Fresh client addresses per run: the last run's tuples may sit in
	# TIME_WAIT (TCP) or in a proxy's flow table (UDP).
	if [[ $tool == udpgen ]]; then
		CLIENT_OFFSET=$((CLIENT_OFFSET + $(json_field "$json" flows)))
	else
		CLIENT_OFFSET=$(json_field "$json" client_next)
	fi
	python3 "$BENCH_DIR/report.py" --line "$RAW"
}

# ---- main ---------------------------------------------------------------

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
setup_topology
if [[ -x $BIN ]] && [[ " ${CONFIGS[*]} " == *" mmproxy-bpf/"* ]]; then
	in_ns "$NS" "$BIN" setup-routing >"$TMP/setup-routing.log" 2>&1 ||
		die "mmproxy-bpf setup-routing failed: $(tail -n 3 "$TMP/setup-routing.log")"
	ROUTING_SET=1
fi
start_upstreams
BACKGROUND=$(background_busy_cpus)
if awk -v b="$BACKGROUND" 'BEGIN { exit !(b > 0.2) }'; then
	log "bridged.sh: warning: $BACKGROUND CPUs were busy before the run started (other load): expect noise"
fi

HOST=$(hostname -s)
DATE=$(date +%Y-%m-%d-%H%M)
START=$(date +%s)
log "bridged.sh: $ROUNDS rounds, ${DURATION}s + ${WARMUP}s warm-up per run, $(nproc) CPUs, upstream $CTR_IP on bridge $BR"
log "bridged.sh: configurations: ${CONFIGS[*]}"
for want in "${WANT[@]}"; do
	line=$(scenario_line "$want")
	log "== $want"
	if ((WANT_UDP)); then
		if [[ $line == *"|udpgen|"* ]]; then client_tx_csum off; else client_tx_csum on; fi
	fi
	for ((round = 1; round <= ROUNDS; round++)); do
		for cfg in "${CONFIGS[@]}"; do
			run_one "$line" "$cfg" "$round"
		done
	done
done

mkdir -p "$OUT_DIR"
BASE=$OUT_DIR/$DATE-$HOST-bridged
python3 "$BENCH_DIR/report.py" --raw "$RAW" --out "$BASE.json" \
	--meta "upstream=bridge" --meta "rounds=$ROUNDS" --meta "duration_s=$DURATION" \
	--meta "warmup_s=$WARMUP" --meta "loadgen_threads=$LG_THREADS" \
	--meta "upstream_threads=$UP_THREADS" --meta "engines=$ENGINES" \
	--meta "command=bench/bridged.sh $ORIG_ARGS" --meta "elapsed_s=$(($(date +%s) - START))" \
	--meta "go_mmproxy=$GO_MMPROXY" --meta "mmproxy_bpf=$BIN" \
	--meta "background_busy_cpus=$BACKGROUND" --meta "leftovers=$LEFTOVERS"
log "bridged.sh: results $BASE.json"
((LEFTOVERS == 0)) || die "$LEFTOVERS configurations left filters, rules or pins behind (see above)"
