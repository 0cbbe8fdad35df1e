#!/usr/bin/env bash
# t10: the tc engine's hand-off (HOLD -> FREEZE -> SPLICE, docs/DESIGN.md §3b) while
# both directions are streaming, 200 times over IPv4 and 50 times over IPv6,
# every byte checked.
#
# mmpt-bidir (tests/tools) plays both ends in the proxy namespace: as the load
# balancer it writes a hand-made v2 header to mmproxy and starts sending at
# once; as the upstream (it listens on the -4/-6 upstream address) it starts
# sending as soon as the proxy's connection is accepted. The proxy begins the
# hand-off right after its upstream connect, so both directions are in
# flight while it quiesces the peers with a zero window, drains, freezes and
# switches. Each connection carries SIZE bytes each way, paced at RATE per
# direction, one connection at a time: unpaced, a few MiB fit in the socket
# buffers and the first
# splice pass moves everything, FIN included, before the hand-off starts (the
# flow then rightly stays on splice, "half-closed already", and the hand-off
# would not be mid-stream). Per connection the tool compares the sha256 of
# both directions and measures the completion time and, at each receiver,
# the longest gap between two reads.
#
# Asserted:
#   - every connection byte-exact both ways;
#   - every flow was spliced in the kernel (-v 2 "spliced in the kernel"
#     lines; no "stays on splice", no "aborted");
#   - hand-off time ("after N us") p99 < HANDOFF_P99_MS (the issue's target is
#     5 ms; 50 ms here so that 2 noisy shared cores do not make it flaky);
#     p50/p99/max are printed;
#   - no stall: no receiver waited more than STALL_MS between two reads (the
#     failure modes known from the prototypes are a 200 ms RTO after a lost
#     segment and a 207 ms persist-timer stall after a missed window update);
#   - no data segment dropped by PAWS (tc_paws_verdict: a segment with bytes
#     its receiver lacked, seen by mmpt-drops, with a fast retransmit or an RTO
#     in the proxy namespace, where every socket of the case lives;
#     retransmits, RTOs, loss probes and window probes are printed).
# Timing on 2 shared cores: when the load average exceeds the core count,
# the timing FAILs say so; judge them against a run on a quiet machine.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t10 "hand-off under bidirectional traffic"
MMP_VERBOSITY=2 # the per-flow hand-off lines
t_setup t10

N4=${T10_CONNS:-200}
N6=${T10_CONNS6:-50}
SIZE=${T10_SIZE:-2M}
# Bytes/s per direction: 2 MiB take >= 62 ms. mmpt-bidir hashes every byte
# twice (sender and receiver) in one thread (libcrypto, about 1.8 GB/s): far
# faster, or far more connections at once, and its own CPU time shows up as
# "gaps" and as loss probes on lo, with any engine.
RATE=${T10_RATE:-32M}
PARALLEL=1
HANDOFF_P99_MS=50
STALL_MS=180 # below the 200 ms RTO and the ~207 ms persist stall on lo
NCPU=$(nproc)

# handoff_case NAME PROXY_LISTEN UPSTREAM_LISTEN N NET PORT_BASE
handoff_case() {
	local name=$1 listen=$2 uplisten=$3 n=$4 net=$5 pbase=$6
	local out="$T_TMP/bidir-$pbase.out" mark t0 ms ok bad gaps worst over50 tr0 tr1 held0 held1 load0 target paws
	case_begin "$name"
	if ! tc_mmp_start "$(tc_pindir "$pbase")" "$listen"; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	mark=$(log_mark "$MMP_LOG")
	tr0=$(tc_counter "$MMP_PINDIR" packets_translated)
	held0=$(tc_counter "$MMP_PINDIR" zero_window_segments)
	load0=$(loadavg)
	tc_nstat "$TOPO_PROXY" NS0
	tc_drop_watch_start "$TOPO_PROXY"
	t0=$(date +%s%N)
	tc_run_bidir "$TOPO_PROXY" "$out" -c "$listen" -l "$uplisten" -n "$n" --size "$SIZE" \
		--rate "$RATE" --parallel "$PARALLEL" --net "$net" --port-base "$pbase" --timeout 10 \
		--max-failures 4
	ms=$((($(date +%s%N) - t0) / 1000000))
	tr1=$(tc_counter "$MMP_PINDIR" packets_translated)
	held1=$(tc_counter "$MMP_PINDIR" zero_window_segments)
	tc_nstat_delta "$TOPO_PROXY" NS0
	tc_drop_watch_stop

	# Bytes: every connection exact both ways.
	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	bad=$(grep '^conn ' "$out" | grep -v ' up [0-9]* ok down [0-9]* ok$' | head -3 | tr '\n' ';')
	((TC_STALLS == 0)) || case_fail "$TC_STALLS connections moved no byte for 2 s (first: $TC_STALL_DIAG; all in stall-*.txt, MMP_KEEP_TMP=1 keeps them)"
	((ok == n)) || case_fail "$ok of $n connections byte-exact both ways ($(tail -n 1 "$out"); e.g. ${bad:-$(tail -n 2 "$out" | tr '\n' ' ')})"

	# Every flow spliced in the kernel.
	tc_outcomes "$MMP_LOG" "$mark"
	((OC_SPLICED == n)) || case_fail "$OC_SPLICED of $n flows spliced in the kernel"
	((OC_STAYS + OC_ABORTED == 0)) ||
		case_fail "$OC_STAYS stayed on splice, $OC_ABORTED hand-offs aborted (first: $OC_FIRST_OTHER)"

	# Hand-off time.
	local busy=""
	awk -v l="$load0" -v c="$NCPU" 'BEGIN { exit !(l > c) }' &&
		busy=" [load average $load0 on $NCPU cores: timing is unreliable]"
	tc_handoff_stats "$MMP_LOG" "$mark"
	if ((HO_N > 0)); then
		awk -v p="$HO_P99" -v m="$HANDOFF_P99_MS" 'BEGIN { exit !(p < m) }' ||
			case_fail "hand-off p99 $HO_P99 ms >= $HANDOFF_P99_MS ms (p50 $HO_P50, max $HO_MAX)$busy"
	fi
	target=$(awk -v p="$HO_P99" 'BEGIN { print (p != "-" && p < 5) ? "met" : "NOT met" }')
	echo "# $T_ID $name: hand-off over $HO_N flows: p50 $HO_P50 ms, p99 $HO_P99 ms, max $HO_MAX ms; the issue's target p99 < 5 ms: $target (load average $load0 -> $(loadavg))"

	# Stalls: the longest wait of any receiver, both directions.
	gaps=$(awk '/^conn / { for (i = 1; i < NF; i++) if ($i == "gap_down_ms" || $i == "gap_up_ms") print $(i + 1) }' "$out")
	worst=$(sort -g <<<"$gaps" | tail -n 1)
	over50=$(awk '$1 > 50' <<<"$gaps" | grep -c .)
	if [[ -n $worst ]] && awk -v w="$worst" -v m="$STALL_MS" 'BEGIN { exit !(w >= m) }'; then
		case_fail "a receiver waited $worst ms between two reads (stall >= $STALL_MS ms; ${NSTAT_D[TcpExtTCPTimeouts]:-?} RTOs, ${NSTAT_D[TcpExtTCPWinProbe]:-?} window probes)$busy: $(awk -v m="$STALL_MS" '/^conn / { for (i = 1; i < NF; i++) if (($i == "gap_down_ms" || $i == "gap_up_ms") && $(i + 1) >= m) { print; break } }' "$out" | head -2 | tr '\n' ';')"
	fi
	# Every TCP socket of the case (load balancer, proxy, upstream) is in the
	# proxy namespace: its counters say why a receiver waited.
	paws=$(tc_paws_verdict)
	[[ -z $paws ]] || case_fail "$paws"
	echo "# $T_ID $name: TCP counters in the proxy namespace: $NSTAT_STR; ${DROP_WATCH:-}"
	echo "# $T_ID $name: per-connection completion ms $(awk '/^conn / { for (i = 1; i < NF; i++) if ($i == "ms") print $(i + 1) }' "$out" | percentiles); longest read gap $worst ms, $over50 of $((2 * n)) receivers waited > 50 ms once"
	case_note "$ok/$n exact, $OC_SPLICED spliced in the kernel, hand-off p50 $HO_P50 ms p99 $HO_P99 ms, longest gap ${worst:-?} ms, $((tr1 - tr0)) packets translated, $((held1 - held0)) zero-window segments, ${NSTAT_D[TcpRetransSegs]} retransmits, $ms ms"
	mmp_stop
	case_end
}

handoff_case "1 IPv4: $N4 hand-offs mid-stream, $SIZE each way, every byte checked" \
	"127.0.0.1:$PROXY_PORT" "127.0.0.1:$UP_PORT" "$N4" 203.0.113. 31000
handoff_case "2 IPv6: $N6 hand-offs mid-stream, $SIZE each way, every byte checked" \
	"[::1]:$PROXY_PORT" "[::1]:$UP_PORT" "$N6" 2001:db8:5:: 32000

case_lifecycle
t_finish
