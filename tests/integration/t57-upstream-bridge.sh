#!/usr/bin/env bash
# t57: an upstream in a "container" on a Linux bridge (issue 25, docs/DESIGN.md §14):
# the backend ns hangs off bridge br-up in the proxy ns by a veth, with a private
# address and its default route through the bridge, as Docker's docker0 or a
# CNI bridge has it. Replies of the proxy's spoofed connections are steered at
# br-up's tc ingress by tuple; the container's own outbound connections are
# routed on untouched (upstream-lib.sh lists every check).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/upstream-lib.sh"
if ! is_bpf; then
	echo "SKIP t57 upstream on a bridge: mmproxy-bpf only (go-mmproxy needs an upstream on loopback)"
	exit 0
fi
t_require ub_setup t57

UB_UP_IF=br-up UB_BACK_IP4=10.99.0.2 UB_BACK_IP6=2001:db8:99::2

bridge_topology() {
	ip -n "$TOPO_PROXY" link add br-up type bridge || return 1
	ip -n "$TOPO_PROXY" addr add 10.99.0.1/24 dev br-up || return 1
	ip -n "$TOPO_PROXY" addr add 2001:db8:99::1/64 dev br-up nodad || return 1
	ub_veth_pair veth-b1 eth0 || return 1
	ip -n "$TOPO_PROXY" link set veth-b1 master br-up up || return 1
	ip -n "$TOPO_PROXY" link set br-up up || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP4/24" dev eth0 || return 1
	ip -n "$UB_BACK_NS" addr add "$UB_BACK_IP6/64" dev eth0 nodad || return 1
	ip -n "$UB_BACK_NS" route add default via 10.99.0.1 || return 1
	ip -n "$UB_BACK_NS" -6 route add default via 2001:db8:99::1 || return 1
}
t_require bridge_topology
ub_suite
t_finish
