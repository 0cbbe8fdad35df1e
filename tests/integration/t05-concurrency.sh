#!/usr/bin/env bash
# t05: 2000 concurrent connections (case 8). mmpt-flood plays the load
# balancer: each connection carries a v2 header claiming its own client,
# 203.0.113.1-200 x 10 ports, sends a line and waits for its echo; all 2000
# stay open until the last one was echoed. Every claimed client must show up
# at the upstream exactly once. The proxy then holds ~4000 sockets (ulimit -n
# is 20000 here).
source "$(dirname "$0")/lib.sh"
t_setup t05

N=2000
t_require up_start
t_require mmp_start

# Baseline fd count of an idle proxy that has served a connection (lazy
# allocations done): after the flood it must come back to it.
case_begin "8 $N concurrent connections, unique v2 clients, all echoed"
echo_via_proxy "203.0.113.250:1000" "203.0.113.1:443"
sleep 0.3
base=$(mmp_fds)
up_marks
t0=$(date +%s%N)
flood_out=$(ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-flood" -c "127.0.0.1:$PROXY_PORT" -n "$N" \
	--dst 203.0.113.1:443 --net 203.0.113. --hosts 200 --port-base 30000 \
	--expect-file "$T_TMP/flood-expect" --timeout 120 2>&1) ||
	case_fail "flood: $flood_out"
ms=$((($(date +%s%N) - t0) / 1000000))
# Every claimed client exactly once at the IPv4 upstream, nothing else.
check_flood_clients "$T_TMP/flood-expect"
case_note "$(grep -o 'ok .*' <<<"$flood_out"), total $ms ms"
if is_bpf; then
	# All 2000 closed by the flood: every socket and pipe must be released.
	# 64 fds of slack allow a bounded pipe cache; 2000 leaked connections
	# would be 4000+.
	mmp_fds_back "$((base + 64))" 15
else
	case_skip_part "fd count back to baseline: mmproxy-bpf only"
fi
echo_via_proxy "203.0.113.250:1001" "203.0.113.1:443" # still serving
case_end

mmp_stop
case_lifecycle
t_finish
