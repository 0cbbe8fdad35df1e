#!/usr/bin/env bash
# t58: an upstream in a pod behind a routed veth, no bridge (issue 25,
# docs/DESIGN.md §14), as Calico wires it: the pod has a /32 (and a /128), its
# default route via 169.254.1.1 (the host's end of the veth) and
# fe80::1; the proxy ns routes the pod's addresses to veth-pod. Steering hooks
# veth-pod's ingress, found by the route to the upstream (upstream-lib.sh lists
# every check). Then the pod is recreated behind a new veth (a new ifindex, the
# same addresses, as Calico does): steering and the UDP fast path follow the
# route within the once-a-second tick, with no restart, and new transfers and
# flows get through.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/upstream-lib.sh"
if ! is_bpf; then
	echo "SKIP t58 upstream behind a routed veth: mmproxy-bpf only (go-mmproxy needs an upstream on loopback)"
	exit 0
fi
t_require ub_setup t58

UB_UP_IF=veth-pod UB_BACK_IP4=10.99.1.2 UB_BACK_IP6=2001:db8:99:1::2

# routed_topology HOST_IF: the pod behind a veth whose host end is HOST_IF.
routed_topology() {
	local hif=$1
	ub_veth_pair "$hif" eth0 || return 1
	# Calico answers 169.254.1.1 by proxy ARP with a default route on the host; this ns has none, so
	# the host's end owns the address instead (the pod sees the same thing).
	ip -n "$TOPO_PROXY" addr add 169.254.1.1/32 dev "$hif" || return 1
	ip -n "$TOPO_PROXY" addr add fe80::1/64 dev "$hif" nodad || return 1
	ip -n "$TOPO_PROXY" link set "$hif" up || return 1
	ip -n "$TOPO_PROXY" route add "$UB_BACK_IP4/32" dev "$hif" || return 1
	ip -n "$TOPO_PROXY" -6 route add "$UB_BACK_IP6/128" dev "$hif" || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP4/32" dev eth0 || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP6/128" dev eth0 nodad || return 1
	ip -n "$UB_BACK_NS" route add 169.254.1.1 dev eth0 scope link || return 1
	ip -n "$UB_BACK_NS" route add default via 169.254.1.1 dev eth0 || return 1
	ip -n "$UB_BACK_NS" -6 route add default via fe80::1 dev eth0 || return 1
}
t_require routed_topology veth-pod

# After the suite's transfers, while the proxy runs: the pod is recreated behind a new veth.
ub_extra_checks() {
	local mark n want live_pid live_out=$T_TMP/live-udp.out fwd0 fwd1
	case_begin "the pod recreated behind a new veth: steering follows the route, no restart"
	# Two UDP flows that live across the move: 1,200 datagrams at 200/s, echoed.
	ns_exec "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-udp" send -c "$TOPO_PROXY_IP4:$PROXY_PORT" --format v2 \
		--client 192.0.2.99:41000 --clients 2 -n 600 --rate 200 --echo --timeout 12 >"$live_out" 2>&1 &
	live_pid=$!
	# Under tc: an instance started before the move must hook the new veth to hand a flow off over it.
	[[ $MMP_ENGINE == tc ]] && ub_tc_start 4
	sleep 2
	mark=$(log_mark "$MMP_LOG")
	ip -n "$TOPO_PROXY" link del veth-pod # its peer, the pod's eth0, and the routes go with it
	routed_topology veth-pod2 || case_fail "could not make the new veth"
	for fam in IPv4 IPv6; do
		wait_log_since "$MMP_LOG" "$mark" "the route to the $fam upstream .* moved from .* to veth-pod2" 5 >/dev/null ||
			case_fail "no '$fam upstream moved to veth-pod2' line within 5 s: $(log_since "$MMP_LOG" "$mark" | grep -m2 steer | tr '\n' ' ')"
	done
	want=1
	if [[ $MMP_ENGINE == tc ]]; then
		# ub_tc_start's instance steers the IPv4 upstream's replies too, and follows the same way.
		want=2
		wait_grep "$UBK_LOG" "the route to the IPv4 upstream .* moved from .* to veth-pod2" 5 ||
			case_fail "ub_tc_start's instance did not follow the move within 5 s"
	fi
	n=$(tc -n "$TOPO_PROXY" filter show dev veth-pod2 ingress 2>/dev/null | grep -c mmp_steer_in)
	((n == want)) || case_fail "$n steering filters on veth-pod2, want $want"
	case_end

	# Lost: what was sent between the link's removal and the tick (about a second at 200/s). Under tc,
	# without forgetting the old interface, every later forward went out of a vanished ifindex.
	case_begin "UDP flows alive across the move go on, through the new veth"
	wait "$live_pid"
	n=$(grep -o 'missing [0-9]*' "$live_out" | grep -o '[0-9]*')
	((${n:-1200} <= 400)) || case_fail "sender: $(grep -m1 -e '^result' -e 'mmpt-udp:' "$live_out")"
	case_note "$(grep -m1 -o 'sent .* max_gap_ms [0-9]*' "$live_out")"
	case_end
	UB_UDP_FLOWS=$((UB_UDP_FLOWS + 2)) # its two flows, for the suite's flows_steered

	UB_UP_IF=veth-pod2
	ub_wait_dad
	ub_xfer "after the move: IPv4 client, v2 header, sha256 both ways" 4 --pp2
	ub_xfer "after the move: IPv6 client, v1 header" 6 --pp1
	sleep 1.2 # mmp_udp_cnt is refreshed once a second
	fwd0=$(ub_udp_counter fast_fwd_dgrams)
	ub_udp "after the move: UDP, IPv4 clients, v2 header: 20 clients seen and answered" 4 v2
	if [[ $MMP_ENGINE == tc ]]; then
		case_begin "after the move: an instance started before it hooked the new veth and hands TCP off over it"
		wait_grep "$UBK_LOG" "hooked veth-pod2" 5 || case_fail "no 'hooked veth-pod2' line in its log within 5 s"
		ub_tc_check
		case_end
		case_begin "after the move: the new flows' datagrams move in the kernel, out of the new veth"
		fwd1=$(ub_udp_counter fast_fwd_dgrams)
		((fwd1 - fwd0 >= 100)) || case_fail "fast_fwd_dgrams went from $fwd0 to $fwd1: want 100 more"
		case_end
	fi
}
ub_suite
t_finish
