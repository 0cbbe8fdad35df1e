#!/usr/bin/env bash
# t58: an upstream in a pod behind a routed veth, no bridge (issue 25,
# docs/DESIGN.md §14), as Calico wires it: the pod has a /32 (and a /128), its
# default route via 169.254.1.1 (the host's end of the veth) and
# fe80::1; the proxy ns routes the pod's addresses to veth-pod. Steering hooks
# veth-pod's ingress, found by the route to the upstream (upstream-lib.sh lists
# every check).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/upstream-lib.sh"
if ! is_bpf; then
	echo "SKIP t58 upstream behind a routed veth: mmproxy-bpf only (go-mmproxy needs an upstream on loopback)"
	exit 0
fi
t_require ub_setup t58

UB_UP_IF=veth-pod UB_BACK_IP4=10.99.1.2 UB_BACK_IP6=2001:db8:99:1::2

routed_topology() {
	ub_veth_pair veth-pod eth0 || return 1
	# Calico answers 169.254.1.1 by proxy ARP with a default route on the host; this ns has none, so
	# the host's end owns the address instead (the pod sees the same thing).
	ip -n "$TOPO_PROXY" addr add 169.254.1.1/32 dev veth-pod || return 1
	ip -n "$TOPO_PROXY" addr add fe80::1/64 dev veth-pod nodad || return 1
	ip -n "$TOPO_PROXY" link set veth-pod up || return 1
	ip -n "$TOPO_PROXY" route add "$UB_BACK_IP4/32" dev veth-pod || return 1
	ip -n "$TOPO_PROXY" -6 route add "$UB_BACK_IP6/128" dev veth-pod || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP4/32" dev eth0 || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP6/128" dev eth0 nodad || return 1
	ip -n "$UB_BACK_NS" route add 169.254.1.1 dev eth0 scope link || return 1
	ip -n "$UB_BACK_NS" route add default via 169.254.1.1 dev eth0 || return 1
	ip -n "$UB_BACK_NS" -6 route add default via fe80::1 dev eth0 || return 1
}
t_require routed_topology
ub_suite
t_finish
