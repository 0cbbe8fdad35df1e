#!/usr/bin/env bash
# t38-udp-reload: SIGHUP re-reads -a in UDP mode too (docs/DESIGN.md §6):
# a new flow from a removed load balancer is dropped (drop_not_allowed), a
# bad file keeps the list, the load balancer added back is served again;
# UDP mode's /metrics passes promtool and counts the reloads and the drops.
source "$(dirname "$0")/udp-lib.sh"
udp_setup t38-udp-reload

if ! is_bpf; then
	case_begin "udp reload"
	case_skip "go-mmproxy has no live reload"
	t_finish
fi
ALLOW=$T_TMP/allowed.txt
PORT=31000

reload() {
	local mark
	mark=$(log_mark "$MMP_LOG")
	kill -HUP "$MMP_PID"
	RELOAD_LINE=$(wait_log_since "$MMP_LOG" "$mark" 'reload(ed| failed)' 5) || RELOAD_LINE=""
}

# echo_ok: a new flow (fresh client port) from the client namespace's load balancer is echoed.
echo_ok() {
	PORT=$((PORT + 1))
	udp_send "$TOPO_CLIENT" -c "$PROXY4" --format v2 --client "203.0.113.70:$PORT" -n 3 --echo --timeout 2
}

t_require udp_up_start
printf '%s\n' "$TOPO_CLIENT_IP4/32" "$TOPO_CLIENT_IP6/128" >"$ALLOW"
METRICS=127.0.0.1:9814
t_require udp_mmp_start --udp-header every -a "$ALLOW" --metrics "$METRICS"

case_begin "removed on reload: new flows dropped; bad file: list kept; added back: served"
echo_ok || case_fail "not served before the reload: $(udp_result)"
echo "192.0.2.0/24" >"$ALLOW"
reload
[[ $RELOAD_LINE == *reloaded*"1 IPv4 and 0 IPv6"*"1 added, 2 removed"* ]] || case_fail "reload line: '${RELOAD_LINE:-none}'"
udp_counters_fresh
before=$(udp_counter drop_not_allowed)
echo_ok && case_fail "a new flow was served after its load balancer was removed"
udp_counters_fresh
after=$(udp_counter drop_not_allowed)
((after > before)) || case_fail "drop_not_allowed went $before -> $after"
printf '%s/32\nbogus\n' "$TOPO_CLIENT_IP4" >"$ALLOW"
reload
[[ $RELOAD_LINE == *"reload failed"*"allowed.txt:2:"* ]] || case_fail "error line: '${RELOAD_LINE:-none}'"
echo_ok && case_fail "served by the bad file's list"
printf '%s/32\n' "$TOPO_CLIENT_IP4" >"$ALLOW"
reload
echo_ok || case_fail "not served after it was added back: $(udp_result)"
proc_alive "$MMP_PID" || case_fail "the proxy died"
case_note "drop_not_allowed $before -> $after"
case_end

case_begin "UDP mode /metrics: promtool passes, reloads and drops counted"
sleep 1.2 # mmp_udp_cnt is refreshed once a second
ns_exec "$TOPO_PROXY" curl -s -o "$T_TMP/m" "http://$METRICS/metrics" || case_fail "GET /metrics failed"
out=$(promtool check metrics <"$T_TMP/m" 2>&1) || case_fail "promtool: $(head -3 <<<"$out" | tr '\n' ' ')"
grep -qx 'mmproxy_reloads_total{result="ok"} 2' "$T_TMP/m" || case_fail "reloads ok: $(grep 'reloads_total{result="ok"}' "$T_TMP/m")"
grep -qx 'mmproxy_reloads_total{result="failed"} 1' "$T_TMP/m" || case_fail "reloads failed: $(grep 'reloads_total{result="failed"}' "$T_TMP/m")"
line=$(grep 'mmproxy_udp_dropped_total{reason="not_allowed"}' "$T_TMP/m")
now=$(udp_counter drop_not_allowed)
[[ ${line##* } == "$now" ]] || case_fail "not_allowed drops: '$line', mmp_udp_cnt says $now"
case_note "$line"
case_end

mmp_stop
case_lifecycle
t_finish
