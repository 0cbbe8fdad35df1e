#!/usr/bin/env bash
# t16: PMTU discovery across a spliced flow (issue 5, "ICMP errors, and
# fragmentation-needed/PMTU for spliced flows"). The load balancer is behind
# a router whose next hop toward it carries 1280 bytes, while every interface
# says 1500: the MSS is negotiated for 1500, and the router answers the
# upstream's full-size segments (sent as P->L after the hand-off) with ICMP
# "fragmentation needed" / ICMPv6 "packet too big" addressed to the proxy.
# The proxy's conn1 socket is gone by then; only the tc engine's translation
# of the error into the upstream's own (bpf/tc_icmp.h) lets the upstream
# lower its MSS. Without it the transfer black-holes and the client times
# out.
#
#   PREFIX-client          PREFIX-lb (HAProxy)          PREFIX-rt (forwarding)          PREFIX-proxy
#   veth-cl .66/26 ------- veth-lc 198.51.100.65/26
#   2001:db8:4::2/64       2001:db8:4::1/64
#                          veth-lr 192.0.2.2/24 ------- veth-rl 192.0.2.1/24
#                          2001:db8:5::2/64             2001:db8:5::1/64
#                                                       route to the LB: mtu lock 1280
#                                                       veth-rp 203.0.113.2/24 -------- veth-pr 203.0.113.1/24
#                                                       2001:db8:3::2/64                2001:db8:3::1/64
#                                                                                       mmproxy-bpf --iface veth-pr
#                                                                                       mmpt-upstream 127.0.0.1 / ::1
#
# Per family: the client sends UP_SIZE bytes and half-closes (the flow is
# handed off during that upload, while the proxy only sends ACKs toward the
# load balancer); then the upstream sends DOWN_SIZE bytes (--after-eof),
# all through the spliced path. Checked: the flow was spliced in the kernel,
# sha256 both ways, the whole exchange within DOWN_LIMIT_S, the router sent
# errors (the path really is narrower), and icmp_errors_translated rose.
# PMTU discovery is on and MTU probing off in the proxy's namespace, so
# nothing but the translated error can rescue the flow.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t16 "PMTU across a spliced flow"
MMP_VERBOSITY=2
t_setup t16

UP_SIZE=$((8 << 20))
DOWN_SIZE=$((16 << 20))
DOWN_LIMIT_S=15       # a working path needs about a second; a black hole never ends
CLIENT_TIMEOUT_S=25
PATH_MTU=1280
LB_NS="mmpt-$$-lb"
RT_NS="mmpt-$$-rt"
LB_IP4=198.51.100.65 CL_IP4=198.51.100.66
LB_IP6=2001:db8:4::1 CL_IP6=2001:db8:4::2
LBR_IP4=192.0.2.2 RL_IP4=192.0.2.1
LBR_IP6=2001:db8:5::2 RL_IP6=2001:db8:5::1
RP_IP4=203.0.113.2 P_IP4=203.0.113.1
RP_IP6=2001:db8:3::2 P_IP6=2001:db8:3::1
HAP_PORT=8001

# veth_pair NS_A DEV_A ADDR4_A ADDR6_A NS_B DEV_B ADDR4_B ADDR6_B (prefix lengths included)
veth_pair() {
	ip -n "$1" link add "$2" type veth peer name "$6" netns "$5" || return 1
	ip -n "$1" addr add "$3" dev "$2" || return 1
	ip -n "$1" addr add "$4" dev "$2" nodad || return 1
	ip -n "$5" addr add "$7" dev "$6" || return 1
	ip -n "$5" addr add "$8" dev "$6" nodad || return 1
	ip -n "$1" link set "$2" up && ip -n "$5" link set "$6" up
}

pmtu_topology() {
	cleanup_push "ip netns del '$LB_NS'"
	cleanup_push "ip netns del '$RT_NS'"
	ip netns add "$LB_NS" || return 1
	ip netns add "$RT_NS" || return 1
	ip -n "$LB_NS" link set lo up || return 1
	ip -n "$RT_NS" link set lo up || return 1
	veth_pair "$TOPO_CLIENT" veth-cl "$CL_IP4/26" "$CL_IP6/64" "$LB_NS" veth-lc "$LB_IP4/26" "$LB_IP6/64" || return 1
	veth_pair "$LB_NS" veth-lr "$LBR_IP4/24" "$LBR_IP6/64" "$RT_NS" veth-rl "$RL_IP4/24" "$RL_IP6/64" || return 1
	veth_pair "$RT_NS" veth-rp "$RP_IP4/24" "$RP_IP6/64" "$TOPO_PROXY" veth-pr "$P_IP4/24" "$P_IP6/64" || return 1
	ns_exec "$RT_NS" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 || return 1
	# The narrow hop. "lock": IPv6 forwarding honours a route's MTU only when locked.
	ip -n "$RT_NS" route add "$LBR_IP4/32" dev veth-rl mtu lock "$PATH_MTU" || return 1
	ip -n "$RT_NS" -6 route add "$LBR_IP6/128" dev veth-rl mtu lock "$PATH_MTU" || return 1
	ip -n "$LB_NS" route add "$P_IP4/32" via "$RL_IP4" || return 1
	ip -n "$LB_NS" -6 route add "$P_IP6/128" via "$RL_IP6" || return 1
	ip -n "$TOPO_PROXY" route add "$LBR_IP4/32" via "$RP_IP4" || return 1
	ip -n "$TOPO_PROXY" -6 route add "$LBR_IP6/128" via "$RP_IP6" || return 1
	# PMTU discovery on, black-hole MTU probing off: only a delivered error lowers the MSS.
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.ip_no_pmtu_disc=0 net.ipv4.tcp_mtu_probing=0
}

# router_errors FAMILY: the too-big errors the router has sent so far.
router_errors() {
	local key=IcmpOutDestUnreachs
	[[ $1 == 6 ]] && key=Icmp6OutPktTooBigs
	ns_exec "$RT_NS" nstat -asz 2>/dev/null | awk -v k="$key" '$1 == k {print $2; exit}'
}

t_require pmtu_topology
t_require hap_lb_start

# pmtu_case NAME FAMILY(4|6) LO_SYSCTLS(1|0) [OLD_COUNTERS]
# LO_SYSCTLS: lo's route_localnet and accept_local as setup-routing sets them
# (1: IPv4 errors go to the upstream's address through lo) or as the bare ip
# rules leave them (0: a remote IPv4 flow is not eligible and stays on splice;
# for IPv6 they do not matter).
# OLD_COUNTERS=1: the pin directory already holds an mmp_tc_counters from a
# version without this counter (6 entries), as after an upgrade; the proxy
# must replace it, not adopt it, or the new counter would not count.
pmtu_case() {
	local name=$1 fam=$2 lo=$3 old_counters=${4:-0} pindir listen target caddr uplog uplog_var mark done_line t0 ms ic0 ic1 re0 re1 crc
	case_begin "$name"
	if [[ $fam == 4 ]]; then
		listen="$P_IP4:$PROXY_PORT" target="$LB_IP4:$HAP_PORT" caddr=$CL_IP4 uplog_var=UP4_LOG
	else
		listen="[$P_IP6]:$PROXY_PORT" target="[$LB_IP6]:$HAP_PORT" caddr=$CL_IP6 uplog_var=UP6_LOG
	fi
	# Read by the proxy at start. A PMTU learned by an earlier case is forgotten.
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet="$lo" net.ipv4.conf.lo.accept_local="$lo"
	ip -n "$TOPO_PROXY" route flush cache
	ip -n "$TOPO_PROXY" -6 route flush cache
	if ! up_start -m xfer --send "$DOWN_SIZE" --after-eof; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	uplog=${!uplog_var}
	pindir=$(tc_pindir "$MMP_STARTS")
	if ((old_counters)); then
		cleanup_push "rm -rf '$pindir'"
		mkdir -p "$pindir" && bpftool map create "$pindir/mmp_tc_counters" type percpu_array key 4 value 8 \
			entries 6 name mmp_tc_counters || case_fail "could not pin an old-layout counters map"
	fi
	if ! tc_mmp_start "$pindir" "$listen" --iface veth-pr; then
		case_fail "$MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	ic0=$(tc_counter "$MMP_PINDIR" icmp_errors_translated)
	re0=$(router_errors "$fam")
	t0=$(date +%s%N)
	client "$TOPO_CLIENT" -c "$target" --send "$UP_SIZE" --timeout "$CLIENT_TIMEOUT_S"
	crc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	ic1=$(tc_counter "$MMP_PINDIR" icmp_errors_translated)
	re1=$(router_errors "$fam")
	if ((crc != 0)); then
		case_fail "client: $(client_result) after $ms ms (the upstream's segments black-holed?)"
		# What the proxy's namespace made of the errors (MMP_KEEP_TMP=1 keeps it).
		{
			"$MMP_BIN" stats --pin-dir "$MMP_PINDIR"
			echo "--- ss -tinoe"
			ns_exec "$TOPO_PROXY" ss -tinoe
			echo "--- the upstream's route to the client"
			ip -n "$TOPO_PROXY" route get "$caddr" from "$([[ $fam == 4 ]] && echo 127.0.0.1 || echo ::1)"
			echo "--- nstat (non-zero)"
			ns_exec "$TOPO_PROXY" nstat -asz 2>/dev/null | awk '$2 != 0'
		} >"$T_TMP/diag-$MMP_STARTS.txt" 2>&1
		case_fail "sockets, counters and route saved in $T_TMP/diag-$MMP_STARTS.txt (MMP_KEEP_TMP=1 keeps it)"
	fi
	if ! done_line=$(wait_log_since "$uplog" 0 '^done ' 10); then
		case_fail "upstream never finished its side ($(grep '^peer' "$uplog" | tr '\n' ' '))"
	else
		local a p un ush urn ursh cs csh crn crsh
		read -r _ a p _ un ush _ urn ursh <<<"$done_line"
		read -r _ _ cs csh _ crn crsh _ <<<"$(grep '^xfer ' <<<"$CLIENT_OUT")"
		[[ $a == "$caddr" && $p == "$CLIENT_LOCAL_PORT" ]] ||
			case_fail "upstream saw $a:$p, the client is $CLIENT_LOCAL_ADDR:$CLIENT_LOCAL_PORT"
		[[ $cs == "$UP_SIZE" && $un == "$DOWN_SIZE" ]] ||
			case_fail "sizes sent: client $cs (want $UP_SIZE), upstream $un (want $DOWN_SIZE)"
		[[ $urn == "$cs" && $ursh == "$csh" ]] ||
			case_fail "client->upstream: sent $cs bytes ${csh:0:12}, upstream got $urn ${ursh:0:12}"
		[[ $crn == "$un" && $crsh == "$ush" ]] ||
			case_fail "upstream->client: sent $un bytes ${ush:0:12}, client got ${crn:-0} ${crsh:0:12}"
		grep -q ' error ' <<<"$done_line" && case_fail "upstream: error ${done_line#* error }"
	fi
	((ms <= DOWN_LIMIT_S * 1000)) || case_fail "took $ms ms, more than ${DOWN_LIMIT_S} s"
	((${re1:-0} > ${re0:-0})) ||
		case_fail "the router sent no too-big error: the path was not narrower (test topology broken)"
	if [[ $fam == 4 && $lo == 0 ]]; then
		# lo's sysctls were off when the proxy started: run turns them on
		# itself (docs/DESIGN.md §6a), so the remote IPv4 flow still reaches
		# the kernel and the router's errors are translated.
		grep -q 'set net.ipv4.conf.lo.route_localnet=1' "$MMP_LOG" ||
			case_fail "run did not turn lo's route_localnet/accept_local on (no log line)"
		[[ $(ns_exec "$TOPO_PROXY" sysctl -n net.ipv4.conf.lo.route_localnet) == 1 ]] ||
			case_fail "lo's route_localnet is still off"
	fi
	tc_wait_spliced "$MMP_LOG" "$mark" "$(hostport "$caddr" "$CLIENT_LOCAL_PORT")" 2 ||
		case_fail "not spliced in the kernel: $TC_OUTCOME (the test needs the hand-off before the download)"
	((${ic1:-0} > ${ic0:-0})) || case_fail "icmp_errors_translated did not rise (${ic0:-?} -> ${ic1:-?})"
	case_note "$((UP_SIZE >> 20)) MiB up, $((DOWN_SIZE >> 20)) MiB down through a ${PATH_MTU}-byte hop in $ms ms; router errors $((${re1:-0} - ${re0:-0})), translated $((${ic1:-0} - ${ic0:-0})); ${TC_OUTCOME/client * spliced/spliced}"
	mmp_stop
	up_stop
	case_end
}

pmtu_case "1 IPv4 frag-needed from a router after the hand-off, lo sysctls on (to the upstream via lo): the upstream lowers its MSS" 4 1
pmtu_case "2 ICMPv6 packet too big from a router after the hand-off: the upstream lowers its MSS" 6 0
pmtu_case "3 IPv4, lo sysctls off at start: run turns them on, the flow reaches the kernel, errors are translated" 4 0
pmtu_case "4 after an upgrade (an older counters map pinned): the error is counted" 4 1 1

case_lifecycle
t_finish
