#!/usr/bin/env bash
# t61: flows through an instance run with -m MARK reach the kernel (issue 24;
# docs/DESIGN.md §3b, eligibility).
#
# -m puts SO_MARK on the upstream sockets, for fwmark routing rules and
# netfilter. The tc engine used to keep every such flow on splice ("SO_MARK
# (-m) is set"); now the translated client -> upstream segments carry the
# mark themselves (skb->mark, set by bpf/tc.bpf.c), so the flows are eligible.
# Asserted: 3 two-way transfers byte-exact (sha256 both ways), all 3 flows
# spliced in the kernel, none left on splice, no stall.
# Not asserted: that the translated segments carry the mark (this kernel's
# test set-up has no tc action or classifier that counts marks, and a
# fwmark-only route to the upstream did not pass the SYN-ACK); see
# docs/DESIGN.md §3b.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
tc_only t61 "-m MARK flows in the kernel"
MMP_VERBOSITY=2
t_setup t61

MARK=123
SIZE=$((8 << 20))

case_begin "1 -m $MARK: 3 two-way transfers spliced in the kernel, byte-exact"
if ! tc_mmp_start "$(tc_pindir 1)" "127.0.0.1:$PROXY_PORT" -m "$MARK"; then
	case_fail "$MMP_START_ERR"
else
	mark=$(log_mark "$MMP_LOG")
	out="$T_TMP/bidir.out"
	tc_run_bidir "$TOPO_PROXY" "$out" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n 3 --parallel 3 \
		--size "$SIZE" --rate 16M --net 203.0.113. --port-base 37000 --timeout 20
	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	((ok == 3)) || case_fail "$ok of 3 connections byte-exact both ways: $(grep -v ' ok down [0-9]* ok$' "$out" | head -2 | tr '\n' ';')"
	((TC_STALLS == 0)) || case_fail "$TC_STALLS connections stalled (first: $TC_STALL_DIAG)"
	tc_outcomes "$MMP_LOG" "$mark"
	((OC_SPLICED == 3)) || case_fail "$OC_SPLICED of 3 flows spliced in the kernel (first other: $OC_FIRST_OTHER)"
	((OC_STAYS == 0)) || case_fail "$OC_STAYS flows stayed on splice (first: $OC_FIRST_OTHER)"
	case_note "3 x $((2 * SIZE >> 20)) MiB exact, $OC_SPLICED spliced in the kernel with -m $MARK"
	mmp_stop
fi
case_end

case_lifecycle
t_finish
