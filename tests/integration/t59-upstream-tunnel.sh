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

# Without its return route the backend answers through its default route (the underlay): check says what to add.
ub_extra_checks() {
	local out
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
