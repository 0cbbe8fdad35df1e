#!/usr/bin/env bash
# t51: soak (issue 26, "Soak"). 60 s of mixed TCP and UDP load while both
# proxies, a TCP instance and a UDP instance, are SIGKILLed and restarted
# every 10 s with the same flags and pin directories (so tc flows are
# adopted), then stopped and cleaned up.
#   load: four loops of byte-exact TCP transfers (256 KiB each way, mmpt-client
#         --send against mmpt-upstream xfer, the upstream verifying the
#         client's stream) and one loop of UDP flows (20 clients, 40 echoed
#         datagrams each, PROXY v2), each with fresh client addresses;
#   1 no accepted byte is corrupted: every transfer that completed carried
#     exactly the stream it should, both ways; every partial one a correct
#     prefix (a kill cuts flows held in userspace: that is allowed); every
#     UDP reply matched what was sent; and most transfers completed;
#   2 after SIGTERM and `cleanup`: no pin, no TC filter in the namespace, none
#     of the maps seen pinned during the run still exists, no proxy process.
source "$(dirname "$0")/lib.sh"
t_setup t51

if ! is_bpf; then
	case_begin "soak"
	case_skip "restarts with adoption and cleanup are mmproxy-bpf's"
	t_finish
fi

# 60 s under tc (adoption, the UDP fast path); 30 s under the userspace
# engines, whose flows die with the proxy anyway: CI runs every engine.
DURATION=${MMP_SOAK_S:-60}
[[ $MMP_ENGINE == tc || -n ${MMP_SOAK_S:-} ]] || DURATION=30
KILL_EVERY=10
SIZE=262144
UDP_PORT=$((PROXY_PORT + 1)) UDP_UP_PORT=$((UP_PORT + 1))
TCP_PIN="/sys/fs/bpf/mmproxy-bpf-test-$$-soak-tcp"
UDP_PIN="/sys/fs/bpf/mmproxy-bpf-test-$$-soak-udp"
cleanup_push "rm -rf '$TCP_PIN' '$UDP_PIN'"
UDP_ENGINE=splice
[[ $MMP_ENGINE == tc ]] && UDP_ENGINE=tc
if [[ $UDP_ENGINE == tc ]]; then
	ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1
fi
MMP_TC_HANDOFF_DELAY=20 # the default: short flows stay on splice, long ones go to the kernel
STOP="$T_TMP/stop"

t_require up_start -m xfer --send "$SIZE" --verify-seed 1
proc_start UDP_UP_PID "$T_TMP/udp-up.log" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-udp" echo -l "127.0.0.1:$UDP_UP_PORT"
wait_grep "$T_TMP/udp-up.log" '^listening' 5 || exit 1

N_STARTS=0
# start_both: the two proxies, always with the same flags and pin directories.
start_both() {
	N_STARTS=$((N_STARTS + 1))
	mmp_start -l "0.0.0.0:$PROXY_PORT" --listeners 2 --pin-dir "$TCP_PIN" || return 1
	TCP_PID=$MMP_PID
	proc_start UDP_PID "$T_TMP/udp-proxy-$N_STARTS.log" "$TOPO_PROXY" "$MMP_BIN" run -p udp --udp-any-source \
		-l "0.0.0.0:$UDP_PORT" -4 "127.0.0.1:$UDP_UP_PORT" -6 "[::1]:$UDP_UP_PORT" --listeners 2 \
		--engine "$UDP_ENGINE" --pin-dir "$UDP_PIN" -v 1
	wait_grep "$T_TMP/udp-proxy-$N_STARTS.log" 'listening on' 10 || {
		MMP_START_ERR="the UDP proxy did not start: $(tail -n 3 "$T_TMP/udp-proxy-$N_STARTS.log" | tr '\n' ' ')"
		return 1
	}
}

# record_maps: the IDs of every map pinned by either instance now.
record_maps() {
	local f
	for f in "$TCP_PIN"/mmp_* "$UDP_PIN"/mmp_*; do
		[[ -e $f ]] && bpftool -j map show pinned "$f" 2>/dev/null | jq -r '.id' 2>/dev/null
	done >>"$T_TMP/map-ids"
}

# tcp_loop K: transfers until STOP exists, one fresh client address per transfer.
tcp_loop() {
	local k=$1 i=0 out
	while [[ ! -e $STOP ]]; do
		i=$((i + 1))
		out=$(ns_exec "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-client" -c "$TOPO_PROXY_IP4:$PROXY_PORT" \
			--pp2 "203.0.113.$((k * 50 + i % 50 + 1)):$((20000 + i))" "198.51.100.1:443" \
			--send "$SIZE" --timeout 10 2>&1)
		echo "$(grep -m1 '^xfer ' <<<"$out" || echo "fail ${out//$'\n'/ }")"
	done >"$T_TMP/tcp-$k.log"
}

# udp_loop: flows of 20 clients until STOP exists.
udp_loop() {
	local i=0 out
	while [[ ! -e $STOP ]]; do
		i=$((i + 1))
		out=$(ns_exec "$TOPO_CLIENT" "$MMP_TOOLS/mmpt-udp" send -c "$TOPO_PROXY_IP4:$UDP_PORT" --format v2 \
			--client "203.0.114.$((i % 200 + 1)):30000" --clients 20 -n 40 --rate 800 --echo --timeout 2 2>&1)
		echo "$(grep -m1 '^result' <<<"$out" || echo "fail ${out//$'\n'/ }")"
	done >"$T_TMP/udp.log"
}

t_require start_both
record_maps
LOAD_PIDS=()
for k in 0 1 2 3; do
	tcp_loop $k &
	LOAD_PIDS+=($!)
done
udp_loop &
LOAD_PIDS+=($!)
cleanup_push "touch '$STOP'"

KILLS=0
for ((t = KILL_EVERY; t < DURATION; t += KILL_EVERY)); do
	sleep "$KILL_EVERY"
	record_maps
	MMP_RUNNING=0 # killed on purpose: case_end must not report it as a crash
	kill -KILL "$TCP_PID" "$UDP_PID" 2>/dev/null
	wait "$TCP_PID" "$UDP_PID" 2>/dev/null
	KILLS=$((KILLS + 1))
	if ! start_both; then
		case_begin "restart $KILLS"
		case_fail "$MMP_START_ERR"
		case_end
		break
	fi
done
sleep "$KILL_EVERY" # the last stretch ends with SIGTERM (case 2)
touch "$STOP"
wait "${LOAD_PIDS[@]}" 2>/dev/null

case_begin "1 no accepted byte corrupted through $KILLS SIGKILLs (TCP and UDP)"
cat "$T_TMP"/tcp-*.log >"$T_TMP/tcp.log"
total=$(wc -l <"$T_TMP/tcp.log")
complete=$(awk -v n="$SIZE" '$1 == "xfer" && $3 == n && $6 == n' "$T_TMP/tcp.log" | wc -l)
# The upstream's stream (seed 2) has one hash: every complete download must carry it.
want=$(grep -m1 '^done .* verify ok' "$UP4_LOG" | awk '{print $6}')
bad_down=$(awk -v n="$SIZE" -v h="$want" '$1 == "xfer" && $6 == n && $7 != h' "$T_TMP/tcp.log" | wc -l)
bad_up=$(grep -c 'first_diff' "$UP4_LOG")
((bad_down == 0)) || case_fail "$bad_down complete downloads with the wrong bytes: $(awk -v n="$SIZE" -v h="$want" '$1 == "xfer" && $6 == n && $7 != h' "$T_TMP/tcp.log" | head -1)"
((bad_up == 0)) || case_fail "$bad_up uploads with wrong bytes at the upstream: $(grep -m1 first_diff "$UP4_LOG")"
[[ -n $want ]] || case_fail "no transfer completed"
# Flows held in userspace die with the proxy; the rest must complete.
((complete * 2 >= total)) || case_fail "only $complete of $total transfers completed"
udp_runs=$(grep -c '^result' "$T_TMP/udp.log")
udp_bad=$(awk '$1 == "result" { for (i = 2; i < NF; i++) if ($i == "bad") s += $(i + 1) } END { print s + 0 }' "$T_TMP/udp.log")
udp_echoed=$(awk '$1 == "result" { for (i = 2; i < NF; i++) if ($i == "echoed") s += $(i + 1) } END { print s + 0 }' "$T_TMP/udp.log")
((udp_bad == 0)) || case_fail "$udp_bad UDP replies did not match what was sent"
((udp_echoed > 0)) || case_fail "no UDP datagram came back: $(tail -n 1 "$T_TMP/udp.log")"
case_note "$complete of $total TCP transfers complete, $udp_runs UDP runs with $udp_echoed replies, $KILLS kills, $N_STARTS starts"
case_end

case_begin "2 after SIGTERM and cleanup: no pin, filter, map or process left"
record_maps
mmp_stop
proc_stop "$UDP_PID" 10
for pin in "$TCP_PIN" "$UDP_PIN"; do
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$pin" 2>&1) ||
		case_fail "cleanup --pin-dir $pin: $out"
done
for pin in "$TCP_PIN" "$UDP_PIN"; do
	[[ -n $(find "$pin" -mindepth 1 2>/dev/null) ]] && case_fail "pins left in $pin: $(ls "$pin" | head -3 | tr '\n' ' ')"
done
for dev in lo veth-p; do
	for hook in ingress egress; do
		f=$(tc -n "$TOPO_PROXY" filter show dev "$dev" "$hook" 2>/dev/null)
		[[ -n $f ]] && case_fail "a filter is left on $dev $hook: $(head -1 <<<"$f")"
	done
done
sleep 1 # the kernel frees maps after an RCU grace period
left=0
for id in $(sort -u "$T_TMP/map-ids"); do
	bpftool map show id "$id" >/dev/null 2>&1 && left=$((left + 1)) && lid=$id
done
((left == 0)) || case_fail "$left maps seen pinned during the run still exist (e.g. $(bpftool map show id "$lid" | head -1))"
for pid in $TCP_PID $UDP_PID; do
	proc_alive "$pid" && case_fail "proxy $pid still runs"
done
case_note "$(sort -u "$T_TMP/map-ids" | wc -l) maps seen, none left"
case_end

case_lifecycle
t_finish
