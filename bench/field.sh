#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Field loads, with unmodified third-party tools, every configuration
# interleaved per round, in network namespaces of its own:
#   streams      tcpkali, 50 connections, a PROXY v1 first message, then
#                'PING\r\n' streamed both ways through an echo upstream
#                (go-mmproxy's published method), flat out
#   streams-r    the same with -r 200000 (messages/s per connection)
#   streams1000  streams with 1,000 connections (--connect-rate 1000: the last at 1 s)
#   http-ka      wrk -c 64 keep-alive -> HAProxy send-proxy-v2 -> proxy -> nginx
#   http-close   the same with 'Connection: close' (a new connection per request)
#   latency      sockperf ping-pong, one TCP connection of 64-byte messages ->
#                HAProxy send-proxy-v2 -> proxy -> sockperf server: microseconds
#                (half the round trip), lower is better; skipped without sockperf
# No proxy is tcpkali -> echo, or wrk/sockperf -> HAProxy -> server (no send-proxy).
#
#   bench/field.sh [--rounds 3] [-T 10] [--loads LIST] [--configs LIST]
#                  [--lock FILE] [--round-major] [--out DIR] [--attach 'CMD']
#
# One JSON line per run in DIR/field-<date>.jsonl, medians and ratios on
# stdout (bench/field_report.py). For mmproxy-bpf on the stream loads the
# line also has tc_flows_1s (flows spliced in the kernel 1.5 s after the
# start, 2 s for streams1000, from `mmproxy-bpf stats --json`: each flow is
# then at least 1 s old, as tcpkali opens 100 connections/s, 1000 for
# streams1000), with tc_within_1s (flows the proxy counted in the kernel within
# 1 s of their accept, retries included), tc_carried and tc_aborted read at
# the same time, and handed/aborted (-v 2 log lines).
# With --lock FILE each round holds flock FILE (shared namespace tests):
# one load's configurations, or with --round-major all loads' (runs still
# interleave configurations).
# --attach 'strace -c -f -p' (or 'perf stat -p', ...) runs CMD PID against
# each proxy during the load, stopped with SIGINT; output DIR/attach-*.txt.
# MMPROXY_BPF_BASE=BIN adds configurations mmproxy-bpf-base/ENGINE (before/after).
# FIELD_VERBOSE=1 runs mmproxy-bpf at -v 2 on every load (the hand-off lines; KEEP_TMP=1 keeps the logs).
# Needs root, tcpkali, wrk, haproxy, nginx; peers that are not installed are
# skipped. Everything started is stopped by PID; the namespaces are deleted
# (KEEP_TMP=1 keeps the work directory: configs, logs, last outputs).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=nginx_conf.sh
source "$BENCH_DIR/nginx_conf.sh"
# shellcheck source=lib.sh
source "$BENCH_DIR/lib.sh"
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
BIN=${MMPROXY_BPF:-$BUILD/mmproxy-bpf}
BASE_BIN=${MMPROXY_BPF_BASE:-} # before/after runs: configurations mmproxy-bpf-base/ENGINE run this binary
UPSTREAM=$BUILD/bench/upstream
ROUNDS=3 DURATION=10 LOCK= OUT_DIR=$BENCH_DIR/results ATTACH= ROUND_MAJOR=0
LOADS=streams,streams-r,http-ka,http-close,latency
CONFIGS=none,mmproxy-bpf/auto,mmproxy-bpf/splice,go-mmproxy-2.1,go-mmproxy-head,mmproxy-rs
declare -A PEER=([go-mmproxy-2.1]=${GO_MMPROXY:-/usr/bin/go-mmproxy}
	[go-mmproxy-head]=${GO_MMPROXY_HEAD:-/usr/local/bin/go-mmproxy-head}
	[mmproxy-rs]=${MMPROXY_RS:-/usr/local/bin/mmproxy-rs})

while (($#)); do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	-T) DURATION=$2; shift ;;
	--loads) LOADS=$2; shift ;;
	--configs) CONFIGS=$2; shift ;;
	--lock) LOCK=$2; shift ;;
	--out) OUT_DIR=$2; shift ;;
	--attach) ATTACH=$2; shift ;;
	--round-major) ROUND_MAJOR=1 ;;
	-h | --help) sed -n '3,/^set -e/{/^set -e/!p}' "$0"; exit 0 ;;
	*) echo "field.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
log() { printf '%s\n' "$*" >&2; }
die() { log "field.sh: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || die "needs root"
for t in tcpkali wrk haproxy nginx; do command -v $t >/dev/null || die "$t missing"; done
if [[ ,$LOADS, == *,latency,* ]] && ! command -v sockperf >/dev/null; then
	log "skip load latency: sockperf missing (apt-get install sockperf, or scripts/deps.sh)"
	LOADS=$(tr , '\n' <<<"$LOADS" | grep -vx latency | paste -sd, -)
fi
[[ -x $UPSTREAM ]] || die "$UPSTREAM missing: make bench-tools"

TAG=mmpf-$$ NS=mmpf-$$-p NSC=mmpf-$$-c
PIN_DIR=/sys/fs/bpf/mmproxy-bpf-field-$$
TMP=$(mktemp -d /tmp/mmpf.XXXXXX)
mkdir -p "$OUT_DIR"
RAW=$OUT_DIR/field-$(date +%Y-%m-%d-%H%M).jsonl
PIDS=() PROXY_PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}" "${PROXY_PIDS[@]}"; do stop_pid "$p"; done
	ns_del "$NSC" "$NS"
	rm -rf "$PIN_DIR"; ((KEEP_TMP)) || rm -rf "$TMP"
}
trap cleanup EXIT
KEEP_TMP=${KEEP_TMP:-0}
trap 'exit 130' INT TERM

# ---- topology: proxy namespace (loopback, transparent routing) and a client
# namespace for wrk joined by veth (HAProxy's clients must not be local: the
# proxy binds to the client ip:port the PROXY header names).
ip netns add "$NS"
in_ns "$NS" ip link set lo up
in_ns "$NS" ip rule add from 127.0.0.1/8 iif lo table 123
in_ns "$NS" ip route add local 0.0.0.0/0 dev lo table 123
in_ns "$NS" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1 \
	net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535 net.ipv4.ip_local_port_range="1024 65535"
# Connection: close reuses client ip:ports (wrk from one address, HAProxy)
# within seconds, and a new connection can meet a TIME_WAIT socket of its own
# tuple at a hop (run.sh's --with-haproxy uses 126 client addresses for this;
# wrk cannot). No TIME_WAIT in this namespace, for every configuration alike.
in_ns "$NS" sysctl -qw net.ipv4.tcp_max_tw_buckets=0
ip netns add "$NSC"
in_ns "$NSC" ip link set lo up
ip link add "${TAG}c" netns "$NSC" type veth peer name "${TAG}p" netns "$NS"
in_ns "$NSC" ip addr add 198.51.100.2/24 dev "${TAG}c"
in_ns "$NS" ip addr add 198.51.100.1/24 dev "${TAG}p"
in_ns "$NSC" ip link set "${TAG}c" up
in_ns "$NS" ip link set "${TAG}p" up
in_ns "$NSC" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" net.ipv4.tcp_tw_reuse=1

P_ECHO=9000 P_NGINX=9080 P_SOCKPERF=9100 P_PROXY=8443 P_HAPROXY=8080
nsenter --net="/run/netns/$NS" "$UPSTREAM" -m echo --threads 2 -l 127.0.0.1:$P_ECHO >"$TMP/echo.log" 2>&1 &
PIDS+=($!)
wait_listen "$NS" tcp $P_ECHO $! || die "echo upstream did not start"
nginx_conf "$TMP" $P_NGINX
(ulimit -n "$(ulimit -Hn)"; exec nsenter --net="/run/netns/$NS" nginx -p "$TMP" -c "$TMP/nginx.conf" -e "$TMP/nginx-error.log") \
	>"$TMP/nginx.log" 2>&1 &
PIDS+=($!)
wait_listen "$NS" tcp $P_NGINX $! || die "nginx did not start"
if [[ ,$LOADS, == *,latency,* ]]; then
	nsenter --net="/run/netns/$NS" sockperf server --tcp -i 127.0.0.1 -p $P_SOCKPERF >"$TMP/sockperf-server.log" 2>&1 &
	PIDS+=($!)
	wait_listen "$NS" tcp $P_SOCKPERF $! || die "sockperf server did not start"
fi

# ---- configurations
proxy_cmd() { # CFG UPPORT VERBOSE (--detach: see bench/run.sh)
	case $1 in
	mmproxy-bpf/*) echo "$BIN run -l 127.0.0.1:$P_PROXY -4 127.0.0.1:$2 -6 [::1]:$2 --listeners 2" \
		"$(engine_flags "${1#mmproxy-bpf/}") --pin-dir $PIN_DIR --detach -v $3" ;;
	mmproxy-bpf-base/*) echo "$BASE_BIN run -l 127.0.0.1:$P_PROXY -4 127.0.0.1:$2 -6 [::1]:$2 --listeners 2" \
		"$(engine_flags "${1#mmproxy-bpf-base/}") --pin-dir $PIN_DIR --detach -v $3" ;;
	go-mmproxy-*) echo "${PEER[$1]} -l 127.0.0.1:$P_PROXY -4 127.0.0.1:$2 -6 [::1]:$2 -listeners 2 -v 0" ;;
	mmproxy-rs) echo "${PEER[$1]} -l 127.0.0.1:$P_PROXY -4 127.0.0.1:$2 -6 [::1]:$2 --listeners 2" ;;
	esac
}
start_bg() { # LOG CMD...: in the proxy namespace; PID into PROXY_PIDS
	(ulimit -n "$(ulimit -Hn)"; exec nsenter --net="/run/netns/$NS" "${@:2}") >"$1" 2>&1 &
	PROXY_PIDS+=($!)
}
stop_proxies() {
	local p
	for p in "${PROXY_PIDS[@]}"; do stop_pid "$p"; done
	PROXY_PIDS=()
	rm -rf "$PIN_DIR"
}
start_haproxy() { # CFG UPPORT
	local server="server s 127.0.0.1:$P_PROXY send-proxy-v2"
	[[ $1 == none ]] && server="server s 127.0.0.1:$2"
	cat >"$TMP/haproxy.cfg" <<EOF
global
	maxconn 9000
	nbthread 2
defaults
	mode tcp
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend fe
	bind 198.51.100.1:$P_HAPROXY
	default_backend be
backend be
	$server
EOF
	start_bg "$TMP/haproxy.log" haproxy -db -f "$TMP/haproxy.cfg"
	wait_listen "$NS" tcp $P_HAPROXY "${PROXY_PIDS[-1]}"
}

APID=
attach_start() { # NAME: ATTACH against the proxy (the first of PROXY_PIDS)
	$ATTACH "${PROXY_PIDS[0]}" >"$OUT_DIR/attach-$1.txt" 2>&1 &
	APID=$!
	sleep 0.5
}
attach_stop() {
	kill -INT "$APID" 2>/dev/null || true
	wait "$APID" 2>/dev/null || true
	APID=
}

RUN=0
# run_one LOAD CFG ROUND: appends one JSON line to $RAW
run_one() {
	local load=$1 cfg=$2 round=$3 up=$P_ECHO verbose=0 value= unit extra= cmd
	RUN=$((RUN + 1))
	[[ $load == http-* ]] && up=$P_NGINX
	[[ $load == latency ]] && up=$P_SOCKPERF
	[[ ($load == streams* || -n ${FIELD_VERBOSE:-}) && $cfg == mmproxy-bpf/* ]] && verbose=2
	if [[ $cfg != none ]]; then
		read -r -a cmd <<<"$(proxy_cmd "$cfg" $up $verbose)"
		start_bg "$TMP/proxy.log" "${cmd[@]}"
		wait_listen "$NS" tcp $P_PROXY "${PROXY_PIDS[-1]}" || { log "  $cfg did not start"; stop_proxies; return 0; }
	fi
	case $load in
	streams*)
		# A client address per run and connection (port = connection uid): no
		# tuple of an earlier run is ever reused.
		local target=127.0.0.1:$P_PROXY rate=() conns=(-c 50) look=1.5
		[[ $cfg == none ]] && target=127.0.0.1:$P_ECHO
		[[ $load == streams-r ]] && rate=(-r 200000)
		[[ $load == streams1000 ]] && conns=(-c 1000 --connect-rate 1000) look=2
		cmd=(tcpkali "${conns[@]}" -T "${DURATION}s" -e1 "PROXY TCP4 198.18.$((RUN / 250)).$((RUN % 250 + 1)) 127.0.0.1 \\{connection.uid} $up\\r\\n"
			-em 'PING\r\n' "${rate[@]}" "$target")
		echo "${cmd[*]}" >"$TMP/cmd"
		[[ -n $ATTACH && $cfg != none ]] && attach_start "$load-${cfg//\//-}-$round"
		# 1,000 connections need more than the usual 1,024 open files.
		(ulimit -n "$(ulimit -Hn)"; exec nsenter --net="/run/netns/$NS" "${cmd[@]}") >"$TMP/out" 2>&1 &
		local kpid=$!
		if [[ $cfg == mmproxy-bpf/* ]]; then
			# tcpkali opens 100 connections/s by default (the last at 0.5 s), 1000/s for streams1000 (1 s).
			sleep "$look"
			in_ns "$NS" "$BIN" stats --json --pin-dir "$PIN_DIR" >"$TMP/stats.json" 2>/dev/null || true
			extra=",$(python3 -c 'import json,sys
try: t = json.load(open(sys.argv[1]))["tcp"]
except Exception: t = {}
print(",".join("\"%s\":%s" % (k, json.dumps(t.get(v))) for k, v in
    (("tc_flows_1s", "tc_flows"), ("tc_within_1s", "tc_within_1s"), ("tc_carried_1s", "tc_carried"),
     ("tc_aborted_1s", "tc_aborted"))))' "$TMP/stats.json")"
		fi
		wait $kpid || log "  tcpkali failed: $(tail -2 "$TMP/out")"
		[[ -n $APID ]] && attach_stop
		# "Aggregate bandwidth: 4512.3↓, 4512.4↑ Mbps": both ways, Mbit/s
		value=$(sed -n 's/^Aggregate bandwidth: *\([0-9.]*\)↓, *\([0-9.]*\)↑ Mbps.*/\1 \2/p' "$TMP/out" |
			awk '{print $1 + $2}')
		unit=Mbps
		extra+=",\"down_up\":\"$(sed -n 's/^Aggregate bandwidth: *\([0-9.]*\)↓, *\([0-9.]*\)↑ Mbps.*/\1 \2/p' "$TMP/out")\""
		if [[ $cfg == mmproxy-bpf/* ]]; then
			extra+=",\"handed\":$(grep -c 'spliced in the kernel' "$TMP/proxy.log" || true)"
			extra+=",\"aborted\":$(grep -c 'did not quiet down' "$TMP/proxy.log" || true)"
			extra+=",\"flows_handed\":$(grep 'spliced in the kernel' "$TMP/proxy.log" |
				grep -o 'client [^ ]*' | sort -u | wc -l || true)"
			cp "$TMP/proxy.log" "$TMP/proxy-$RUN.log" # kept with KEEP_TMP=1
		fi
		;;
	http-*)
		[[ -n $ATTACH && $cfg != none ]] && attach_start "$load-${cfg//\//-}-$round"
		start_haproxy "$cfg" $up || { log "  haproxy did not start"; stop_proxies; return 0; }
		cmd=(wrk -t 2 -c 64 -d "${DURATION}s")
		[[ $load == http-close ]] && cmd+=(-H 'Connection: close')
		cmd+=("http://198.51.100.1:$P_HAPROXY/")
		echo "${cmd[*]}" >"$TMP/cmd"
		in_ns "$NSC" "${cmd[@]}" >"$TMP/out" 2>&1 || log "  wrk failed: $(tail -2 "$TMP/out")"
		value=$(awk '/^Requests\/sec:/{print $2}' "$TMP/out")
		[[ -n $APID ]] && attach_stop
		extra+=",\"requests\":$(awk '/requests in/{print $1}' "$TMP/out" | grep . || echo null)"
		extra+=",\"errors\":\"$(grep -o 'Socket errors.*\|Non-2xx.*' "$TMP/out" | tr -d '"' | paste -sd' ' - || true)\""
		extra+=",\"latency_avg_max\":\"$(awk '$1 == "Latency" {print $2, $4}' "$TMP/out")\""
		unit=req/s
		;;
	latency)
		# One TCP connection, 64-byte ping-pong, client -> HAProxy send-proxy-v2 -> proxy -> sockperf
		# server ("none": HAProxy -> server). Half the round trip, as sockperf reports it; lower is
		# better. Its 400 ms warm-up covers the tc hand-off (--tc-handoff-delay 20 ms).
		start_haproxy "$cfg" $up || { log "  haproxy did not start"; stop_proxies; return 0; }
		cmd=(sockperf ping-pong --tcp -i 198.51.100.1 -p $P_HAPROXY -t "$DURATION" --msg-size 64)
		echo "${cmd[*]}" >"$TMP/cmd"
		in_ns "$NSC" "${cmd[@]}" >"$TMP/out" 2>&1 || log "  sockperf failed: $(tail -2 "$TMP/out")"
		value=$(sed -n 's/.*Summary: Latency is \([0-9.]*\) usec.*/\1/p' "$TMP/out" | head -1)
		extra+=",\"p50_us\":$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$TMP/out" | head -1 | grep . || echo null)"
		extra+=",\"p99_us\":$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' "$TMP/out" | head -1 | grep . || echo null)"
		unit=us
		;;
	esac
	stop_proxies
	printf '{"load":"%s","config":"%s","round":%d,"value":%s,"unit":"%s"%s,"cmd":"%s"}\n' "$load" "$cfg" \
		"$round" "${value:-null}" "$unit" "$extra" "$(sed 's/\\/\\\\/g; s/"/\\"/g' "$TMP/cmd")" | tee -a "$RAW" >&2
}

IFS=, read -r -a CFG_LIST <<<"$CONFIGS"
avail=()
for c in "${CFG_LIST[@]}"; do
	if [[ $c == mmproxy-bpf/* ]]; then [[ -x $BIN ]] || { log "skip $c: $BIN not built"; continue; }
	elif [[ $c == mmproxy-bpf-base/* ]]; then [[ -x $BASE_BIN ]] || { log "skip $c: set MMPROXY_BPF_BASE"; continue; }
	elif [[ $c != none ]]; then [[ -x ${PEER[$c]:-} ]] || { log "skip $c: not installed"; continue; }
	fi
	avail+=("$c")
done
log "field.sh: ${ROUNDS} rounds of ${DURATION}s; configurations: ${avail[*]}; results $RAW"
IFS=, read -r -a LOAD_LIST <<<"$LOADS"
# One lock hold = one round: every configuration of one load, or with
# --round-major every load of the list (fewer, longer holds).
one_hold() { # ROUND LOAD...
	local round=$1 load cfg
	[[ -n $LOCK ]] && { exec {lockfd}>"$LOCK"; flock "$lockfd"; }
	for load in "${@:2}"; do
		log "== $load round $round"
		for cfg in "${avail[@]}"; do run_one "$load" "$cfg" "$round"; done
	done
	# Let other users of the lock in (flock is not fair) before the next round.
	[[ -n $LOCK ]] && { exec {lockfd}>&-; sleep 3; }
	return 0
}
if ((ROUND_MAJOR)); then
	for ((round = 1; round <= ROUNDS; round++)); do one_hold $round "${LOAD_LIST[@]}"; done
else
	for load in "${LOAD_LIST[@]}"; do
		for ((round = 1; round <= ROUNDS; round++)); do one_hold $round "$load"; done
	done
fi
python3 "$BENCH_DIR/field_report.py" "$RAW"
