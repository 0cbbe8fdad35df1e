#!/usr/bin/env bash
# t25: continuous two-way streams through an echo upstream that reads only
# while it can write, on every engine (issue 14; docs/DESIGN.md §3d).
#
# mmpt-bidir --echo plays both ends in the proxy namespace: the load balancer
# writes a v2 header, then SIZE bytes flat out while reading everything back;
# the upstream echoes and never reads while a chunk it read is unwritten. Every
# buffer on the way fills both ways, so each direction of the proxy keeps
# meeting a full destination while its source is readable: the case the splice
# engine's short-write rule (wait for the destination alone) and short-read
# rule (a short splice means drained) are about. t20 checks the tc hand-off of
# the same load; this file checks that whichever engine runs, nothing is lost,
# duplicated or stuck.
#
# Asserted, IPv4 and IPv6: every connection byte-exact both ways (sha256 of
# what each end sent against what the other received), none idle for 2 s,
# and a half-close after the stream (mmpt-bidir shuts down its write side
# when done and reads to EOF) reaches both ends.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
t_setup t25

N=${T25_CONNS:-8}
SIZE=${T25_SIZE:-8M}

# echo_case NAME PROXY_LISTEN UPSTREAM_LISTEN NET PORT_BASE
echo_case() {
	local name=$1 listen=$2 uplisten=$3 net=$4 pbase=$5
	local out="$T_TMP/echo-$pbase.out" ok bad t0 ms
	case_begin "$name"
	if ! mmp_start -l "$listen"; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	t0=$(date +%s%N)
	tc_run_bidir "$TOPO_PROXY" "$out" -c "$listen" -l "$uplisten" -n "$N" --parallel "$N" --size "$SIZE" \
		--echo --net "$net" --port-base "$pbase" --timeout 90 --max-failures 2
	ms=$((($(date +%s%N) - t0) / 1000000))
	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	bad=$(grep '^conn ' "$out" | grep -v ' up [0-9]* ok down [0-9]* ok$' | head -3 | tr '\n' ';')
	((TC_STALLS == 0)) || case_fail "$TC_STALLS connections moved no byte for 2 s (first: $TC_STALL_DIAG)"
	((ok == N)) || case_fail "$ok of $N connections byte-exact both ways ($(tail -n 1 "$out"); e.g. ${bad:-$(tail -n 2 "$out" | tr '\n' ' ')})"
	proc_alive "$MMP_PID" || case_fail "the proxy died"
	case_note "$ok/$N exact both ways, $SIZE each way, $ms ms"
	mmp_stop
	case_end
}

echo_case "1 IPv4: $N echo streams flat out, $SIZE each way, byte-exact" \
	"127.0.0.1:$PROXY_PORT" "127.0.0.1:$UP_PORT" 203.0.113. 35000
echo_case "2 IPv6: $N echo streams flat out, $SIZE each way, byte-exact" \
	"[::1]:$PROXY_PORT" "[::1]:$UP_PORT" 2001:db8:5:: 36000

case_lifecycle
t_finish
