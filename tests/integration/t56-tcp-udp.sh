#!/usr/bin/env bash
# t56-tcp-udp: `-p tcp,udp`, one instance serving both protocols on the same
# -l (issue 27 part 3, docs/DESIGN.md §13). The load balancer is in the
# client namespace; one -a file lists it for both protocols.
#   1 TCP, both families: a PROXY v2 header, 16 MiB each way byte-exact, the
#     upstream sees the client's ip:port;
#   2 UDP on the same port, both families: v2 datagrams echoed, the upstream
#     sees the client;
#   3 the data paths: under MMP_ENGINE=tc the TCP flows reach the kernel (tc
#     engine) and the UDP flows the fast path; under sockmap TCP runs on
#     sockmap and UDP on the userspace relay; under splice both in userspace;
#     one --metrics server shows the TCP and the UDP series;
#   4 SIGHUP with a changed -a file: one reload, applied to both protocols
#     (new TCP connections and new UDP flows from the removed load balancer
#     are refused), and served again once it is back;
#  4b a second -p tcp,udp on the same port with another --pin-dir is refused
#     (the pin lock cannot see it: the port lock does), naming the first;
#   5 stop: exit 0, no pins, no TC filter of either protocol left; totals
#     for both protocols;
#   6 a port range, -l 0.0.0.0:7100-7103 (sk_lookup for both protocols) and
#     the default pin directory: both protocols on its first and last port,
#     `stats -p tcp,udp -l` finds the instance and shows both protocols; at
#     stop no filter and no sk_lookup link is left.
source "$(dirname "$0")/udp-lib.sh"
source "$(dirname "$0")/tc-lib.sh"

if ! is_bpf; then
	echo "SKIP t56: go-mmproxy has no -p tcp,udp"
	exit 0
fi
t_setup t56
udp_ns_setup t56

# 16 MiB each way: the client is still sending when the tc engine takes the flow over
# (with less, it may have half-closed already: the flow then stays on splice, t13).
SIZE=$((16 << 20))
ALLOW=$T_TMP/allowed.txt
METRICS=127.0.0.1:9856
RANGE_LO=7100
RANGE_HI=7103

# Both upstreams on UP_PORT: TCP xfer (TUP4_LOG, TUP6_LOG) and UDP echo (UP4_LOG, UP6_LOG).
ups_start() {
	up_start -m xfer --send "$SIZE" || return 1
	TUP4_LOG=$UP4_LOG TUP6_LOG=$UP6_LOG
	udp_up_start
}

# dual_start ARGS...: mmproxy-bpf run -p tcp,udp with ARGS; waits for the
# TCP and the UDP socket on PORT (ARGS' -l). Sets MMP_PID, MMP_LOG, MMP_PINDIR.
dual_start() {
	local port=$1
	shift
	MMP_STARTS=$((MMP_STARTS + 1))
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	MMP_CMD=("$MMP_BIN" run -p tcp,udp -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" -a "$ALLOW"
		-v "$MMP_VERBOSITY" --engine "$MMP_ENGINE" --tc-handoff-delay 0 "$@")
	# The load balancer is remote (veth-p): the tc engine takes its IPv6 flows with --iface only (t13).
	[[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]] && MMP_CMD+=(--iface veth-p)
	cleanup_push "rm -rf '$MMP_PINDIR'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" "${MMP_CMD[@]}"
	if ! wait_port "$TOPO_PROXY" "$port" 10 "$MMP_PID" || ! wait_udp_port "$TOPO_PROXY" "$port" 10 "$MMP_PID"; then
		MMP_START_ERR="proxy did not listen on tcp and udp port $port: $(grep -v libbpf "$MMP_LOG" | tail -n 3 | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
}

# tcp_xfer PROXY CLIENT_IP: SIZE bytes each way through a v2 header naming
# CLIENT_IP:(fresh port); the upstream of the client's family must have seen
# exactly that client and those bytes. Returns 1 (after case_fail) otherwise.
tcp_xfer() {
	local proxy=$1 cip=$2 cport log mark done_line un ush urn ursh cs csh crn crsh
	next_port cport
	[[ $cip == *:* ]] && log=$TUP6_LOG || log=$TUP4_LOG
	mark=$(log_mark "$log")
	if ! client "$TOPO_CLIENT" -c "$proxy" --pp2 "$(hostport "$cip" "$cport")" "$proxy" --send "$SIZE" --timeout 10; then
		case_fail "tcp $cip via $proxy: client: $(client_result)"
		return 1
	fi
	if ! done_line=$(wait_log_since "$log" "$mark" "^done $cip $cport " 5); then
		case_fail "tcp $cip via $proxy: the upstream never saw $cip:$cport ($(log_since "$log" "$mark" | grep -m1 '^done'))"
		return 1
	fi
	read -r _ _ _ _ un ush _ urn ursh <<<"$done_line"
	read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' <<<"$CLIENT_OUT")"
	[[ $urn == "$cs" && $ursh == "$csh" ]] || case_fail "tcp $cip: client sent $cs ${csh:0:12}, upstream got $urn ${ursh:0:12}"
	[[ $crn == "$un" && $crsh == "$ush" ]] || case_fail "tcp $cip: upstream sent $un ${ush:0:12}, client got $crn ${crsh:0:12}"
}

# tcp_refused PROXY CLIENT_IP: a v2 connection gets no byte of the upstream's.
tcp_refused() {
	local cport
	next_port cport
	if client "$TOPO_CLIENT" -c "$1" --pp2 "$(hostport "$2" "$cport")" "$1" --send 1024 --timeout 3; then
		case_fail "tcp $2 via $1: served although its load balancer is not allowed"
	fi
}

# udp_echo PROXY CLIENT_IP: a new flow of 300 v2 datagrams (a pause after 50,
# so that the fast path takes it over), all echoed, the upstream saw the client.
udp_echo() {
	local proxy=$1 cip=$2 cport log
	next_port cport
	[[ $cip == *:* ]] && log=$UP6_LOG || log=$UP4_LOG
	if ! udp_send "$TOPO_CLIENT" -c "$proxy" --format v2 --client "$(hostport "$cip" "$cport")" -n 300 --rate 5000 \
		--pause-after 50 --pause-ms 300 --echo --timeout 3 || ((UDP_ECHOED != 300)); then
		case_fail "udp $cip via $proxy: $(udp_result)"
		return 1
	fi
	udp_peer_seen "$log" "$cip" "$cport" || case_fail "udp $cip via $proxy: the upstream never saw $cip:$cport"
}

# udp_refused PROXY CLIENT_IP: a new flow gets no echo.
udp_refused() {
	local cport
	next_port cport
	if udp_send "$TOPO_CLIENT" -c "$1" --format v2 --client "$(hostport "$2" "$cport")" -n 3 --echo --timeout 1; then
		case_fail "udp $2 via $1: served although its load balancer is not allowed"
	fi
}

reload() {
	local mark
	mark=$(log_mark "$MMP_LOG")
	kill -HUP "$MMP_PID"
	wait_log_since "$MMP_LOG" "$mark" 'reload(ed| failed)' 5 >/dev/null || case_fail "no reload line after SIGHUP"
	sleep 0.3 # a second reload line would be a reload per protocol
	RELOADS=$(log_since "$MMP_LOG" "$mark" | grep -c 'reloaded')
}

# our_filters: TC filters of the tc engine (handle 0x4d4d) or the UDP fast path (0x4d55) left in the proxy namespace.
our_filters() {
	local dev hook
	for dev in $(ip -n "$TOPO_PROXY" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
		for hook in ingress egress; do
			tc -n "$TOPO_PROXY" filter show dev "$dev" "$hook" 2>/dev/null | grep -E 'handle 0x4d(4d|55)' |
				sed "s/^/$dev $hook: /"
		done
	done
}

C4=203.0.113.56
C6=2001:db8:ff::56
P4="$TOPO_PROXY_IP4:$PROXY_PORT"
P6="[$TOPO_PROXY_IP6]:$PROXY_PORT"

t_require ups_start
printf '%s\n' "$TOPO_CLIENT_IP4/32" "$TOPO_CLIENT_IP6/128" >"$ALLOW"
MMP_PINDIR="/sys/fs/bpf/mmproxy-bpf-test-$$-dual"
t_require dual_start "$PROXY_PORT" -l "[::]:$PROXY_PORT" --pin-dir "$MMP_PINDIR" --metrics "$METRICS"

# ------------------------------------------------------------------ 1 --
case_begin "1 tcp on [::]:$PROXY_PORT, both families: v2, byte-exact, the upstream sees the client"
tcp_xfer "$P4" "$C4"
tcp_xfer "$P6" "$C6"
case_end

# ------------------------------------------------------------------ 2 --
case_begin "2 udp on the same port, both families: v2 datagrams echoed, the upstream sees the client"
udp_echo "$P4" "$C4"
udp_echo "$P6" "$C6"
case_end

# ------------------------------------------------------------------ 3 --
case_begin "3 the data paths of engine $MMP_ENGINE; one /metrics with both protocols"
grep -q 'listening on \[::\]:.*engine' "$MMP_LOG" || case_fail "no tcp start-up line"
grep -q 'listening on udp \[::\]:' "$MMP_LOG" || case_fail "no udp start-up line"
udp_counters_fresh
fast=$(udp_counter fast_fwd_dgrams) relayed=$(udp_counter fwd_dgrams)
case $MMP_ENGINE in
tc | auto)
	((${fast:-0} > 0)) || case_fail "udp: no datagram moved by the fast path (fast_fwd_dgrams '${fast:-?}')"
	;;
*)
	grep -q 'every datagram relayed in userspace' "$MMP_LOG" || case_fail "udp: not on the userspace relay"
	((${fast:-0} == 0)) || case_fail "udp: $fast datagrams in the kernel under --engine $MMP_ENGINE"
	;;
esac
ns_exec "$TOPO_PROXY" curl -s -o "$T_TMP/m" "http://$METRICS/metrics" || case_fail "GET /metrics failed"
grep -q '^mmproxy_connections_accepted_total' "$T_TMP/m" || case_fail "/metrics has no TCP series"
grep -q '^mmproxy_udp_datagrams_total' "$T_TMP/m" || case_fail "/metrics has no UDP series"
case_note "udp: fast path $fast datagrams, relay $relayed"
case_end

# ------------------------------------------------------------------ 4 --
case_begin "4 SIGHUP with a changed -a: one reload, for both protocols"
echo "192.0.2.0/24" >"$ALLOW"
reload
((RELOADS == 1)) || case_fail "$RELOADS 'reloaded' lines, expected 1"
tcp_refused "$P4" "$C4"
udp_refused "$P4" "$C4"
udp_refused "$P6" "$C6"
printf '%s\n' "$TOPO_CLIENT_IP4/32" "$TOPO_CLIENT_IP6/128" >"$ALLOW"
reload
tcp_xfer "$P6" "$C6"
udp_echo "$P4" "$C4"
proc_alive "$MMP_PID" || case_fail "the proxy died"
case_end

# ----------------------------------------------------------------- 4b --
case_begin "4b a second -p tcp,udp on the same port, another --pin-dir: refused in one line naming the first"
out=$(ns_exec "$TOPO_PROXY" timeout 10 "$MMP_BIN" run -p tcp,udp -l "[::]:$PROXY_PORT" -a "$ALLOW" \
	--pin-dir "$MMP_PINDIR-second" --engine "$MMP_ENGINE" 2>&1)
rc=$?
rm -rf "$MMP_PINDIR-second"
((rc != 0 && rc != 124)) || case_fail "exit $rc: $(tail -2 <<<"$out" | tr '\n' ' ')"
grep -q "another mmproxy-bpf instance serves the same ports (pid $MMP_PID" <<<"$out" ||
	case_fail "no line naming the first instance: $(grep -v libbpf <<<"$out" | tail -2 | tr '\n' ' ')"
proc_alive "$MMP_PID" || case_fail "the first instance died"
case_end

# ------------------------------------------------------------------ 5 --
case_begin "5 stop: exit 0, no pins, no TC filter of either protocol"
mmp_stop
if [[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]]; then
	tc_totals || case_fail "no totals line"
	((${TOT_TC:-0} >= 3)) || case_fail "tcp: ${TOT_TC:-0} flows spliced in the kernel by tc, expected 3"
	case_note "tcp: ${TOT_TC:-?} flows in the kernel"
elif [[ $MMP_ENGINE == sockmap ]]; then
	mmp_totals || case_fail "no totals line"
	((${MMP_TOT_SOCKMAP:-0} >= 3)) || case_fail "tcp: ${MMP_TOT_SOCKMAP:-0} flows on sockmap, expected 3"
fi
grep -q 'udp totals:' "$MMP_LOG" || case_fail "no udp totals at exit"
left=$(our_filters)
[[ -z $left ]] || case_fail "filters left: $(head -3 <<<"$left" | tr '\n' ' ')"
case_end

# ------------------------------------------------------------------ 6 --
case_begin "6 -l 0.0.0.0:$RANGE_LO-$RANGE_HI, default pin directory: both protocols, stats -p tcp,udp -l"
R_ARGS=(-p tcp,udp -l "0.0.0.0:$RANGE_LO-$RANGE_HI")
# The directory the instance derives (a -netns- suffix in a test namespace), removed whatever happens.
# The directory it derives: "-netns-NAME" is added where pid 1's namespace is another (lib/instance.c).
R_DIR="/sys/fs/bpf/mmproxy-bpf/tcpudp-0_0_0_0-$RANGE_LO-$RANGE_HI"
cleanup_push "rm -rf '$R_DIR' '$R_DIR-netns-$TOPO_PROXY'"
if dual_start "$RANGE_LO" -l "0.0.0.0:$RANGE_LO-$RANGE_HI"; then
	MMP_PINDIR=$R_DIR-netns-$TOPO_PROXY
	[[ -d $MMP_PINDIR ]] || MMP_PINDIR=$R_DIR
	[[ -d $MMP_PINDIR ]] || case_fail "no pin directory $R_DIR*"
	tcp_xfer "$TOPO_PROXY_IP4:$RANGE_LO" "$C4"
	tcp_xfer "$TOPO_PROXY_IP4:$RANGE_HI" "$C4"
	udp_echo "$TOPO_PROXY_IP4:$RANGE_LO" "$C4"
	udp_echo "$TOPO_PROXY_IP4:$RANGE_HI" "$C4"
	# One sk_lookup program per protocol, each pinned under its own names (a killed instance's are found by cleanup).
	for pin in mmp_sk_lookup_link mmp_sk_lookup_link_udp mmp_sk_listeners mmp_sk_listeners_udp; do
		[[ -e $MMP_PINDIR/$pin ]] || case_fail "$pin is not pinned in $MMP_PINDIR"
	done
	grep -q "listening on 0.0.0.0:$RANGE_LO-$RANGE_HI (4 ports, sk_lookup)" "$MMP_LOG" ||
		case_fail "tcp start-up line: $(grep 'listening on' "$MMP_LOG" | head -1)"
	sleep 1.2 # the counters are published once a second
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" stats "${R_ARGS[@]}" 2>&1) || case_fail "stats ${R_ARGS[*]}: $(head -2 <<<"$out")"
	grep -qi 'udp' <<<"$out" || case_fail "stats shows no UDP part: $(head -3 <<<"$out" | tr '\n' ' ')"
	grep -qiE 'accepted|connections' <<<"$out" || case_fail "stats shows no TCP part: $(head -3 <<<"$out" | tr '\n' ' ')"
	mmp_stop
	left=$(our_filters)
	[[ -z $left ]] || case_fail "filters left: $(head -3 <<<"$left" | tr '\n' ' ')"
	[[ ! -e $MMP_PINDIR/mmp_sk_lookup_link && ! -e ${MMP_PINDIR}/mmp_sk_lookup_link_udp ]] ||
		case_fail "an sk_lookup link is still pinned"
else
	case_fail "$MMP_START_ERR"
fi
case_end

case_lifecycle
t_finish
