#!/usr/bin/env bash
# make demo: one request, end to end, in two network namespaces.
#
#   client ns (198.51.100.2) --TCP--> HAProxy 198.51.100.1:8443 (proxy ns)
#       --PROXY v2 header + data--> mmproxy-bpf 127.0.0.1:8444
#       --connects FROM 198.51.100.2:PORT (IP_TRANSPARENT)--> upstream 127.0.0.1:9000
#
# make demo-container (scripts/demo.sh --container): the same, with the
# upstream in a third namespace, a "container" on bridge br-demo in the proxy
# ns (10.99.0.2:9000, its default route through the bridge, as on docker0 or
# cni0). `mmproxy-bpf setup-routing` adds the fwmark rule that delivers the
# replies the proxy steers by tuple (docs/DESIGN.md §14); no Docker needed.
#
# The upstream prints the peer address of its connection: it must be the
# client's real address and port, not the proxy's 127.0.0.1. Everything
# (namespaces, processes, temp files, BPF pins) is removed at exit, also on
# failure. Exit status 0 only when the upstream saw the client.
# Needs root. MMP_BIN overrides the binary (default build/mmproxy-bpf).
set -u
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/lib/netns.sh
source "$REPO_ROOT/tests/lib/netns.sh"

MMP_BIN=${MMP_BIN:-$REPO_ROOT/build/mmproxy-bpf}
LB_PORT=8443 MMP_PORT=8444 UP_PORT=9000
case ${1:-} in
"") CONTAINER=0 UP_IP=127.0.0.1 ;;
--container) CONTAINER=1 UP_IP=10.99.0.2 ;;
*)
	echo "usage: scripts/demo.sh [--container]"
	exit 2
	;;
esac

fail() {
	echo
	echo "DEMO FAILED: $*"
	for f in "$TMP"/*.log; do
		[[ -s $f ]] || continue
		echo "--- $(basename "$f")"
		tail -n 20 "$f"
	done
	exit 1
}

[[ $(id -u) -eq 0 ]] || { echo "demo: run as root (make demo re-runs through sudo)"; exit 1; }
[[ -x $MMP_BIN ]] || { echo "demo: $MMP_BIN not found: run make first"; exit 1; }

cleanup_install_trap
tmpdir_create TMP mmpd || exit 1
PIN_DIR=/sys/fs/bpf/mmproxy-bpf-demo-$$
cleanup_push "rm -rf '$PIN_DIR'"
trap 'echo "cleaning up (namespaces, processes, pins, $TMP)"; cleanup_run' EXIT

echo "== mmproxy-bpf demo: does the upstream see the client's real address? =="

echo "[1/5] namespaces mmpd-$$-client ($TOPO_CLIENT_IP4) and mmpd-$$-proxy ($TOPO_PROXY_IP4), joined by a veth"
topo_create "mmpd-$$" || fail "could not create the namespaces"
UP_NS=$TOPO_PROXY
if ((CONTAINER)); then
	# The "container": its own namespace, a veth whose other end is a port of br-demo, as Docker
	# and CNI bridges have it. Deleting the namespaces removes the bridge and the veth.
	UP_NS="mmpd-$$-ctr"
	echo "      + namespace $UP_NS ($UP_IP/24, default route via 10.99.0.1) on bridge br-demo (10.99.0.1/24) in the proxy ns"
	cleanup_push "ip netns del '$UP_NS'"
	{
		ip netns add "$UP_NS" && ip -n "$UP_NS" link set lo up &&
			ip -n "$TOPO_PROXY" link add br-demo type bridge &&
			ip -n "$TOPO_PROXY" addr add 10.99.0.1/24 dev br-demo &&
			ip -n "$TOPO_PROXY" link add veth-ctr type veth peer name eth0 netns "$UP_NS" &&
			ip -n "$TOPO_PROXY" link set veth-ctr master br-demo up &&
			ip -n "$TOPO_PROXY" link set br-demo up &&
			ip -n "$UP_NS" addr add "$UP_IP/24" dev eth0 &&
			ip -n "$UP_NS" link set eth0 up &&
			ip -n "$UP_NS" route add default via 10.99.0.1
	} || fail "could not create the container namespace and the bridge"
	echo "      + in the proxy ns: mmproxy-bpf setup-routing (the loopback rules, and the fwmark rule for steered replies)"
	cleanup_push "ns_exec '$TOPO_PROXY' '$MMP_BIN' cleanup-routing"
	ns_exec "$TOPO_PROXY" "$MMP_BIN" setup-routing >"$TMP/setup-routing.log" 2>&1 || fail "setup-routing failed"
	grep fwmark "$TMP/setup-routing.log" | sed 's/^/        /'
else
	echo "      + in the proxy ns: ip rule from 127.0.0.1/8 iif lo table 123; ip route local 0.0.0.0/0 dev lo table 123"
	topo_transparent_routing "$TOPO_PROXY" || fail "could not add the routing rules"
fi
bpffs_ensure || fail "bpffs is not mounted on /sys/fs/bpf and could not be mounted"

echo "[2/5] upstream on $UP_IP:$UP_PORT$( ((CONTAINER)) && echo " in $UP_NS"): prints the peer of each connection and greets it"
cat >"$TMP/upstream.py" <<'EOF'
import socket, sys
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[2], int(sys.argv[1])))
srv.listen(16)
print("listening", flush=True)
while True:
    conn, (addr, port) = srv.accept()
    print(f"peer {addr} {port}", flush=True)  # getpeername() of the upstream connection
    data = conn.recv(4096)
    conn.sendall(f"hello {addr}:{port}, you sent {data!r}\n".encode())
    conn.close()
EOF
proc_start UP_PID "$TMP/upstream.log" "$UP_NS" python3 "$TMP/upstream.py" "$UP_PORT" "$UP_IP"
wait_grep "$TMP/upstream.log" '^listening' 5 || fail "the upstream did not start"

echo "[3/5] mmproxy-bpf on 127.0.0.1:$MMP_PORT -> -4 $UP_IP:$UP_PORT (pins in $PIN_DIR)"
# nsenter, not `ip netns exec`: the latter remounts /sys and would hide the pins.
proc_start MMP_PID "$TMP/mmproxy.log" "$TOPO_PROXY" "$MMP_BIN" run -l "127.0.0.1:$MMP_PORT" \
	-4 "$UP_IP:$UP_PORT" -6 "[::1]:$UP_PORT" -v 2 --pin-dir "$PIN_DIR"
wait_port "$TOPO_PROXY" "$MMP_PORT" 10 "$MMP_PID" || fail "mmproxy-bpf did not start"

echo "[4/5] HAProxy on $TOPO_PROXY_IP4:$LB_PORT, send-proxy-v2 to mmproxy-bpf"
cat >"$TMP/haproxy.cfg" <<EOF
global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend demo
    bind $TOPO_PROXY_IP4:$LB_PORT
    default_backend mmproxy
backend mmproxy
    server mmproxy-bpf 127.0.0.1:$MMP_PORT send-proxy-v2
EOF
proc_start HAP_PID "$TMP/haproxy.log" "$TOPO_PROXY" haproxy -db -f "$TMP/haproxy.cfg"
wait_port "$TOPO_PROXY" "$LB_PORT" 10 "$HAP_PID" || fail "HAProxy did not start"

echo "[5/5] one request from the client namespace"
CLIENT_OUT=$(ns_exec "$TOPO_CLIENT" python3 - "$TOPO_PROXY_IP4" "$LB_PORT" <<'EOF'
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
addr, port = c.getsockname()
print(f"local {addr} {port}", flush=True)
c.sendall(b"GET /demo\n")
c.shutdown(socket.SHUT_WR)
reply = b""
while chunk := c.recv(4096):
    reply += chunk
print("reply " + reply.decode().strip())
EOF
) || fail "the client's request failed: $CLIENT_OUT"
read -r _ CLIENT_ADDR CLIENT_PORT <<<"$(grep '^local ' <<<"$CLIENT_OUT")"
echo "      client connected from $CLIENT_ADDR:$CLIENT_PORT"
echo "      client got: $(grep '^reply ' <<<"$CLIENT_OUT" | cut -d' ' -f2-)"

wait_grep "$TMP/upstream.log" '^peer ' 5 || fail "the upstream saw no connection"
read -r _ SEEN_ADDR SEEN_PORT <<<"$(grep -m1 '^peer ' "$TMP/upstream.log")"
echo
if [[ $SEEN_ADDR == "$CLIENT_ADDR" && $SEEN_PORT == "$CLIENT_PORT" && $SEEN_ADDR == "$TOPO_CLIENT_IP4" ]]; then
	echo "upstream saw client $SEEN_ADDR:$SEEN_PORT (the client's real address)"
	if ((CONTAINER)); then
		echo "OK: not the bridge's address (10.99.0.1) - the container saw the client's ip:port, and its replies"
		echo "    were steered back to mmproxy-bpf by tuple at br-demo (no --net=host, no iptables)"
	else
		echo "OK: not the proxy's address (127.0.0.1) - mmproxy-bpf connected from the client's ip:port"
	fi
else
	fail "upstream saw $SEEN_ADDR:$SEEN_PORT, but the client is $CLIENT_ADDR:$CLIENT_PORT"
fi

proc_stop "$MMP_PID" 10
((PROC_STATUS == 0)) || fail "mmproxy-bpf exited $PROC_STATUS on SIGTERM"
if [[ -n $(find "$PIN_DIR" -mindepth 1 2>/dev/null) ]]; then
	fail "mmproxy-bpf left pins in $PIN_DIR"
fi
echo "mmproxy-bpf stopped cleanly (exit 0, pins removed)"
if ((CONTAINER)); then
	ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup-routing >"$TMP/cleanup-routing.log" 2>&1 || fail "cleanup-routing failed"
	echo "mmproxy-bpf cleanup-routing removed the rules setup-routing added"
fi
exit 0
