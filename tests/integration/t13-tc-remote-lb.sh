#!/usr/bin/env bash
# t13: the tc engine with the load balancer on another host (issue 5,
# "Attachment"): its traffic arrives on a veth, so the engine redirects
# client->upstream packets from the veth's TC ingress into lo, and
# upstream->client packets from lo egress out of the veth.
#
#   PREFIX-client          PREFIX-lb (HAProxy)              PREFIX-proxy
#   veth-cl 198.51.100.66/26 -- veth-lc 198.51.100.65/26
#           2001:db8:4::2/64            2001:db8:4::1/64
#                              veth-lp 203.0.113.2/24  --  veth-pl 203.0.113.1/24
#                                      2001:db8:3::2/64            2001:db8:3::1/64
#                                                          mmproxy-bpf -l 203.0.113.1:7000
#                                                            (or [2001:db8:3::1]:7000)
#                                                            --iface veth-pl
#                                                          mmpt-upstream 127.0.0.1:9000 / [::1]:9000
# (The client namespace's own veth-c to the proxy, from lib.sh's topology, is
# not used; 198.51.100.64/26 is more specific than its /24, so the client
# reaches HAProxy through veth-cl.)
#
# HAProxy (send-proxy-v2) runs in the lb namespace; mmpt-client in the client
# namespace sends SIZE bytes through it and mmpt-upstream -m xfer answers with
# SIZE bytes, each side half-closing when done, as in t03; cases 4 and 5 with
# the checksums of the engine's segments computed in software and verified.
# Checked per case:
# the upstream saw the client's own address and port, sha256 both ways, and
# the flow was spliced in the kernel (-v 2 log line for that client) with
# packets translated (mmp_tc_counters).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t13 "remote load balancer"
MMP_VERBOSITY=2
t_setup t13

SIZE=$((16 << 20))
LB_NS="mmpt-$$-lb"
LB_IP4=198.51.100.65 CL_IP4=198.51.100.66
LB_IP6=2001:db8:4::1 CL_IP6=2001:db8:4::2
LBP_IP4=203.0.113.2 P_IP4=203.0.113.1
LBP_IP6=2001:db8:3::2 P_IP6=2001:db8:3::1
HAP_PORT=8001

lb_topology() {
	cleanup_push "ip netns del '$LB_NS'"
	ip netns add "$LB_NS" || return 1
	ip -n "$LB_NS" link set lo up || return 1
	# client <-> lb
	ip -n "$TOPO_CLIENT" link add veth-cl type veth peer name veth-lc netns "$LB_NS" || return 1
	ip -n "$TOPO_CLIENT" addr add "$CL_IP4/26" dev veth-cl || return 1
	ip -n "$TOPO_CLIENT" addr add "$CL_IP6/64" dev veth-cl nodad || return 1
	ip -n "$LB_NS" addr add "$LB_IP4/26" dev veth-lc || return 1
	ip -n "$LB_NS" addr add "$LB_IP6/64" dev veth-lc nodad || return 1
	# lb <-> proxy
	ip -n "$LB_NS" link add veth-lp type veth peer name veth-pl netns "$TOPO_PROXY" || return 1
	ip -n "$LB_NS" addr add "$LBP_IP4/24" dev veth-lp || return 1
	ip -n "$LB_NS" addr add "$LBP_IP6/64" dev veth-lp nodad || return 1
	ip -n "$TOPO_PROXY" addr add "$P_IP4/24" dev veth-pl || return 1
	ip -n "$TOPO_PROXY" addr add "$P_IP6/64" dev veth-pl nodad || return 1
	local l
	for l in "$TOPO_CLIENT veth-cl" "$LB_NS veth-lc" "$LB_NS veth-lp" "$TOPO_PROXY veth-pl"; do
		# shellcheck disable=SC2086
		ip -n ${l% *} link set ${l#* } up || return 1
	done
	# As `mmproxy-bpf setup-routing` leaves a host: without these the engine
	# keeps remote IPv4 flows on splice (t11 case 5 tests that).
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1 || return 1
}

t_require lb_topology
t_require hap_lb_start

# remote_case NAME FAMILY(4|6) UP_ARGS CLIENT_ARGS
remote_case() {
	local name=$1 fam=$2 up_args=$3 cl_args=$4 listen target caddr uplog mark done_line t0 ms tr0 tr1
	case_begin "$name"
	if [[ $fam == 4 ]]; then
		listen="$P_IP4:$PROXY_PORT" target="$LB_IP4:$HAP_PORT" caddr=$CL_IP4
	else
		listen="[$P_IP6]:$PROXY_PORT" target="[$LB_IP6]:$HAP_PORT" caddr=$CL_IP6
	fi
	# shellcheck disable=SC2086
	if ! up_start -m xfer $up_args; then
		case_fail "upstream did not start"
		case_end
		return
	fi
	if [[ $fam == 4 ]]; then uplog=$UP4_LOG; else uplog=$UP6_LOG; fi
	if ! tc_mmp_start "$(tc_pindir "$MMP_STARTS")" "$listen" --iface veth-pl; then
		case_fail "$MMP_START_ERR"
		up_stop
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	tr0=$(tc_counter "$MMP_PINDIR" packets_translated)
	t0=$(date +%s%N)
	# shellcheck disable=SC2086
	# The client runs in the background: if the flow's byte counters stop
	# for 2 s while it runs, save what each namespace's sockets say.
	local cout="$T_TMP/client-$MMP_STARTS.out" cpid last="" same=0 now diag=""
	proc_start cpid "$cout" "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-client" -c "$target" $cl_args --timeout 20
	while proc_alive "$cpid"; do
		sleep 0.5
		now=$("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>/dev/null | grep -E '^ *(up|down):' | tr -s ' \n' ' ')
		if [[ -n $now && $now == "$last" ]]; then
			same=$((same + 1))
			if ((same == 4)) && [[ -z $diag ]]; then
				diag="$T_TMP/stall-$MMP_STARTS.txt"
				{
					echo "--- $((($(date +%s%N) - t0) / 1000000)) ms after the client started; mmproxy-bpf stats"
					"$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>&1 | sed -n '/^tc counters/,$p'
					echo "--- bpftool map dump mmp_tc_flows"
					bpftool map dump pinned "$MMP_PINDIR/mmp_tc_flows" 2>&1
					for ns in "$TOPO_CLIENT" "$LB_NS" "$TOPO_PROXY"; do
						echo "--- ss -tinoe in $ns"
						ns_exec "$ns" ss -tinoe "( sport = :$HAP_PORT or dport = :$HAP_PORT or sport = :$PROXY_PORT or dport = :$PROXY_PORT or sport = :$UP_PORT or dport = :$UP_PORT )"
						echo "--- nstat in $ns (non-zero)"
						ns_exec "$ns" nstat -asz 2>/dev/null | awk '!/^#/ && $2 != 0'
						echo "--- ip -s -s link in $ns"
						ip -n "$ns" -s -s link show
					done
					echo "--- /proc/net/softnet_stat (hex: processed dropped squeezed ...)"
					cat /proc/net/softnet_stat
				} >"$diag" 2>&1
			fi
		else
			same=0
		fi
		last=$now
	done
	wait "$cpid" 2>/dev/null
	local crc=$?
	CLIENT_OUT=$(cat "$cout")
	# shellcheck disable=SC2034 # CLIENT_LOCAL_ADDR: read by check_xfer_exact (lib.sh)
	read -r _ CLIENT_LOCAL_ADDR CLIENT_LOCAL_PORT <<<"$(grep -m1 '^local ' <<<"$CLIENT_OUT")"
	if ((crc != 0)); then
		case_fail "client: $(client_result)"
		# Is the flow still in the maps (and in which state)?
		case_fail "the proxy's maps after the failure: $("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>&1 | sed -n '/^tc flows/,$p' | tr -s ' \n' ' ' | cut -c1-400)"
	fi
	[[ -n $diag ]] && case_fail "the flow's counters stood still for 2 s: sockets and counters saved in $diag (MMP_KEEP_TMP=1 keeps it)"
	ms=$((($(date +%s%N) - t0) / 1000000))
	tr1=$(tc_counter "$MMP_PINDIR" packets_translated)
	if ! done_line=$(wait_log_since "$uplog" 0 '^done ' 10); then
		case_fail "upstream never finished its side ($(grep '^peer' "$uplog" | tr '\n' ' '))"
	else
		check_xfer_exact "$done_line" "$caddr"
	fi
	if tc_wait_spliced "$MMP_LOG" "$mark" "$(hostport "$caddr" "$CLIENT_LOCAL_PORT")" 2; then
		((tr1 - tr0 > 0)) || case_fail "spliced, but no packet was translated"
	else
		case_fail "not spliced in the kernel: $TC_OUTCOME"
	fi
	case_note "$((2 * SIZE >> 20)) MiB in $ms ms, upstream saw $(hostport "$caddr" "$CLIENT_LOCAL_PORT"), $((tr1 - tr0)) packets translated; ${TC_OUTCOME/client * spliced/spliced}"
	mmp_stop
	up_stop
	case_end
}

remote_case "1 IPv4, both directions at once, each half-closing when done" 4 "--send $SIZE" "--send $SIZE"
remote_case "2 IPv4, the client half-closes first, then the upstream sends" 4 "--send $SIZE --after-eof" "--send $SIZE"
remote_case "3 IPv6, both directions at once, each half-closing when done" 6 "--send $SIZE" "--send $SIZE"

# With veth-pl's tx checksumming off, the kernel computes the checksum of
# every segment the engine sends out to the LB from the pseudo header sum the
# program left in it (the upstream's segments on lo are CHECKSUM_PARTIAL), and
# HAProxy's kernel verifies it: a wrong sum drops every segment and stalls
# the transfer. With offload on, nothing on this path would check it.
# csum_case NAME FAMILY
csum_case() {
	if ! command -v ethtool >/dev/null; then
		case_begin "$1"
		case_fail "ethtool is missing (install it: scripts/deps.sh)"
		case_end
		return
	fi
	if ! ns_exec "$TOPO_PROXY" ethtool -K veth-pl tx off >/dev/null 2>&1; then
		case_begin "$1"
		case_fail "ethtool -K veth-pl tx off failed"
		case_end
		return
	fi
	remote_case "$1" "$2" "--send $SIZE" "--send $SIZE"
	ns_exec "$TOPO_PROXY" ethtool -K veth-pl tx on >/dev/null 2>&1
}
csum_case "4 IPv4, checksums computed from the program's pseudo header sums (veth tx checksumming off)" 4
csum_case "5 IPv6, the same" 6

case_lifecycle
t_finish
