#!/usr/bin/env bash
# t45: UDP port ranges (issue 11 point 2, docs/DESIGN.md §8). The load
# balancer is mmpt-udp send in the client namespace, the proxy serves
# [::]:7000-7999 (1000 ports, both families) in the proxy namespace.
#
#   1. -4/-6 as ranges of the same size (1:1): 20 ports spread over the range
#      (first, last and between), PROXY v2, 100 sequenced datagrams each, each
#      to its own echo upstream 9000+k, which sees the header's client; every
#      reply comes back in order on the load balancer's socket, which is
#      connected to the port it sent to: a reply from any other port (the
#      sk_lookup socket is bound to the first one only) would be dropped.
#   2. IPv6 load balancer and clients on three ports; SPP on three ports (the
#      replies carry the client's header, from the right port).
#   3. Ports just outside (6999, 8000) get nothing back.
#   4. -4 as one port: every listen port to one upstream.
#   5. The fallback (MMP_NO_SK_LOOKUP=1): one socket per port.
#   6. Fast path (MMP_ENGINE=tc/auto): paced flows to ports of the range are
#      moved by the kernel after the hand-over (fast_fwd_dgrams and
#      fast_reply_dgrams grow) and stay exact.
# Would fail without ranges: -l LO-HI did not parse, and replies left from the
# listen socket's own port.
source "$(dirname "$0")/udp-lib.sh"
is_bpf || { echo "SKIP t45: port ranges are mmproxy-bpf's"; exit 0; }
udp_setup t45

LO=7000
HI=7999
N=100
PORTS=(7000 7001 7053 7101 7199 7250 7333 7402 7499 7500 7501 7600 7666 7750 7801 7850 7900 7950 7998 7999)
NEXT_CLIENT_PORT=30000

# range_start [ENV=VALUE...] -- ARGS...: the proxy in UDP mode with ARGS; waits for "listening on".
range_start() {
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1") && shift; done
	shift
	MMP_STARTS=$((MMP_STARTS + 1))
	MMP_DEAD_STATUS=""
	MMP_PINDIR="/sys/fs/bpf/mmproxy-bpf-test-$$-$MMP_STARTS"
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	cleanup_push "rm -rf '$MMP_PINDIR'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" env "${envs[@]}" "$MMP_BIN" run -p udp -v "$MMP_VERBOSITY" \
		--pin-dir "$MMP_PINDIR" --engine "$MMP_ENGINE" --udp-any-source "$@"
	if ! wait_grep "$MMP_LOG" 'listening on' 15; then
		MMP_START_ERR="proxy did not start: $(grep -v libbpf "$MMP_LOG" | tail -n 3 | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
}

# ups_start FAMILY PORT...: one echo upstream per port (UPLOG[PORT]).
declare -A UPLOG UPPID
ups_start() {
	local fam=$1 p addr
	shift
	for p in "$@"; do
		[[ $fam == 6 ]] && addr="[::1]:$p" || addr="127.0.0.1:$p"
		UPLOG[$fam-$p]="$T_TMP/up-$fam-$p-$MMP_STARTS.log"
		proc_start "UPPID[$fam-$p]" "${UPLOG[$fam-$p]}" "$TOPO_PROXY" "$UDP_TOOL" echo -l "$addr"
	done
	for p in "$@"; do wait_grep "${UPLOG[$fam-$p]}" '^listening' 5 || return 1; done
}
ups_stop() {
	local fam=$1 p
	shift
	for p in "$@"; do proc_stop "${UPPID[$fam-$p]}" 2; done
}

# echo_via FAMILY PORT UP_PORT CLIENT_IP [FORMAT] [EXTRA...]: one flow of N
# datagrams to the proxy's PORT with --echo; the upstream FAMILY-UP_PORT
# must have seen CLIENT_IP:(fresh port).
echo_via() {
	local fam=$1 port=$2 up=$3 cip=$4 fmt=${5:-v2} proxy cport
	shift 5 2>/dev/null || shift $#
	cport=$NEXT_CLIENT_PORT
	NEXT_CLIENT_PORT=$((NEXT_CLIENT_PORT + 1))
	[[ $fam == 6 ]] && proxy="[$TOPO_PROXY_IP6]:$port" || proxy="$TOPO_PROXY_IP4:$port"
	if ! udp_send "$TOPO_CLIENT" -c "$proxy" --format "$fmt" --client "$(hostport "$cip" "$cport")" -n "$N" \
		--echo --timeout 3 "$@"; then
		case_fail "port $port ($fmt): $(udp_result)"
		return 1
	fi
	((UDP_ECHOED == N)) || case_fail "port $port: $UDP_ECHOED of $N echoed"
	wait_grep "${UPLOG[${UPFAM:-4}-$up]}" "^peer $cip $cport\$" 3 ||
		case_fail "port $port: upstream $up did not see $cip:$cport ($(grep -m2 '^peer' "${UPLOG[${UPFAM:-4}-$up]}" | tr '\n' ' ')); seen by: $(grep -l "^peer $cip $cport\$" "$T_TMP"/up-*.log 2>/dev/null | tr '\n' ' ')"
}

# nothing_back PORT: datagrams to PORT (outside the range) get no reply.
nothing_back() {
	if udp_send "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$1" --format v2 --client 203.0.113.99:4444 -n 3 --echo --timeout 1; then
		case_fail "port $1 (outside the range) answered"
	elif ((UDP_ECHOED != 0)); then
		case_fail "port $1 (outside the range): $UDP_ECHOED replies"
	fi
}

UP4=() UP6=()
for p in "${PORTS[@]}"; do UP4+=($((p + 2000))); done

# ---------------------------------------------------------------- 1-3 --
case_begin "1 -l [::]:$LO-$HI, 1:1: 20 ports spread, $N datagrams each, replies from the port sent to"
if ! range_start -- -l "[::]:$LO-$HI" -4 127.0.0.1:9000-9999 -6 "[::1]:9000-9999" --listeners 2; then
	case_fail "$MMP_START_ERR"
	case_end
	t_finish
fi
grep -q "listening on udp \[::\]:$LO-$HI" "$MMP_LOG" || case_fail "start-up line: $(grep 'listening on' "$MMP_LOG")"
grep -q "port range: " "$MMP_LOG" && case_fail "fell back: $(grep 'port range: ' "$MMP_LOG")"
[[ -e $MMP_PINDIR/mmp_sk_listeners && -e $MMP_PINDIR/mmp_sk_lookup_link ]] || case_fail "sk_lookup pins missing"
if ups_start 4 "${UP4[@]}"; then
	for p in "${PORTS[@]}"; do echo_via 4 "$p" $((p + 2000)) 203.0.113.7 v2 || true; done
else
	case_fail "upstreams did not start"
fi
case_note "20 ports x $N datagrams, every reply in order"
case_end

case_begin "2 IPv6 clients on three ports; SPP on three ports"
if ups_start 6 9000 9500 9999; then
	for p in 7000 7500 7999; do UPFAM=6 echo_via 6 "$p" $((p + 2000)) 2001:db8:45::7 v2 || true; done
	ups_stop 6 9000 9500 9999
else
	case_fail "IPv6 upstreams did not start"
fi
for p in 7001 7499 7998; do echo_via 4 "$p" $((p + 2000)) 203.0.113.8 spp || true; done
case_end

case_begin "3 ports just outside the range get nothing back"
nothing_back 6999
nothing_back 8000
case_end
ups_stop 4 "${UP4[@]}"
mmp_stop

# ------------------------------------------------------------------- 4 --
case_begin "4 -4 as one port: all 20 ports to 127.0.0.1:9000"
if range_start -- -l "[::]:$LO-$HI" -4 127.0.0.1:9000 --listeners 2; then
	if ups_start 4 9000; then
		for p in "${PORTS[@]}"; do echo_via 4 "$p" 9000 203.0.113.9 v2 || true; done
		n=$(grep -c '^peer 203.0.113.9 ' "${UPLOG[4-9000]}")
		((n == 20)) || case_fail "the upstream saw $n clients, want 20"
		ups_stop 4 9000
	else
		case_fail "upstream did not start"
	fi
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

# ------------------------------------------------------------------- 5 --
case_begin "5 fallback without sk_lookup (MMP_NO_SK_LOOKUP=1): one socket per port, 1:1"
if range_start MMP_NO_SK_LOOKUP=1 -- -l "[::]:$LO-$HI" -4 127.0.0.1:9000-9999 --listeners 2; then
	grep -q "MMP_NO_SK_LOOKUP is set: one socket per port" "$MMP_LOG" || case_fail "no fallback log line"
	[[ -e $MMP_PINDIR/mmp_sk_listeners ]] && case_fail "mmp_sk_listeners pinned in fallback mode"
	nbound=$(ns_exec "$TOPO_PROXY" ss -Hlun 'sport >= :7000 and sport <= :7999' | wc -l)
	((nbound == 2000)) || case_fail "$nbound sockets on 7000-7999, want 2000 (2 listeners x 1000 ports)"
	if ups_start 4 9000 9333 9666 9999; then
		for p in 7000 7333 7666 7999; do echo_via 4 "$p" $((p + 2000)) 203.0.113.10 v2 || true; done
		ups_stop 4 9000 9333 9666 9999
	else
		case_fail "upstreams did not start"
	fi
	nothing_back 8000
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

# ------------------------------------------------------------------- 6 --
if udp_fast; then
	case_begin "6 fast path: paced flows to ports of the range move in the kernel"
	if range_start -- -l "[::]:$LO-$HI" -4 127.0.0.1:9000-9999 --listeners 2; then
		if ups_start 4 9001 9500 9999; then
			N=1000
			for p in 7001 7500 7999; do echo_via 4 "$p" $((p + 2000)) 203.0.113.11 v2 --rate 2000 || true; done
			N=100
			udp_counters_fresh
			kf=$(udp_counter fast_fwd_dgrams) kr=$(udp_counter fast_reply_dgrams)
			((${kf:-0} > 1500 && ${kr:-0} > 1500)) ||
				case_fail "the kernel moved ${kf:-?} datagrams up and ${kr:-?} replies of 3000 (want > 1500 each)"
			case_note "kernel: ${kf:-?} up, ${kr:-?} replies of 3000"
			ups_stop 4 9001 9500 9999
		else
			case_fail "upstreams did not start"
		fi
		mmp_stop
	else
		case_fail "$MMP_START_ERR"
	fi
	case_end
fi

case_lifecycle
t_finish
