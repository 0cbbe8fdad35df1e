#!/usr/bin/env bash
# t20: continuous two-way streams through an echo upstream that reads only
# while it can write (issue 14; docs/DESIGN.md §3c, "staged HOLD").
#
# mmpt-bidir --echo plays both ends in the proxy namespace: the load balancer
# writes a v2 header and then SIZE bytes flat out while reading everything
# back (as tcpkali does); the upstream echoes, and never reads while a chunk
# it read is not written back (as an echo service, a game server or a tunnel
# does). Flat out, every buffer on the way fills both ways. Holding both peers
# at a zero window at once then never quiets down: the echo cannot write, so
# it stops reading, and the proxy's send queue toward it never drains (every
# hand-off of the kind was aborted before the staged HOLD). The staged HOLD
# holds the load balancer first, lets the echo write while that direction
# drains, then holds both.
#
# Asserted, IPv4 and IPv6:
#   - every connection byte-exact both ways (sha256 of what each end sent
#     against what the other received);
#   - every flow spliced in the kernel (-v 2 "spliced in the kernel" lines),
#     none left on splice;
#   - no data segment dropped by PAWS in the proxy namespace (tc_paws_verdict);
#   - no RTO in the proxy namespace: loopback loses nothing, so an RTO is a
#     segment the hand-off lost. Each one used to be the proxy's own data,
#     marked sent but never put on the wire while a hold read the socket's
#     send queue in repair mode (0-4 a case, in 9 of 12 cases; docs/DESIGN.md
#     §3b, "Reading a socket's state"). Loss probes are printed, not judged:
#     flat-out loopback streams send 200-250 a case on splice alone.
# Printed: hand-off p50/p99/max (an echo flow drains megabytes first), aborted
# first attempts (both held), retransmits, RTOs, window probes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t20 "continuous two-way streams through an echo upstream"
MMP_VERBOSITY=2 # the per-flow hand-off lines
t_setup t20

N=${T20_CONNS:-4}
SIZE=${T20_SIZE:-32M}
# The hand-off starts once the buffers are full both ways, not at the first
# byte (where holding both peers at once still works).
MMP_TC_HANDOFF_DELAY=${T20_HANDOFF_DELAY_MS:-300}

# echo_case NAME PROXY_LISTEN UPSTREAM_LISTEN NET PORT_BASE
echo_case() {
	local name=$1 listen=$2 uplisten=$3 net=$4 pbase=$5
	local out="$T_TMP/echo-$pbase.out" mark ok bad t0 ms paws
	case_begin "$name"
	if ! tc_mmp_start "$(tc_pindir "$pbase")" "$listen"; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	tc_nstat "$TOPO_PROXY" NS0
	t0=$(date +%s%N)
	tc_run_bidir "$TOPO_PROXY" "$out" -c "$listen" -l "$uplisten" -n "$N" --parallel "$N" --size "$SIZE" \
		--echo --net "$net" --port-base "$pbase" --timeout 60 --max-failures 2
	ms=$((($(date +%s%N) - t0) / 1000000))
	tc_nstat_delta "$TOPO_PROXY" NS0

	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	bad=$(grep '^conn ' "$out" | grep -v ' up [0-9]* ok down [0-9]* ok$' | head -3 | tr '\n' ';')
	((TC_STALLS == 0)) || case_fail "$TC_STALLS connections moved no byte for 2 s (first: $TC_STALL_DIAG)"
	((ok == N)) || case_fail "$ok of $N connections byte-exact both ways ($(tail -n 1 "$out"); e.g. ${bad:-$(tail -n 2 "$out" | tr '\n' ' ')})"

	tc_outcomes "$MMP_LOG" "$mark"
	((OC_SPLICED == N)) ||
		case_fail "$OC_SPLICED of $N flows spliced in the kernel ($OC_ABORTED hand-offs aborted; first: $OC_FIRST_OTHER)"
	((OC_STAYS == 0)) || case_fail "$OC_STAYS flows stayed on splice (first: $OC_FIRST_OTHER)"
	paws=$(tc_paws_verdict)
	[[ -z $paws ]] || case_fail "$paws"
	((${NSTAT_D[TcpExtTCPTimeouts]:-0} == 0)) ||
		case_fail "${NSTAT_D[TcpExtTCPTimeouts]} RTOs: a segment was lost on loopback, and a flow stalled for 200 ms or more ($NSTAT_STR)"
	tc_handoff_stats "$MMP_LOG" "$mark"
	echo "# $T_ID $name: hand-off p50 $HO_P50 ms, p99 $HO_P99 ms, max $HO_MAX ms; $OC_ABORTED attempts aborted before the staged one; $NSTAT_STR"
	case_note "$ok/$N exact, $OC_SPLICED spliced in the kernel, hand-off p50 $HO_P50 ms max $HO_MAX ms, $OC_ABORTED attempts aborted, $ms ms"
	mmp_stop
	case_end
}

echo_case "1 IPv4: $N echo streams flat out, $SIZE each way, all spliced in the kernel" \
	"127.0.0.1:$PROXY_PORT" "127.0.0.1:$UP_PORT" 203.0.113. 33000
echo_case "2 IPv6: $N echo streams flat out, $SIZE each way, all spliced in the kernel" \
	"[::1]:$PROXY_PORT" "[::1]:$UP_PORT" 2001:db8:5:: 34000

case_lifecycle
t_finish
