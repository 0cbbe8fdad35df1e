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
# Asserted, IPv4 and IPv6 (tc_echo_case in tc-lib.sh, which t60 shares):
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
# Flat out (libcrypto hashes about 1.8 GB/s), 32M streams ended in about 650 ms,
# some before their hand-off began; 128M lasts about 2 s.
SIZE=${T20_SIZE:-128M}
# The hand-off starts once the buffers are full both ways, not at the first
# byte (where holding both peers at once still works).
MMP_TC_HANDOFF_DELAY=${T20_HANDOFF_DELAY_MS:-300}

ECHO_N=$N
ECHO_SIZE=$SIZE
ECHO_TIMEOUT=60
ECHO_MAX_RTOS=0 # any RTO fails
ECHO_CHECK=t20_check

# t20_check: (tc_echo_case's hook) every flow has its "spliced in the kernel"
# line; prints the hand-off times and the TCP counters.
# shellcheck disable=SC2317 # called through tc_echo_case's ECHO_CHECK
t20_check() {
	((OC_SPLICED == N)) ||
		case_fail "$OC_SPLICED of $N flows spliced in the kernel ($OC_ABORTED hand-offs aborted; first: $OC_FIRST_OTHER)"
	echo "# $T_ID $ECHO_NAME: hand-off p50 $HO_P50 ms, p99 $HO_P99 ms, max $HO_MAX ms; $OC_ABORTED attempts aborted before the staged one; $NSTAT_STR; ${DROP_WATCH:-}"
	case_note "$ECHO_OK/$N exact, $OC_SPLICED spliced in the kernel, hand-off p50 $HO_P50 ms max $HO_MAX ms, $OC_ABORTED attempts aborted, $ECHO_MS ms"
}

tc_echo_case "1 IPv4: $N echo streams flat out, $SIZE each way, all spliced in the kernel" \
	"127.0.0.1:$PROXY_PORT" "127.0.0.1:$UP_PORT" 203.0.113. 33000
tc_echo_case "2 IPv6: $N echo streams flat out, $SIZE each way, all spliced in the kernel" \
	"[::1]:$PROXY_PORT" "[::1]:$UP_PORT" 2001:db8:5:: 34000

case_lifecycle
t_finish
