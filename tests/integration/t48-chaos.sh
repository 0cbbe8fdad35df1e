#!/usr/bin/env bash
# t48: a load-balancer link that loses, reorders, duplicates and delays
# packets while flows are spliced in the kernel (issue 26, "Chaos";
# docs/DESIGN.md §10).
#
#   PREFIX-client (the LB)       PREFIX-wire                  PREFIX-proxy
#   veth-cw 192.0.2.2 ---- veth-wc [mmpt-chaos] veth-wp ---- veth-pw 192.0.2.1
#                                                             mmproxy-bpf -l 192.0.2.1:7000
#                                                               (tc: --iface veth-pw)
#                                                             upstreams on 127.0.0.1:9000
#
# The link is netem's "delay 10ms 5ms reorder 5% loss 1% duplicate 1%",
# both directions, played by tests/tools/mmpt-chaos in a wire namespace:
# this kernel has no sch_netem (nor fq or etf, so nothing in it can hold a
# packet back), and a userspace wire runs on any kernel CI has. It forwards
# every frame between its two veths with AF_PACKET; a frame is lost (1%),
# else sent twice (1%), each copy sent at once (5%: it overtakes the others)
# or held 10 +- 5 ms and released in time order (the jitter reorders too).
# It starts as a plain wire; SIGUSR2 turns the chaos on. GSO/TSO are off at
# both ends so that it works per segment, as a real link does.
#
# Case 1, TCP (every engine): N streams at once, each SIZE bytes both ways
# at RATE per direction (mmpt-bidir, its load-balancer end in the client
# namespace through --lb-netns, so its traffic crosses the wire). The chaos
# starts once every flow is spliced in the kernel (tc: the -v 2 "spliced in
# the kernel" line of each; other engines: once bytes flow), and lasts to
# the end. Case 1b (tc only): the same with the chaos on from the first
# SYN, so that the hand-off itself meets the bad link. Asserted:
#   - every stream byte-exact both ways (sha256 of what each end sent
#     against what the other received);
#   - no stall over STALL_MAX_MS: no stream went that long without either
#     end receiving a byte (mmpt-bidir's stall_ms, from the end of the
#     handshake: a SYN lost waits 1 s by TCP's own rule), and no single
#     direction waited over DIR_GAP_MAX_MS between two reads (gap_down_ms,
#     gap_up_ms; see DIR_GAP_MAX_MS below for why it is looser);
#   - tc: every flow spliced in the kernel, none left on splice, and the
#     kernel translated packets while the link misbehaved (mmp_tc_counters);
#     other engines: the proxy spliced all N (totals line), sockmap without
#     a fallback;
#   - the link really lost, duplicated, reordered and delayed frames
#     (mmpt-chaos's counters), and never dropped more than asked for.
# Printed: the LB's TCP counters (retransmits, RTOs, PAWS drops: the
# duplicates; they are as many under splice as under tc).
#
# Case 2, the UDP fast path (once, under MMP_ENGINE=tc: it does not depend
# on the TCP engine; SKIP under the others): CLIENTS flows of sequenced,
# self-describing datagrams (mmpt-udp send --echo) through an echo upstream:
# W datagrams each, a pause in which the kernel takes the flows over and the
# chaos starts, then the rest. UDP may lose, duplicate and reorder, so what
# is asserted is what it must not do: no reply corrupted or carrying
# another client's payload (mmpt-udp's "bad"), the upstream saw no peer but
# these clients, at most LOSS_MAX_PCT of the round trips lost (sent minus
# the sequence numbers that came back), no wait over STALL_MAX_MS between
# two replies, and the kernel moved at least 90% of the datagrams and
# replies under chaos (mmp_udp_cnt fast_fwd_dgrams, fast_reply_dgrams).
source "$(dirname "$0")/udp-lib.sh"
source "$(dirname "$0")/tc-lib.sh"
MMP_VERBOSITY=2 # the tc engine's per-flow hand-off lines
t_setup t48
if ! command -v ethtool >/dev/null; then
	echo "FAIL t48 setup: ethtool is not installed (make deps)"
	exit 1
fi
for tool in mmpt-chaos mmpt-bidir mmpt-udp; do
	[[ -x $MMP_TOOLS/$tool ]] || {
		echo "FAIL t48 setup: $MMP_TOOLS/$tool missing (make integration-tools)"
		exit 1
	}
done

STALL_MAX_MS=${T48_STALL_MAX_MS:-1000}
# One direction alone may wait longer than STALL_MAX_MS while the other
# flows: a retransmission lost again waits two backed-off RTOs (200 ms
# minimum each) plus the recovery, about 1 s on this link under every engine
# (splice included). Past DIR_GAP_MAX_MS it is no longer TCP's own.
DIR_GAP_MAX_MS=${T48_DIR_GAP_MAX_MS:-2000}
N=${T48_CONNS:-4}
SIZE=${T48_SIZE:-4M}
RATE=${T48_RATE:-1M} # per stream and direction: the transfer lasts SIZE/RATE = 4 s
CLIENTS=${T48_UDP_CLIENTS:-4}
DGRAMS=${T48_UDP_DGRAMS:-2000} # per client
W=200                          # per client, before the pause
LOSS_MAX_PCT=10                # the link loses about 2% of round trips (1% each way)
# netem's "delay 10ms 5ms reorder 5% loss 1% duplicate 1%", as mmpt-chaos takes it.
CHAOS=(--delay-ms 10 --jitter-ms 5 --reorder-pct 5 --loss-pct 1 --dup-pct 1)

# The wire and the measuring tool run SCHED_FIFO: on a loaded host (2
# shared cores, load 11 while measured) a descheduled wire or mmpt-bidir
# stalled every stream at once for 0.5-0.8 s, under splice as under tc,
# which is the host's stall, not the proxy's. Both sleep between packets,
# and the kernel's RT throttling bounds them anyway. The proxy runs as
# usual: its own scheduling is part of what is measured.
RT_WRAP=()
command -v chrt >/dev/null && chrt -f 1 true 2>/dev/null && RT_WRAP=(chrt -f 1)
BIDIR_WRAP=("${RT_WRAP[@]}")

WIRE_NS="mmpt-$$-wire"
LB_IP4=192.0.2.2 P_IP4=192.0.2.1

# chaos_topology: the load balancer's namespace (lib.sh's client) and the
# proxy's joined through a third, the wire, where mmpt-chaos forwards every
# frame between veth-wc and veth-wp (started --off: a plain wire).
#   client veth-cw 192.0.2.2 -- veth-wc [wire: mmpt-chaos] veth-wp -- veth-pw 192.0.2.1 proxy
# GSO/TSO off at both ends, so that the chaos is per segment as on a real
# link (a veth otherwise passes 64 KiB super-packets), and GRO off on the
# wire so that it sees those segments as sent.
chaos_topology() {
	cleanup_push "ip netns del '$WIRE_NS'"
	ip netns add "$WIRE_NS" || return 1
	ns_exec "$WIRE_NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || return 1
	ip -n "$TOPO_CLIENT" link add veth-cw type veth peer name veth-wc netns "$WIRE_NS" || return 1
	ip -n "$TOPO_PROXY" link add veth-pw type veth peer name veth-wp netns "$WIRE_NS" || return 1
	ip -n "$TOPO_CLIENT" addr add "$LB_IP4/24" dev veth-cw || return 1
	ip -n "$TOPO_PROXY" addr add "$P_IP4/24" dev veth-pw || return 1
	ns_exec "$TOPO_CLIENT" ethtool -K veth-cw tso off gso off >/dev/null || return 1
	ns_exec "$TOPO_PROXY" ethtool -K veth-pw tso off gso off >/dev/null || return 1
	ns_exec "$WIRE_NS" ethtool -K veth-wc gro off >/dev/null || return 1
	ns_exec "$WIRE_NS" ethtool -K veth-wp gro off >/dev/null || return 1
	local l
	for l in "$TOPO_CLIENT veth-cw" "$WIRE_NS veth-wc" "$WIRE_NS veth-wp" "$TOPO_PROXY veth-pw"; do
		# shellcheck disable=SC2086
		ip -n ${l% *} link set ${l#* } up || return 1
	done
	CHAOS_LOG="$T_TMP/chaos.log"
	proc_start CHAOS_PID "$CHAOS_LOG" "$WIRE_NS" "${RT_WRAP[@]}" "$MMP_TOOLS/mmpt-chaos" -a veth-wc -b veth-wp --off "${CHAOS[@]}"
	wait_grep "$CHAOS_LOG" '^ready' 5 || return 1
	# A remote load balancer's flows reach the kernel path only with these (t13).
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1
}

# chaos_on / chaos_off: mmpt-chaos toggles on SIGUSR2.
CHAOS_IS_ON=0
chaos_on() { ((CHAOS_IS_ON)) || { kill -USR2 "$CHAOS_PID" && CHAOS_IS_ON=1; }; }
chaos_off() { ((!CHAOS_IS_ON)) || { kill -USR2 "$CHAOS_PID" && CHAOS_IS_ON=0; }; }

# chaos_stats VAR: the wire's counters so far ("frames N lost L dups U
# reordered R held H overflow O") into the associative array VAR.
chaos_stats() {
	local -n __s=$1
	local n k line
	n=$(grep -c '^stats ' "$CHAOS_LOG")
	kill -USR1 "$CHAOS_PID"
	for ((k = 0; k < 40; k++)); do
		(($(grep -c '^stats ' "$CHAOS_LOG") > n)) && break
		sleep 0.05
	done
	line=$(grep '^stats ' "$CHAOS_LOG" | tail -n 1)
	read -r _ _ _ _ "__s[frames]" _ "__s[lost]" _ "__s[dups]" _ "__s[reordered]" _ "__s[held]" _ "__s[overflow]" <<<"$line"
}

t_require chaos_topology

# chaos_verdict BEFORE AFTER: the link really misbehaved between the two
# chaos_stats: it lost, duplicated, reordered and delayed frames (a case
# that passed over a plain wire proves nothing). CHAOS_STR says how much.
chaos_verdict() {
	# shellcheck disable=SC2178 # namerefs to the associative arrays chaos_stats filled
	local -n __b=$1 __a=$2
	local k d=()
	for k in frames lost dups reordered held overflow; do
		d+=("$((${__a[$k]:-0} - ${__b[$k]:-0}))")
	done
	CHAOS_STR="${d[0]} frames, ${d[1]} lost, ${d[2]} duplicated, ${d[3]} sent ahead, ${d[4]} delayed, ${d[5]} over the queue limit"
	((d[1] > 0 && d[2] > 0 && d[3] > 0 && d[4] > 0)) || case_fail "the link did not misbehave: $CHAOS_STR"
	((d[5] == 0)) || case_fail "mmpt-chaos's queue overflowed: more loss than asked for ($CHAOS_STR)"
}

# ---------------------------------------------------------------- TCP --

# conn_max OUT FIELD...: the largest value of these fields over mmpt-bidir's
# conn lines (ms, rounded).
conn_max() {
	local out=$1
	shift
	awk -v f=" $* " '/^conn / {for (i = 1; i < NF; i++) if (index(f, " " $i " ") && $(i + 1) > m) m = $(i + 1)}
		END {printf "%.0f", m}' "$out"
}

# conn_over OUT MAX FIELD...: "stream addr:port field value;" for up to 3
# conn lines where one of these fields is over MAX.
conn_over() {
	local out=$1 max=$2
	shift 2
	awk -v f=" $* " -v max="$max" '/^conn / {for (i = 1; i < NF; i++) if (index(f, " " $i " ") && $(i + 1) > max) {print $2 " " $3 ":" $4 " " $i " " $(i + 1); break}}' "$out" |
		head -3 | tr '\n' ';'
}

# tcp_case NAME WHEN PORT_BASE: WHEN is "spliced" (the chaos starts once
# every flow is in the kernel, or moving under the other engines) or "start"
# (before the first SYN: the tc hand-off itself runs over the bad link).
tcp_case() {
	local name=$1 when=$2 pbase=$3
	local listen="$P_IP4:$PROXY_PORT" out="$T_TMP/bidir-$pbase.out" mark tr0 tr1 ok bad gap worst stall iface=()
	# shellcheck disable=SC2034 # filled and read through namerefs (chaos_stats, chaos_verdict)
	local -A c0 c1 tc0 tc1
	local i t0 ms
	case_begin "$name"
	if [[ $MMP_FLAVOR != bpf ]]; then
		case_skip "mmproxy-bpf's engines only (the case starts it with its own options)"
		return
	fi
	[[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]] && iface=(--iface veth-pw)
	if ! tc_mmp_start "$(tc_pindir "$pbase")" "$listen" "${iface[@]}"; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	tc_nstat "$TOPO_CLIENT" NS0
	tc_nstat "$TOPO_PROXY" NSP0
	t0=$(date +%s%N)
	tr0=$(tc_counter "$MMP_PINDIR" packets_translated)
	for i in rewrite_failures packets_on_another_interface; do tc0[$i]=$(tc_counter "$MMP_PINDIR" "$i"); done
	chaos_stats c0
	if [[ $when == start ]]; then
		chaos_on || case_fail "mmpt-chaos (PID $CHAOS_PID) did not take SIGUSR2"
	fi
	tc_bidir_start "$TOPO_PROXY" "$out" -c "$listen" -l "127.0.0.1:$UP_PORT" \
		--lb-netns "/run/netns/$TOPO_CLIENT" -n "$N" --parallel "$N" --size "$SIZE" --rate "$RATE" \
		--net 203.0.113. --port-base "$pbase" --timeout 20 --stall-report-ms "$STALL_MAX_MS"
	# The chaos starts once every flow is in the kernel (tc), or moving (others).
	if [[ $when == start ]]; then
		:
	elif [[ ${#iface[@]} -gt 0 ]]; then
		for ((i = 0; i < 100; i++)); do
			tc_outcomes "$MMP_LOG" "$mark"
			((OC_SPLICED + OC_STAYS >= N)) && break
			sleep 0.05
		done
		((OC_SPLICED == N)) ||
			case_fail "$OC_SPLICED of $N flows spliced in the kernel before the chaos started ($OC_STAYS stay on splice, $OC_ABORTED aborted; first: $OC_FIRST_OTHER)"
	else
		sleep 0.3
	fi
	if [[ $when == spliced ]]; then
		tr0=$(tc_counter "$MMP_PINDIR" packets_translated)
		chaos_stats c0
		chaos_on || case_fail "mmpt-chaos (PID $CHAOS_PID) did not take SIGUSR2"
	fi
	tc_bidir_wait
	tr1=$(tc_counter "$MMP_PINDIR" packets_translated)
	chaos_off
	chaos_stats c1
	ms=$((($(date +%s%N) - t0) / 1000000))
	tc_nstat_delta "$TOPO_PROXY" NSP0
	local proxy_nstat=$NSTAT_STR
	tc_nstat_delta "$TOPO_CLIENT" NS0

	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	bad=$(grep '^conn ' "$out" | grep -v ' up [0-9]* ok down [0-9]* ok$' | head -3 | tr '\n' ';')
	((ok == N)) || case_fail "$ok of $N streams byte-exact both ways ($(tail -n 1 "$out"); e.g. ${bad:-$(tail -n 2 "$out" | tr '\n' ' ')})"
	# The longest time a stream delivered nothing (stall_ms), and the longest
	# wait between two reads at either end (gap_down_ms, gap_up_ms).
	stall=$(conn_max "$out" stall_ms)
	worst=$(conn_max "$out" gap_down_ms gap_up_ms)
	gap=$(conn_over "$out" "$STALL_MAX_MS" stall_ms)
	[[ -z $gap ]] || case_fail "streams that delivered nothing for over $STALL_MAX_MS ms (stream addr:port ms): $gap"
	gap=$(conn_over "$out" "$DIR_GAP_MAX_MS" gap_down_ms gap_up_ms)
	[[ -z $gap ]] || case_fail "one direction waited over $DIR_GAP_MAX_MS ms between two reads (stream addr:port direction ms): $gap"
	((TC_STALLS == 0)) || case_fail "$TC_STALLS streams moved no byte for $STALL_MAX_MS ms (first: $TC_STALL_DIAG)"
	chaos_verdict c0 c1

	if [[ ${#iface[@]} -gt 0 ]]; then
		((tr1 - tr0 > 0)) || case_fail "the kernel translated no packet while the link misbehaved"
		tc_outcomes "$MMP_LOG" "$mark"
		((OC_SPLICED == N && OC_STAYS == 0)) ||
			case_fail "$OC_SPLICED of $N flows spliced in the kernel, $OC_STAYS stayed on splice, $OC_ABORTED hand-offs aborted (first: $OC_FIRST_OTHER)"
		# The engine itself must lose nothing: a duplicated or reordered
		# segment is translated like any other. (freeze_drops are the hand-off's
		# own, by design: the peer retransmits them; printed only.)
		for i in rewrite_failures packets_on_another_interface; do
			tc1[$i]=$(tc_counter "$MMP_PINDIR" "$i")
			((${tc1[$i]:-0} == ${tc0[$i]:-0})) || case_fail "$i rose by $((${tc1[$i]:-0} - ${tc0[$i]:-0})) under chaos"
		done
		tc_handoff_stats "$MMP_LOG" "$mark"
		case_note "$((tr1 - tr0)) packets translated by the kernel under chaos ($(tc_counter "$MMP_PINDIR" freeze_drops) freeze drops), hand-off p50 $HO_P50 ms max $HO_MAX ms, $OC_ABORTED aborted"
	fi
	case_note "$ok/$N exact, longest stall $stall ms, longest read gap $worst ms, link: $CHAOS_STR; the LB's TCP: ${NSTAT_D[TcpRetransSegs]} retransmits, ${NSTAT_D[TcpExtTCPTimeouts]} RTOs; $ms ms"
	echo "# $T_ID TCP ($MMP_ENGINE): $(grep -c '^conn' "$out") streams, per stream: $(awk '/^conn / {printf "%s gap_down %s gap_up %s stall %s; ", $3, $10, $12, $14}' "$out")the LB's namespace: $NSTAT_STR; the proxy's (upstream sockets, and the proxy's own under splice and sockmap): $proxy_nstat"
	# On the lossy link a last FIN or ACK may still be in retransmission when
	# the tool exits, and ended entries linger 2 s before the collector takes
	# them; a proxy stopped with flows in its maps keeps its pins for a
	# successor, by design (CI once saw that). Wait for the map to empty.
	for ((w = 0; w < 100; w++)); do
		(($(tc_map_count "$MMP_PINDIR" mmp_tc_flows) <= 0)) && break
		sleep 0.1
	done
	mmp_stop
	case_end
	if [[ ${#iface[@]} -eq 0 ]]; then
		case_engine_used "$N"
	fi
}

# ---------------------------------------------------------------- UDP --

udp_case() {
	local total=$((CLIENTS * DGRAMS)) kf kr uf ur lost uniq peers stray gap
	# shellcheck disable=SC2034 # filled and read through namerefs (chaos_stats, chaos_verdict)
	local -A c0 c1
	case_begin "2 UDP fast path: $CLIENTS flows of $DGRAMS datagrams, chaos on the LB link once in the kernel: none corrupted or misdelivered, no stall over $STALL_MAX_MS ms"
	if ! is_bpf || [[ $MMP_ENGINE != tc && $MMP_ENGINE != auto ]]; then
		case_skip "the UDP fast path runs under MMP_ENGINE=tc only, and does not depend on the TCP engine: tested there once"
		return
	fi
	if ! udp_up_start || ! udp_mmp_start --udp-header auto -c 10 -v 1; then
		case_fail "${MMP_START_ERR:-the UDP upstreams did not start}"
		case_end
		return
	fi
	udp_send_bg "$TOPO_CLIENT" -c "$P_IP4:$PROXY_PORT" --format v2 --client 203.0.113.48:48000 --clients "$CLIENTS" \
		-n "$DGRAMS" --rate 2000 --size 300 --echo --timeout 9 --pause-after "$W" --pause-ms 2500
	# In the pause: the flows move to the kernel (the map refresh is 1 s).
	wait_grep "$UP4_LOG" '^peer 203\.0\.113\.48 48000$' 5 || case_fail "the upstream never saw the first client"
	udp_counters_fresh
	udp_counters >"$T_TMP/counters.before"
	chaos_stats c0
	chaos_on || case_fail "mmpt-chaos (PID $CHAOS_PID) did not take SIGUSR2"
	udp_send_wait
	chaos_off
	chaos_stats c1
	gap=$(sed -n 's/.*max_gap_ms \([0-9]*\).*/\1/p' <<<"$UDP_OUT")
	((UDP_SENT == total)) || case_fail "sent $UDP_SENT of $total datagrams ($(udp_result))"
	((UDP_BAD == 0)) || case_fail "$UDP_BAD replies corrupted or for another client ($(udp_result))"
	# Duplicates count as "reordered" in mmpt-udp's result: loss is what never came back.
	uniq=$(sed -n 's/.* unique \([0-9]*\).*/\1/p' <<<"$UDP_OUT")
	lost=$((UDP_SENT - ${uniq:-0}))
	((lost * 100 <= UDP_SENT * LOSS_MAX_PCT)) || case_fail "$lost of $UDP_SENT round trips lost, over $LOSS_MAX_PCT% ($(udp_result))"
	if [[ -z $gap ]] || ((gap > STALL_MAX_MS)); then
		case_fail "replies stalled for ${gap:-?} ms (over $STALL_MAX_MS)"
	fi
	# Misdelivery upstream: every peer is one of the clients 203.0.113.48:48000..
	peers=$(grep -c '^peer ' "$UP4_LOG")
	stray=$(grep '^peer ' "$UP4_LOG" | awk -v n="$CLIENTS" '$2 != "203.0.113.48" || $3 < 48000 || $3 >= 48000 + n' | head -2 | tr '\n' ' ')
	((peers == CLIENTS)) || case_fail "the upstream saw $peers peers, want $CLIENTS"
	[[ -z $stray ]] || case_fail "the upstream saw peers that are no client: $stray"
	chaos_verdict c0 c1
	udp_counters_fresh
	kf=$(($(udp_counter fast_fwd_dgrams) - $(awk '$1 == "fast_fwd_dgrams" {print $2}' "$T_TMP/counters.before")))
	kr=$(($(udp_counter fast_reply_dgrams) - $(awk '$1 == "fast_reply_dgrams" {print $2}' "$T_TMP/counters.before")))
	uf=$(($(udp_counter fwd_dgrams) - $(awk '$1 == "fwd_dgrams" {print $2}' "$T_TMP/counters.before")))
	ur=$(($(udp_counter sent_dgrams) - $(awk '$1 == "sent_dgrams" {print $2}' "$T_TMP/counters.before")))
	# After the pause the kernel moves nearly all: a duplicate or a loss may
	# send a flow back to userspace for a datagram, never for most of them.
	((kf * 10 >= (kf + uf) * 9 && kf > 0)) || case_fail "under chaos the kernel forwarded $kf and userspace $uf datagrams"
	((kr * 10 >= (kr + ur) * 9 && kr > 0)) || case_fail "under chaos the kernel sent $kr and userspace $ur replies"
	case_note "$(udp_result); link: $CHAOS_STR; under chaos kernel $kf forwarded, $kr replies, userspace $uf, $ur"
	mmp_stop
	up_stop
	case_end
}

tcp_case "1 TCP: $N streams of $SIZE both ways at $RATE/s, the link misbehaves once they are spliced: byte-exact, no stall over $STALL_MAX_MS ms" spliced 48000
if [[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]]; then
	tcp_case "1b TCP: the same with the link misbehaving from the first SYN: the tc hand-off over a bad link" start 49000
fi
udp_case
case_lifecycle
t_finish
