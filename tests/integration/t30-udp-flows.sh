#!/usr/bin/env bash
# t30-udp-flows: many flows at once, with two listener threads. Datagrams
# go at 20,000/s: concurrency is the point here, not a burst the kernel may
# drop under load.
#   - 5,000 concurrent PROXY v2 flows, one load-balancer socket per client:
#     every client reaches the upstream under its own ip:port, every reply
#     comes back, mmp_udp_flows holds 5,000 entries; once idle they all close
#     and the proxy is back to its starting fd count, with an empty map;
#   - 5,000 SPP clients through a single load-balancer socket (as a Spectrum
#     edge may send them): each reply carries its own client's header;
#   - clients that come back through a new load-balancer ip:port keep one
#     flow (moved within a thread, or taken over by the other thread) and
#     their replies follow them.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t30-udp-flows

N=5000
t_require udp_up_start
t_require udp_mmp_start --udp-header auto -c 4 --listeners 2
sleep 0.2
fd_base=$(mmp_fds)

case_begin "$N concurrent PROXY v2 flows, one load-balancer socket each, all answered"
mark=$(log_mark "$UP4_LOG")
ns_exec "$TOPO_CLIENT" "$UDP_TOOL" send -c "$PROXY4" --format v2 --client 203.0.113.100:30000 --hosts 50 \
	--clients "$N" -n 2 --rate 20000 --echo --hold-ms 2500 --timeout 30 >"$T_TMP/flood4.out" 2>&1 &
sender=$!
sleep 1.5
held=$(udp_flow_count)
wait "$sender" || case_fail "sender: $(head -2 "$T_TMP/flood4.out")"
grep -q "echoed $((2 * N)) missing 0 reordered 0 bad 0" "$T_TMP/flood4.out" ||
	case_fail "sender: $(head -1 "$T_TMP/flood4.out")"
peers=$(log_since "$UP4_LOG" "$mark" | grep -c '^peer 203\.0\.113\.1[0-4][0-9] 300[0-9][0-9]$')
[[ $peers == "$N" ]] || case_fail "the upstream saw $peers distinct clients, expected $N"
[[ $held == "$N" ]] || case_fail "mmp_udp_flows held $held flows while the clients were open, expected $N"
case_note "$peers clients at the upstream, $held flows in the map; $(cut -d' ' -f2-12 "$T_TMP/flood4.out")"
case_end

case_begin "$N SPP clients through one load-balancer socket, each reply with its own client's header"
mark=$(log_mark "$UP6_LOG")
if udp_send "$TOPO_CLIENT" -c "$PROXY6" --format spp --client '[2001:db8::1:0]:31000' --hosts 100 --clients "$N" \
	-n 2 --rate 20000 --shared-socket --echo --timeout 30; then
	case_note "$(udp_result)"
else
	case_fail "sender: $(udp_result)"
fi
peers=$(log_since "$UP6_LOG" "$mark" | grep -c '^peer 2001:db8::1:')
[[ $peers == "$N" ]] || case_fail "the upstream saw $peers distinct clients, expected $N"
case_end

case_begin "clients back through a new load-balancer ip:port keep one flow; replies follow them"
udp_counters_fresh
moved0=$(udp_counter flows_moved) evicted0=$(udp_counter flows_evicted)
for round in 1 2; do
	udp_send "$TOPO_CLIENT" -c "$PROXY4" --format first --client 203.0.113.200:32000 --clients 200 -n 3 \
		--echo --timeout 5 || case_fail "round $round: $(udp_result)"
done
udp_counters_fresh
moved=$(($(udp_counter flows_moved) - moved0))
evicted=$(($(udp_counter flows_evicted) - evicted0))
udp_flows_json >"$T_TMP/flows-moved.json"
flows=$(python3 -c '
import json, sys
print(sum(1 for e in json.load(open(sys.argv[1])) if e["value"]["client"]["addr"][:4] == [203, 0, 113, 200]
      and 32000 <= e["value"]["client"]["port"] < 32200))' "$T_TMP/flows-moved.json")
# A new socket may get its old ephemeral port back: the same LB ip:port is then simply the same flow.
((moved + evicted >= 150 && moved + evicted <= 200)) || case_fail "$moved moved + $evicted taken over, expected about 200"
((moved > 0 && evicted > 0)) || case_fail "$moved moved, $evicted taken over: expected some of each with two listeners"
if [[ $flows != 200 ]]; then
	case_fail "$flows flows for the 200 clients, expected one each: $(python3 -c '
import collections, json, sys
by = collections.defaultdict(list)
for e in json.load(open(sys.argv[1])):
    v = e["value"]
    if v["client"]["addr"][:4] == [203, 0, 113, 200]:
        by[v["client"]["port"]].append("cookie %s lb port %s thread %s up %s" % (e["key"], v["lb"]["port"], v["thread"], v["pkts_up"]))
print("; ".join("%s: %s" % (p, " / ".join(f)) for p, f in by.items() if len(f) > 1))' "$T_TMP/flows-moved.json")"
fi
case_note "$moved moved within a thread, $evicted taken over by the other thread"
case_end

case_begin "once idle (-c 4) every flow closes: fds back to the start, map empty"
for ((i = 0; i < 100; i++)); do
	(($(mmp_fds) <= fd_base)) && [[ $(udp_flow_count) == 0 ]] && break
	sleep 0.1
done
(($(mmp_fds) <= fd_base)) || case_fail "the proxy holds $(mmp_fds) fds, $fd_base at the start"
left=$(udp_flow_count)
[[ $left == 0 ]] || case_fail "$left flows left in mmp_udp_flows"
case_end

mmp_stop
case_lifecycle
t_finish
