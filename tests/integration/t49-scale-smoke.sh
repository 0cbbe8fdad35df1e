#!/usr/bin/env bash
# t49: 10,000 connections held through the tc engine (issue 26, "Scale";
# the 100,000 run is bench/scale.sh, docs/benchmarks.md "Scale").
#
# Two `loadgen -m hold` processes (5,000 connections each: the open-files
# hard limit is per process) connect from 127.2/16 and 127.3/16, paced at
# 2,000 a second so that the proxy's fds mid-hand-off stay few, with v2
# headers naming distinct clients of 10.128.0.0/9; two `upstream -m echo`
# processes share the upstream port (SO_REUSEPORT). Every held connection
# sends 64 bytes at once, then 64 more every 3 s, and checks the echo byte
# for byte.
#
# Asserted:
#   1. all 10,000 open, every one spliced in the kernel (mmp_tc_flows), and
#      the proxy back to the fds it had before: it keeps no socket per flow;
#      its RSS grew by at most 1 KiB per flow (the issue's target), and
#      every connection echoed a message exactly while measured, after the
#      hand-off, with no error;
#   2. once the holders closed, every flow left the maps;
#   and the whole file within 90 s.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t49 "scale smoke"
need_bench_tools t49 loadgen upstream
t_setup t49

CONNS=10000
HOLDERS=2
RAMP_RATE=2000 # a second, all holders together
INTERVAL=3 # s between one connection's messages
RSS_PER_FLOW_MAX=1024 # bytes

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$MMP_PID/status"; }
tc_flows() { "$MMP_BIN" stats --pin-dir "$MMP_PINDIR" --json 2>/dev/null | jq -r '.tc.flows // -1'; }

# Room for 10,000 handshakes at once, and for the test's own ports.
ns_exec "$TOPO_PROXY" sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535 \
	net.ipv4.ip_local_port_range="1024 65535"
for ((i = 0; i < 2; i++)); do
	bench_echo_start t49 "$T_TMP/upstream-$i.log"
done

case_begin "1 $CONNS connections held: all spliced in the kernel, no fd and <= $RSS_PER_FLOW_MAX B RSS a flow in the proxy, all echo byte-exact"
t_require tc_mmp_start "$(tc_pindir scale)" "127.0.0.1:$PROXY_PORT"
sleep 0.5
fds0=$(mmp_fds)
rss0=$(rss_kb)
HOLDER_PIDS=()
for ((i = 0; i < HOLDERS; i++)); do
	# -T is only a bound: SIGTERM ends the measurement and prints the report.
	proc_start pid "$T_TMP/hold-$i.out" "$TOPO_PROXY" "$BENCH_TOOLS/loadgen" -m hold -c $((CONNS / HOLDERS)) \
		--interval "$INTERVAL" -s 64 --threads 1 --connect-rate $((RAMP_RATE / HOLDERS)) -T 1000 --warmup 0 \
		--proxy v2 --client-range 10.128.0.0/9 --client-offset $((i * CONNS / HOLDERS)) \
		--source-range "127.$((2 + i)).0.0/16" -q "127.0.0.1:$PROXY_PORT"
	HOLDER_PIDS+=("$pid")
done
# READY: every connection of that holder is open (or its ramp grace ran out).
holders_up=1
for ((i = 0; i < 400; i++)); do
	(($(cat "$T_TMP"/hold-*.out 2>/dev/null | grep -c '^READY') == HOLDERS)) && break
	for pid in "${HOLDER_PIDS[@]}"; do proc_alive "$pid" || holders_up=0; done
	((holders_up)) || break
	sleep 0.1
done
((holders_up)) || case_fail "a holder exited: $(tail -q -n 2 "$T_TMP"/hold-*.out | tr '\n' ' ')"
t_ready=$SECONDS
opened=$(cat "$T_TMP"/hold-*.out 2>/dev/null | awk '/^READY/ { s += $2 } END { print s + 0 }')
((opened == CONNS)) || case_fail "$opened of $CONNS connections open after $((t_ready)) s"
# Handed off: every flow in the map, and the proxy's sockets released.
flows=$(tc_flows)
for ((i = 0; i < 300 * holders_up; i++)); do
	((flows >= CONNS && $(mmp_fds) <= fds0)) && break
	sleep 0.1
	flows=$(tc_flows)
done
fds1=$(mmp_fds)
rss1=$(rss_kb)
((flows == CONNS)) || case_fail "$flows of $CONNS flows spliced in the kernel"
((fds1 <= fds0)) || case_fail "the proxy holds $fds1 fds with $flows flows in the kernel, $fds0 before"
per_flow=$(((rss1 - rss0) * 1024 / CONNS))
((per_flow <= RSS_PER_FLOW_MAX)) ||
	case_fail "the proxy's RSS grew by $per_flow B a flow ($rss0 -> $rss1 KiB), more than $RSS_PER_FLOW_MAX"
# Every connection has its turn to ping while measured (one interval, and
# margin), all after its hand-off; then the holders report.
while ((holders_up && SECONDS < t_ready + INTERVAL + 3)); do sleep 0.2; done
for pid in "${HOLDER_PIDS[@]}"; do proc_stop "$pid" 10; done
totals=$(cat "$T_TMP"/hold-*.out | sed -n 's/^JSON //p' | jq -cs '{n: length, open: (map(.conns_open) | add),
	alive: (map(.alive) | add), msgs: (map(.msgs) | add), errors: (map(.errors) | add),
	verify_errors: (map(.verify_errors) | add), verified: (map(.verified_bytes) | add)}')
if [[ $(jq .n <<<"$totals") != "$HOLDERS" ]]; then
	case_fail "a holder printed no report: $(tail -n 2 "$T_TMP"/hold-*.out | tr '\n' ' ')"
else
	alive=$(jq .alive <<<"$totals")
	((alive == CONNS)) || case_fail "$alive of $CONNS held connections echoed a message while measured"
	[[ $(jq .errors <<<"$totals") == 0 ]] || case_fail "holders saw errors: $totals"
	[[ $(jq .verify_errors <<<"$totals") == 0 ]] || case_fail "wrong bytes echoed: $totals"
fi
case_note "$opened open in ${t_ready}s, $flows in the kernel, proxy fds $fds0 -> $fds1, RSS $rss0 -> $rss1 KiB" \
	"($per_flow B a flow), $(jq -r '"\(.alive) alive, \(.msgs) messages, \(.verified) bytes checked"' <<<"$totals")"
case_end

case_begin "2 the holders closed: every flow left the maps"
# FIN both ways, then the 2 s linger (DESIGN §3b): the collector removes them.
for ((i = 0; i < 150; i++)); do
	flows=$(tc_flows)
	((flows == 0)) && break
	sleep 0.1
done
((flows == 0)) || case_fail "$flows flows still in mmp_tc_flows 15 s after their connections closed"
mmp_stop
case_end

case_lifecycle
case_begin "3 the file ran within 90 s"
((SECONDS < 90)) || case_fail "took $SECONDS s"
case_note "$SECONDS s"
case_end
t_finish
