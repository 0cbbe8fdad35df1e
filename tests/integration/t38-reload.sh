#!/usr/bin/env bash
# t38: live reload of the allowed subnets (-a) on SIGHUP (docs/DESIGN.md §6).
#   38a a source added to the file is served after SIGHUP, a removed one refused;
#       a connection from the removed source that was open stays open
#   38b a bad file: one error line naming file:line, the old list stays
#   38c 50 reloads that swap the key covering a hammering client's source
#       (/32 <-> /24): not one of its connections is refused
# mmproxy-bpf only (go-mmproxy has no reload).
source "$(dirname "$0")/lib.sh"
t_setup t38

LB_A=203.0.113.251
LB_B=203.0.113.252
ip -n "$TOPO_PROXY" addr add "$LB_A/32" dev lo || exit 1
ip -n "$TOPO_PROXY" addr add "$LB_B/32" dev lo || exit 1
ALLOW=$T_TMP/allowed.txt

if ! is_bpf; then
	case_begin "reload"
	case_skip "go-mmproxy has no live reload"
	t_finish
fi

# reload: SIGHUP, then wait for the proxy's line about it (after MARK).
reload() {
	local mark
	mark=$(log_mark "$MMP_LOG")
	kill -HUP "$MMP_PID"
	RELOAD_LINE=$(wait_log_since "$MMP_LOG" "$mark" 'reload(ed| failed)' 5) || RELOAD_LINE=""
}

# served SRC_LB: one echo through the proxy from load balancer SRC_LB.
served() {
	local p
	next_port p
	client "$TOPO_PROXY" -b "$1" -c "127.0.0.1:$PROXY_PORT" --pp2 "198.18.0.1:$p" 203.0.113.1:443 \
		--msg 'ping\n' --timeout 3
}

t_require up_start
echo "$LB_A/32" >"$ALLOW"
t_require mmp_start -a "$ALLOW" --listeners 2

case_begin "38a add $LB_B, remove $LB_A: new connections follow, an open one stays"
served "$LB_A" || case_fail "$LB_A not served before the reload: $(client_result)"
served "$LB_B" && case_fail "$LB_B served before it was allowed"
# An open connection from LB_A, idle across the reload (the proxy must not close it).
next_port p
ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -b "$LB_A" -c "127.0.0.1:$PROXY_PORT" \
	--pp2 "198.18.0.2:$p" 203.0.113.1:443 --expect-close --timeout 3 >"$T_TMP/open.out" 2>&1 &
open_pid=$!
cleanup_push "proc_kill $open_pid"
sleep 0.5
echo "$LB_B/32" >"$ALLOW"
reload
[[ $RELOAD_LINE == *"reloaded"*"1 IPv4"*"1 added, 1 removed"* ]] ||
	case_fail "reload line: '${RELOAD_LINE:-none}'"
served "$LB_B" || case_fail "$LB_B not served after it was added: $(client_result)"
served "$LB_A" && case_fail "$LB_A still served after it was removed"
wait "$open_pid"
grep -q '^open ' "$T_TMP/open.out" ||
	case_fail "the connection open from $LB_A did not stay open: $(tr '\n' ' ' <"$T_TMP/open.out")"
case_note "${RELOAD_LINE##*: }"
case_end

case_begin "38b a bad file keeps the old list and names file:line"
printf '%s/32\n# comment\n10.0.0.0/33\n' "$LB_A" >"$ALLOW"
reload
[[ $RELOAD_LINE == *"reload failed"*"allowed.txt:3: prefix length"* ]] ||
	case_fail "error line: '${RELOAD_LINE:-none}'"
served "$LB_B" || case_fail "$LB_B (old list) not served after a bad reload: $(client_result)"
served "$LB_A" && case_fail "$LB_A (only in the bad file) served"
proc_alive "$MMP_PID" || case_fail "the proxy died"
case_note "${RELOAD_LINE:0:160}"
case_end

case_begin "38c 50 reloads under a hammering client: no refused connection"
echo "$LB_A/32" >"$ALLOW"
reload
(
	ok=0 bad=0 i=0
	while [[ ! -e $T_TMP/stop ]]; do
		i=$((i + 1))
		if ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -b "$LB_A" -c "127.0.0.1:$PROXY_PORT" \
			--pp2 "198.18.1.$((i % 250 + 1)):$((20000 + i))" 203.0.113.1:443 --msg 'ping\n' --timeout 3 \
			>/dev/null 2>&1; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
	done
	echo "$ok $bad" >"$T_TMP/hammer.out"
) &
hammer=$!
cleanup_push "touch '$T_TMP/stop'; proc_kill $hammer"
fails=0
for ((r = 0; r < 50; r++)); do
	# The key that covers LB_A alternates: each reload inserts one and deletes the other.
	if ((r % 2)); then echo "$LB_A/32" >"$ALLOW"; else printf '203.0.113.0/24\n2001:db8::/32\n' >"$ALLOW"; fi
	reload
	[[ $RELOAD_LINE == *reloaded* ]] || fails=$((fails + 1))
	sleep 0.05
done
touch "$T_TMP/stop"
wait "$hammer"
read -r ok bad <"$T_TMP/hammer.out"
((fails == 0)) || case_fail "$fails of 50 reloads logged no 'reloaded' line"
((bad == 0)) || case_fail "$bad of $((ok + bad)) connections from $LB_A failed during the reloads"
((ok >= 20)) || case_fail "only $ok connections during the reloads"
refused=$(grep -c 'not allowed' "$MMP_LOG")
case_note "$ok connections, $bad failed, 50 reloads; 'not allowed' lines in the whole log: $refused (38a/38b's)"
case_end

# tc: a flow leaves mmp_tc_flows once both FINs (or a reset) went through and
# it lingered 2 s; wait for that, so that the exit removes every pin.
if [[ $MMP_ENGINE == tc || $MMP_ENGINE == auto ]]; then
	for ((i = 0; i < 100; i++)); do
		n=$(bpftool -j map dump pinned "$MMP_PINDIR/mmp_tc_flows" 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null)
		[[ ${n:-0} == 0 ]] && break
		sleep 0.1
	done
	[[ ${n:-0} == 0 ]] || echo "# t38: $n tc flows still held before the stop: $("$MMP_BIN" stats --pin-dir "$MMP_PINDIR" 2>&1 | grep -A4 '^  flow' | head -12 | tr '\n' ' ')"
fi
mmp_stop
case_lifecycle
t_finish
