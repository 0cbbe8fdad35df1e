#!/usr/bin/env bash
# t59: an upstream on another host behind a tunnel (issue 25, docs/DESIGN.md §14):
# the backend ns is a "remote host" reached over VXLAN (vx-up, 10.99.2.0/24,
# 2001:db8:99:2::/64) carried by an underlay veth (172.31.0.0/30). Its default
# route is the underlay; only its routes to the clients' networks (and to the
# load balancer's, for its own connections) go back through the tunnel, as
# `mmproxy-bpf check` tells an operator to add. This kernel has no GRE, ipip
# or WireGuard (`ip link add type gre`: Unknown device type), so the tunnel is
# VXLAN; the program reads headers from the network header, so L3 tunnels
# would look the same to it (upstream-lib.sh lists every check).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/upstream-lib.sh"
if ! is_bpf; then
	echo "SKIP t59 upstream behind a tunnel: mmproxy-bpf only (go-mmproxy needs an upstream on loopback)"
	exit 0
fi
t_require ub_setup t59

UB_UP_IF=vx-up UB_BACK_IP4=10.99.2.2 UB_BACK_IP6=2001:db8:99:2::2

tunnel_topology() {
	ub_veth_pair veth-under eth0 || return 1
	ip -n "$TOPO_PROXY" addr add 172.31.0.1/30 dev veth-under || return 1
	ip -n "$TOPO_PROXY" link set veth-under up || return 1
	ip -n "$UB_BACK_NS" addr add 172.31.0.2/30 dev eth0 || return 1
	ip -n "$UB_BACK_NS" route add default via 172.31.0.1 || return 1
	ip -n "$TOPO_PROXY" link add vx-up type vxlan id 42 local 172.31.0.1 remote 172.31.0.2 dstport 4789 dev veth-under || return 1
	ip -n "$UB_BACK_NS" link add vx0 type vxlan id 42 local 172.31.0.2 remote 172.31.0.1 dstport 4789 dev eth0 || return 1
	ip -n "$TOPO_PROXY" addr add 10.99.2.1/24 dev vx-up || return 1
	ip -n "$TOPO_PROXY" addr add 2001:db8:99:2::1/64 dev vx-up nodad || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP4/24" dev vx0 || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP6/64" dev vx0 nodad || return 1
	ip -n "$TOPO_PROXY" link set vx-up up || return 1
	ip -n "$UB_BACK_NS" link set vx0 up || return 1
	# The backend's return routes: the clients' networks and the load balancer's, through the tunnel.
	ip -n "$UB_BACK_NS" route add 192.0.2.0/24 via 10.99.2.1 || return 1
	ip -n "$UB_BACK_NS" route add 198.51.100.0/24 via 10.99.2.1 || return 1
	ip -n "$UB_BACK_NS" -6 route add 2001:db8:77::/64 via 2001:db8:99:2::1 || return 1
	# check's probe client (2001:db8:ffff::254; 192.0.2.254 is in the clients' /24 already).
	ip -n "$UB_BACK_NS" -6 route add 2001:db8:ffff::/64 via 2001:db8:99:2::1 || return 1
	ip -n "$UB_BACK_NS" -6 route add 2001:db8:1::/64 via 2001:db8:99:2::1 || return 1
}
t_require tunnel_topology

# A second remote backend (10.98.3.2) two routers away, with a 1280-byte link between the routers: the first
# one answers the spoofed socket's full-size segments with "fragmentation needed" addressed to the client.
# Steered to the socket (docs/DESIGN.md §14, "ICMP errors"), the error lowers its path MTU and a 4 MiB transfer
# each way ends exact; routed, it would leave by the uplink and the transfer would stall (no MTU probing by
# default). Splice only: steering is the same under every engine, and a flow the tc engine took has no socket.
pmtu_topology() {
	local r1=$1 r2=$2 b=$3 ns
	for ns in "$r1" "$r2" "$b"; do
		ip netns add "$ns" || return 1
		cleanup_push "ip netns del '$ns'"
		ip -n "$ns" link set lo up || return 1
	done
	ip link add pm-p netns "$TOPO_PROXY" type veth peer name eth0 netns "$r1" || return 1
	ip link add r1-r2 netns "$r1" mtu 1280 type veth peer name r2-r1 netns "$r2" mtu 1280 || return 1
	ip link add r2-b netns "$r2" type veth peer name eth0 netns "$b" || return 1
	ip -n "$TOPO_PROXY" addr add 10.98.1.1/24 dev pm-p && ip -n "$r1" addr add 10.98.1.2/24 dev eth0 &&
		ip -n "$r1" addr add 10.98.2.1/24 dev r1-r2 && ip -n "$r2" addr add 10.98.2.2/24 dev r2-r1 &&
		ip -n "$r2" addr add 10.98.3.1/24 dev r2-b && ip -n "$b" addr add 10.98.3.2/24 dev eth0 || return 1
	ip -n "$TOPO_PROXY" link set pm-p up && ip -n "$r1" link set eth0 up && ip -n "$r1" link set r1-r2 up &&
		ip -n "$r2" link set r2-r1 up && ip -n "$r2" link set r2-b up && ip -n "$b" link set eth0 up || return 1
	ns_exec "$r1" sysctl -qw net.ipv4.ip_forward=1 && ns_exec "$r2" sysctl -qw net.ipv4.ip_forward=1 || return 1
	ip -n "$TOPO_PROXY" route add 10.98.3.0/24 via 10.98.1.2 && ip -n "$r1" route add 10.98.3.0/24 via 10.98.2.2 &&
		ip -n "$r1" route add default via 10.98.1.1 && ip -n "$r2" route add default via 10.98.2.1 &&
		ip -n "$b" route add default via 10.98.3.1
}

pmtu_case() {
	local r1="mmpt-$$-r1" r2="mmpt-$$-r2" b="mmpt-$$-b2" pin=/sys/fs/bpf/mmproxy-bpf-test-$$-pmtu
	local lport=$((PROXY_PORT + 60)) up_pid pid port done_line icmp size=$((4 << 20))
	[[ $MMP_ENGINE == splice ]] || return 0
	case_begin "a router with a smaller MTU on the way: its frag-needed reaches the spoofed socket, the transfer ends exact"
	if ! pmtu_topology "$r1" "$r2" "$b"; then
		case_fail "could not build the routers' namespaces"
		case_end
		return
	fi
	cleanup_push "rm -rf '$pin'"
	proc_start up_pid "$T_TMP/pmtu-up.log" "$b" "$MMP_TOOLS/mmpt-upstream" -m xfer --send "$size" -l "10.98.3.2:$UP_PORT"
	proc_start pid "$T_TMP/pmtu.log" "$TOPO_PROXY" "$MMP_BIN" run -l "$TOPO_PROXY_IP4:$lport" -4 "10.98.3.2:$UP_PORT" \
		--pin-dir "$pin" --engine splice -v 1
	if ! wait_grep "$T_TMP/pmtu-up.log" '^listening' 5 || ! wait_port "$TOPO_PROXY" "$lport" 10 "$pid"; then
		case_fail "the upstream or the instance did not start: $(grep -v libbpf "$T_TMP/pmtu.log" | tail -n 2 | tr '\n' ' ')"
	else
		next_port port
		client "$TOPO_CLIENT" -c "$TOPO_PROXY_IP4:$lport" --pp2 "$UB_CLIENT4:$port" "$TOPO_PROXY_IP4:443" \
			--send "$size" --timeout 15 || case_fail "transfer failed: $(client_result)"
		if wait_grep "$T_TMP/pmtu-up.log" '^done ' 5; then
			done_line=$(grep -m1 '^done ' "$T_TMP/pmtu-up.log")
			CLIENT_LOCAL_PORT=$port SIZE=$size check_xfer_exact "$done_line" "$UB_CLIENT4"
		else
			case_fail "the upstream never finished the transfer"
		fi
		icmp=$(ub_steer_counter icmp_marked "$pin")
		((icmp > 0)) || case_fail "steer_icmp_marked is ${icmp:-?}: no frag-needed was steered"
		case_note "steer_icmp_marked $icmp"
	fi
	proc_stop "$pid"
	proc_stop "$up_pid"
	case_end
}

# Without its return route the backend answers through its default route (the underlay): check says what to add.
ub_extra_checks() {
	local out
	pmtu_case
	case_begin "check without the backend's return route: FAIL, prints the route to add on the backend"
	ip -n "$UB_BACK_NS" route del 192.0.2.0/24 via 10.99.2.1
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" check -4 "$UB_BACK_IP4:$UP_PORT" -6 "[$UB_BACK_IP6]:$UP_PORT" 2>&1)
	ip -n "$UB_BACK_NS" route add 192.0.2.0/24 via 10.99.2.1
	grep -q "^FAIL IPv4 upstream $UB_BACK_IP4:$UP_PORT via vx-up: spoofed test connection failed at spoofed connect: Connection timed out" <<<"$out" ||
		case_fail "$(grep -A2 '^.... IPv4' <<<"$out" | tr '\n' ' ')"
	grep -q "ip -4 route add CLIENT_NET via 10.99.2.1" <<<"$out" || case_fail "no return route printed: $(tr '\n' ' ' <<<"$out")"
	grep -q "^       192.0.2.254/32) back through this host" <<<"$out" || case_fail "the probe's client is not named: $(tr '\n' ' ' <<<"$out")"
	grep -q "^ok   IPv6 upstream" <<<"$out" || case_fail "IPv6 should still pass"
	case_end
}
ub_suite
t_finish
