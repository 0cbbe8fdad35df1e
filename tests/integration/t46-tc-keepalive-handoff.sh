#!/usr/bin/env bash
# t46: request/response flows (HTTP keep-alive) hand off on the first attempt.
#
# wrk (keep-alive) in the client namespace -> HAProxy send-proxy-v2 ->
# mmproxy-bpf (tc) -> nginx serving a 612-byte page: the field's http-ka load,
# small. HOLD puts both peers at window 0 right after one side was sent its
# last bytes (a request, or a response). That peer's ACK rides on its next
# segment, which the zero window blocks, so it comes from the delayed-ACK
# timer, up to 40 ms later: the hold-both attempt used to give up at its
# 40 ms stall time on every such flow, and the staged attempt took it at
# ~48 ms, each connection stalling that long. The proxy now asks for the
# ACK with an out-of-window pure ACK, as TCP's keepalive probe does
# (docs/DESIGN.md §3b, "Quiet").
#
# Asserted:
#   - wrk saw no socket error and no non-2xx answer;
#   - every connection spliced in the kernel, none left on splice;
#   - at most a quarter of the first attempts aborted (before: all of them);
#   - hand-off p50 is printed, with the aborted attempts' reasons.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
source "$(dirname "$0")/../../bench/nginx_conf.sh"
tc_only t46 "keep-alive hand-off"
command -v wrk >/dev/null || {
	echo "FAIL t46 setup: wrk is not installed (scripts/deps.sh installs it)"
	exit 1
}
MMP_VERBOSITY=2 # the per-flow hand-off lines
t_setup t46

CONNS=8
# Long enough that the flows left TCP's quick-ACK start (the field's default is 20 ms).
HANDOFF_DELAY_MS=100

case_begin "1 wrk keep-alive, $CONNS connections, through HAProxy: every flow in the kernel at its first attempt"
t_require hap_start
chmod 711 "$T_TMP" # nginx's workers (nobody) read the page below it
nginx_conf "$T_TMP/www-nginx" "$UP_PORT"
proc_start NGINX_PID "$T_TMP/nginx.log" "$TOPO_PROXY" nginx -p "$T_TMP/www-nginx" -c "$T_TMP/www-nginx/nginx.conf" \
	-e "$T_TMP/www-nginx/nginx-error.log"
t_require wait_port "$TOPO_PROXY" "$UP_PORT" 10 "$NGINX_PID"
if tc_mmp_start "$(tc_pindir ka)" "127.0.0.1:$PROXY_PORT" --tc-handoff-delay "$HANDOFF_DELAY_MS"; then
	mark=$(log_mark "$MMP_LOG")
	out="$T_TMP/wrk.out"
	ns_exec "$TOPO_CLIENT" wrk -t 1 -c "$CONNS" -d 2s "http://$TOPO_PROXY_IP4:$HAP_V2_PORT/" >"$out" 2>&1
	requests=$(awk '/requests in/ { print $1 }' "$out")
	[[ ${requests:-0} -gt 0 ]] || case_fail "wrk made no request: $(tr '\n' ' ' <"$out")"
	! grep -qE 'Socket errors|Non-2xx' "$out" || case_fail "wrk: $(grep -E 'Socket errors|Non-2xx' "$out" | tr '\n' ' ')"
	tc_outcomes "$MMP_LOG" "$mark"
	((OC_SPLICED == CONNS)) || case_fail "$OC_SPLICED of $CONNS flows spliced in the kernel (first other: $OC_FIRST_OTHER)"
	((OC_STAYS == 0)) || case_fail "$OC_STAYS flows stayed on splice (first: $OC_FIRST_OTHER)"
	((OC_ABORTED * 4 <= CONNS)) ||
		case_fail "$OC_ABORTED of $CONNS first attempts aborted (first: $OC_FIRST_OTHER)"
	tc_handoff_stats "$MMP_LOG" "$mark"
	echo "# $T_ID: $requests requests; hand-off p50 $HO_P50 ms, p99 $HO_P99 ms, max $HO_MAX ms; $OC_ABORTED attempts aborted"
	case_note "$requests requests, $OC_SPLICED/$CONNS spliced in the kernel, $OC_ABORTED aborted, hand-off p50 $HO_P50 ms"
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

case_lifecycle
t_finish
