#!/usr/bin/env bash
# t33-udp-bad: every class of bad datagram is dropped and counted in its own
# counter, logged once at -v 1, and the proxy keeps serving:
#   every: truncated, signature cut short, version, command, UNIX and UNSPEC
#          families, STREAM transport, length past the end, short address
#          block, wrong CRC32C, client port 0, client 0.0.0.0, no header;
#   spp:   header cut short, no header;   first: no flow for the LB ip:port;
#   a load balancer outside the allowed subnets; a flood of 20,000 (rate-
#   limited log with a summary); an upstream that is down (ICMP errors
#   counted, then served again); the flow limit (a low open-files limit).
# The proxy's fds come back to their starting count once the flows idle out.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t33-udp-bad

if ! is_bpf; then
	case_begin "bad datagrams counted and logged"
	case_skip "the counters and log lines are mmproxy-bpf's"
	t_finish
fi

KW="dropped datagram"
GOOD_PORT=26000

# good_echo PROXY: a well-formed flow from a fresh client port still works.
good_echo() {
	local proxy=${1:-$PROXY4} fmt=${2:-v2}
	GOOD_PORT=$((GOOD_PORT + 1))
	udp_send "$TOPO_CLIENT" -c "$proxy" --format "$fmt" --client "203.0.113.60:$GOOD_PORT" -n 3 --echo --timeout 3 ||
		case_fail "a good flow right after failed: $(udp_result)"
}

# bad_kind KIND COUNTER [PROXY] [FORMAT]: one malformed datagram; one log line; still serving.
declare -A EXPECT
bad_kind() {
	local kind=$1 counter=$2 proxy=${3:-$PROXY4} fmt=${4:-v2} mark n line
	case_begin "$kind: dropped, counted as $counter, one log line"
	mark=$(log_mark "$MMP_LOG")
	ns_exec "$TOPO_CLIENT" "$UDP_TOOL" bad -c "$proxy" --kind "$kind" >/dev/null || case_fail "could not send"
	if line=$(wait_log_since "$MMP_LOG" "$mark" "$KW" 2); then
		sleep 0.1
		n=$(log_since "$MMP_LOG" "$mark" | grep -c "$KW")
		((n == 1)) || case_fail "$n log lines, expected 1"
		case_note "logged: ${line#mmproxy-bpf: }"
	else
		case_fail "no '$KW' line in the log"
	fi
	good_echo "$proxy" "$fmt"
	EXPECT[$counter]=$((${EXPECT[$counter]:-0} + 1))
	case_end
}

# check_counters: each expected drop counter has exactly its count.
check_counters() {
	local c v
	case_begin "the drop counters in mmp_udp_cnt match, class by class"
	udp_totals_fresh
	for c in "${!EXPECT[@]}"; do
		v=$(udp_counter "$c")
		[[ $v == "${EXPECT[$c]}" ]] || case_fail "$c is ${v:-unreadable}, expected ${EXPECT[$c]}"
	done
	case_note "${#EXPECT[@]} counters checked"
	case_end
	EXPECT=()
}

t_require udp_up_start

# ------------------------------------------------------------- every --
t_require udp_mmp_start --udp-header every -c 2 --listeners 1
sleep 0.2
fd_base=$(mmp_fds)
bad_kind truncated drop_truncated
bad_kind sig-prefix drop_truncated
bad_kind version drop_bad_header
bad_kind command drop_bad_header
bad_kind family-unix drop_wrong_family
bad_kind family-unspec drop_wrong_family
bad_kind stream drop_wrong_transport
bad_kind bad-length drop_bad_length
bad_kind short-block drop_bad_length
bad_kind crc drop_bad_header
bad_kind port0 drop_bad_client
bad_kind unspecified drop_bad_client
bad_kind no-header drop_no_header
check_counters

case_begin "a flood of 20,000 bad datagrams: all counted, the log rate-limited with a summary"
mark=$(log_mark "$MMP_LOG")
rx0=$(udp_counter rx_dgrams)
ns_exec "$TOPO_CLIENT" "$UDP_TOOL" bad -c "$PROXY4" --kind stream --count 20000 >/dev/null || case_fail "could not send"
sleep 1.5 # the summary comes once the second is over
udp_totals_fresh
v=$(($(udp_counter drop_wrong_transport) - 1)) # one came from the class case above
rx=$(($(udp_counter rx_dgrams) - rx0))
# Every datagram the proxy read is counted; the kernel may drop a few before that if the socket overflows.
((v == rx)) || case_fail "$rx datagrams received but $v counted as drop_wrong_transport"
((v >= 18000)) || case_fail "only $v of 20000 reached the proxy"
lines=$(log_since "$MMP_LOG" "$mark" | grep -c "$KW")
((lines <= 10)) || case_fail "$lines log lines for the flood, expected at most 5 a second"
log_since "$MMP_LOG" "$mark" | grep -q 'not logged' || case_fail "no summary of the suppressed lines"
case_note "$lines lines, then: $(log_since "$MMP_LOG" "$mark" | grep -m1 'not logged' | cut -c1-120)"
good_echo
case_end

case_begin "an upstream that is down: ICMP errors counted and logged, served again once it is back"
up_stop
mark=$(log_mark "$MMP_LOG")
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.61:27000 -n 3 --rate 100 --timeout 1
wait_log_since "$MMP_LOG" "$mark" "reported an error.*refused" 2 >/dev/null ||
	case_fail "no log line about the upstream refusing"
udp_totals_fresh
v=$(udp_counter upstream_errors)
((v >= 1)) || case_fail "upstream_errors is ${v:-unreadable}"
t_require udp_up_start
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.61:27000 -n 3 --echo --timeout 3 ||
	case_fail "the same client once the upstream is back: $(udp_result)"
case_end

case_begin "once idle (-c 2), the proxy is back to its starting fd count"
for ((i = 0; i < 60; i++)); do
	(($(mmp_fds) <= fd_base)) && break
	sleep 0.1
done
(($(mmp_fds) <= fd_base)) || case_fail "the proxy holds $(mmp_fds) fds, $fd_base at the start"
case_end
mmp_stop

# --------------------------------------------------------- spp, first --
t_require udp_mmp_start --udp-header spp -c 2 --listeners 1
bad_kind spp-short drop_truncated "$PROXY4" spp
bad_kind no-header drop_no_header "$PROXY6" spp
check_counters
mmp_stop

t_require udp_mmp_start --udp-header first -c 2 --listeners 1
bad_kind no-header drop_no_flow "$PROXY4" first
bad_kind sig-prefix drop_truncated "$PROXY4" first
check_counters
mmp_stop

# ------------------------------------------------------- allowed subnets --
printf '%s\n' "$TOPO_CLIENT_IP4/32" "$TOPO_CLIENT_IP6/128" >"$T_TMP/allowed.txt"
t_require udp_mmp_start --udp-header every -a "$T_TMP/allowed.txt"
case_begin "a load balancer outside the allowed subnets: dropped, counted, logged; allowed ones served"
mark=$(log_mark "$MMP_LOG")
up_mark=$(log_mark "$UP4_LOG")
# From the proxy's own namespace: the source is 198.51.100.1, not in the list.
udp_send "$TOPO_PROXY" -c "$PROXY4" --format v2 --client 203.0.113.62:28000 -n 2 --timeout 1
wait_log_since "$MMP_LOG" "$mark" "$KW.*not allowed" 2 >/dev/null || case_fail "no '$KW ... not allowed' line"
log_since "$UP4_LOG" "$up_mark" | grep -q '^peer 203\.0\.113\.62 ' && case_fail "the upstream got its datagram"
udp_totals_fresh
v=$(udp_counter drop_not_allowed)
[[ $v == 2 ]] || case_fail "drop_not_allowed is ${v:-unreadable}, expected 2"
good_echo "$PROXY4"
good_echo "$PROXY6"
case_end
mmp_stop

# ----------------------------------------------------------- flow limit --
# 160 open files: 160 - 64 - 4 (kept for the rest) = 92 flows at most.
UDP_WRAP=(prlimit --nofile=160:160 --)
t_require udp_mmp_start --udp-header every -c 2 --listeners 1
UDP_WRAP=()
case_begin "the flow limit (a low open-files limit): extra flows dropped and counted, served once flows close"
mark=$(log_mark "$MMP_LOG")
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.63:29000 --clients 120 -n 1 --echo --timeout 2
[[ $UDP_ECHOED == 92 ]] || case_fail "$UDP_ECHOED clients answered, expected 92: $(udp_result)"
wait_log_since "$MMP_LOG" "$mark" "$KW.*too many flows" 2 >/dev/null || case_fail "no '$KW ... too many flows' line"
udp_totals_fresh
v=$(udp_counter drop_flow_limit)
[[ $v == 28 ]] || case_fail "drop_flow_limit is ${v:-unreadable}, expected 28"
sleep 2.5
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.64:29000 --clients 50 -n 1 --echo --timeout 3 ||
	case_fail "after the idle close: $(udp_result)"
case_end
mmp_stop

# ------------------------------------------------------ per-LB quota --
t_require udp_mmp_start --udp-header every -c 2 --listeners 2 --udp-max-flows-per-lb 40
case_begin "--udp-max-flows-per-lb 40: 60 clients through one load-balancer address, 40 served, 20 dropped and counted; another address still served"
mark=$(log_mark "$MMP_LOG")
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.65:29000 --clients 60 -n 1 --echo --timeout 2
[[ $UDP_ECHOED == 40 ]] || case_fail "$UDP_ECHOED clients answered, expected 40: $(udp_result)"
wait_log_since "$MMP_LOG" "$mark" "$KW.*--udp-max-flows-per-lb" 2 >/dev/null || case_fail "no '$KW ... --udp-max-flows-per-lb' line"
udp_totals_fresh
v=$(udp_counter drop_lb_quota)
[[ $v == 20 ]] || case_fail "drop_lb_quota is ${v:-unreadable}, expected 20"
# Another load-balancer address (the proxy namespace's loopback) has its own 40.
udp_send "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --format v2 --client 203.0.113.66:29000 --clients 30 -n 1 --echo --timeout 3 ||
	case_fail "another load-balancer address was refused: $(udp_result)"
# The places come back when the flows idle out (-c 2).
sleep 2.5
udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client 203.0.113.67:29000 --clients 40 -n 1 --echo --timeout 3 ||
	case_fail "after the idle close, the first address did not get its 40 back: $(udp_result)"
case_note "40 of 60 served, drop_lb_quota $v; another address served; the places came back"
case_end
mmp_stop

case_lifecycle
t_finish
