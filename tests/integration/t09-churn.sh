#!/usr/bin/env bash
# t09: connection churn, on every engine. 20,000 connections are opened, used
# (a short echo) and closed, at most 200 at a time (mmpt-flood --close mix):
#   i % 4 = 0, 1  the client closes with a FIN once its line was echoed;
#   i % 4 = 2     the client resets (SO_LINGER {1, 0} + close);
#   i % 4 = 3     the upstream resets: the client sends "RST\n", which
#                 mmpt-upstream --rst-word answers with a reset; the client
#                 waits for the connection to end, then closes.
# So half end with a FIN and half with a reset, a quarter of them from the
# upstream's side. Each connection claims its own client (203.0.113.1-200 x
# ports 30000-30099), so the proxy's transparent binds never collide, not even
# with a TIME_WAIT left by an earlier one.
#
# Afterwards (a few seconds to settle) the proxy must be back to where it
# started:
#   - its fd count equals the baseline exactly (--listeners 1, as in t06: no
#     listener thread allocates late);
#   - with the sockmap engine, every map that holds per-flow state is empty:
#     mmp_socks, mmp_peers (SOCKHASHes), mmp_sockdir, mmp_flows (bpftool).
# The run must take less than 2 minutes on 2 cores.
source "$(dirname "$0")/lib.sh"
t_setup t09

N=20000
WINDOW=200
LIMIT_S=120
SETTLE_S=10
SOCKMAP_MAPS=(mmp_socks mmp_peers mmp_sockdir mmp_flows)

is_sockmap() { is_bpf && [[ $MMP_ENGINE == sockmap ]]; }
if is_sockmap; then
	for cmd in bpftool jq; do
		command -v "$cmd" >/dev/null || {
			echo "FAIL t09 setup: $cmd is not installed (make deps)"
			exit 1
		}
	done
fi

t_require up_start --rst-word 'RST\n'
t_require mmp_start --listeners 1

# map_entries NAME: the number of entries in a pinned map (-1: unreadable).
map_entries() {
	local n
	n=$(bpftool -j map dump pinned "$MMP_PINDIR/$1" 2>/dev/null | jq length 2>/dev/null)
	echo "${n:--1}"
}
# maps_summary: MAPS_SUMMARY="mmp_socks=0 mmp_peers=0 ...", MAPS_TOTAL the sum
# (an unreadable map counts as a million).
maps_summary() {
	local m n
	MAPS_TOTAL=0 MAPS_SUMMARY=""
	for m in "${SOCKMAP_MAPS[@]}"; do
		n=$(map_entries "$m")
		if ((n < 0)); then
			MAPS_TOTAL=$((MAPS_TOTAL + 1000000))
			n=unreadable
		else
			MAPS_TOTAL=$((MAPS_TOTAL + n))
		fi
		MAPS_SUMMARY+="${MAPS_SUMMARY:+ }$m=$n"
	done
}

NCONNS=0
# Baseline: an idle proxy that has served connections (lazy allocations done).
case_begin "1 baseline before the churn"
echo_via_proxy "203.0.113.250:1000" "203.0.113.1:443"
echo_via_proxy "203.0.113.250:1001" "203.0.113.1:443"
NCONNS=$((NCONNS + 2))
sleep 0.3
base_fds=$(mmp_fds)
if is_sockmap; then
	maps_summary
	((MAPS_TOTAL == 0)) || case_fail "sockmap maps not empty while idle: $MAPS_SUMMARY"
	case_note "$base_fds fds; $MAPS_SUMMARY"
else
	case_note "$base_fds fds"
fi
case_end

case_begin "2 churn: $N connections opened, echoed and closed, $WINDOW at a time, half FIN, half RST"
up_marks
t0=$(date +%s%N)
flood_out=$(ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-flood" -c "127.0.0.1:$PROXY_PORT" -n "$N" \
	--dst 203.0.113.1:443 --net 203.0.113. --hosts 200 --port-base 30000 --window "$WINDOW" \
	--close mix --expect-file "$T_TMP/flood-expect" --timeout $((LIMIT_S - 10)) 2>&1)
flood_rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
NCONNS=$((NCONNS + N))
flood_line=$(grep '^flood ' <<<"$flood_out")
churn_line=$(grep '^churn ' <<<"$flood_out")
((flood_rc == 0)) || case_fail "flood: $(tr '\n' ' ' <<<"$flood_out" | cut -c1-600)"
read -r _ _ nok _ nfailed _ openmax _ <<<"$flood_line"
read -r _ _ nfin _ nrst _ nuprst _ nupreset _ nupeof <<<"$churn_line"
((ms < LIMIT_S * 1000)) || case_fail "took $ms ms, limit $LIMIT_S s"
((${openmax:-0} <= WINDOW)) || case_fail "$openmax connections open at once, window $WINDOW"
# Every claimed client reached the IPv4 upstream exactly once.
check_flood_clients "$T_TMP/flood-expect"
# A reset from the upstream is forwarded as a reset, not as a FIN.
if is_bpf; then
	((${nupeof:-0} == 0)) || case_fail "$nupeof of $nuprst upstream resets reached the client as a FIN"
else
	case_skip_part "upstream resets forwarded as resets: mmproxy-bpf only"
fi
rate=$((N * 1000 / (ms > 0 ? ms : 1)))
case_note "ok ${nok:-?} failed ${nfailed:-?} in $ms ms ($rate conn/s, limit $LIMIT_S s), at most ${openmax:-?} open; FIN ${nfin:-?}, client RST ${nrst:-?}, upstream RST ${nuprst:-?} (seen as reset ${nupreset:-?}, as EOF ${nupeof:-?})"
case_end

case_begin "3 after the churn: the proxy's fds and the sockmap maps are back to baseline"
t1=$(date +%s%N)
fds=-1 maps="" settled=0
deadline=$(($(date +%s) + SETTLE_S))
while :; do
	fds=$(mmp_fds)
	if is_sockmap; then
		maps_summary
		maps=$MAPS_SUMMARY
		((fds == base_fds && MAPS_TOTAL == 0)) && settled=1
	elif is_bpf; then
		((fds == base_fds)) && settled=1
	else
		settled=1 # go-mmproxy: nothing to wait for (not asserted)
	fi
	((settled || $(date +%s) >= deadline)) && break
	sleep 0.1
done
settle_ms=$((($(date +%s%N) - t1) / 1000000))
if ((!settled)); then
	if is_bpf && ((fds != base_fds)); then
		case_fail "proxy holds $fds fds after $SETTLE_S s, baseline $base_fds (leak of $((fds - base_fds)))"
	fi
	if is_sockmap && ((MAPS_TOTAL != 0)); then
		case_fail "sockmap maps not empty after $SETTLE_S s: $maps"
		# What is left, for the report: one flow and one sockdir entry.
		echo "# leftover mmp_flows entry: $(bpftool -j map dump pinned "$MMP_PINDIR/mmp_flows" 2>/dev/null | jq -c '.[0].formatted' 2>/dev/null)"
		echo "# leftover mmp_sockdir entry: $(bpftool -j map dump pinned "$MMP_PINDIR/mmp_sockdir" 2>/dev/null | jq -c '.[0].formatted' 2>/dev/null)"
	fi
fi
if is_bpf; then
	case_note "settled in $settle_ms ms: $fds fds (baseline $base_fds)${maps:+; $maps}"
else
	case_skip_part "fd count and maps: mmproxy-bpf only"
fi
is_sockmap || case_skip_part "sockmap maps: the $MMP_ENGINE engine has none"
echo_via_proxy "203.0.113.250:1002" "203.0.113.1:443" # still serving
NCONNS=$((NCONNS + 1))
case_end

mmp_stop
case_engine_used "$NCONNS"
case_lifecycle
t_finish
