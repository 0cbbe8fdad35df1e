#!/usr/bin/env bash
# t08: a slow upstream must not make the sockmap engine pile up kernel memory.
# Sockmap engine only (SKIP otherwise): the splice engine's pipes are bounded
# by construction.
#
# The load balancer (mmpt-client with a hand-made v2 header, in the proxy
# namespace) sends 1 GiB; the upstream (mmpt-upstream -m xfer --pause-after)
# reads the first PAUSE_AFTER bytes, then stops reading for 5 s, then reads
# the rest, checking every byte against the client's stream (--verify-seed).
# During the stall the client keeps trying to send.
#
# Why (docs/DESIGN.md §3a item 7): the kernel's redirect path has no backpressure. The
# verdict reopens the client's window at once and queues the skb on the
# upstream socket's psock, unaccounted; a prototype held 1.1 GB after 3 s.
# The engine bounds what is in flight toward the peer with --max-queued
# (default 4 MiB, not passed here): past it the verdict holds the bytes back
# in the client socket's receive queue, which TCP accounts, so the window
# closes.
#
# Measures, sampled every ~0.25 s during the stall:
#   - MemAvailable (/proc/meminfo): system-wide, and the only one that sees
#     skbs queued on a psock (they are charged to no socket). The assertion:
#     its largest drop from just before the transfer stays within 64 MiB plus
#     the buffers of the four sockets that carry the data (client send, proxy
#     receive, proxy send, upstream receive: 2 x tcp_wmem max + 2 x tcp_rmem
#     max, read in the proxy namespace).
#   - sockstat "TCP ... mem" (pages): reported only. In /proc/net/sockstat,
#     "inuse" and "tw" are per network namespace but "mem" (and "alloc",
#     "orphan") are global; and "mem" counts only memory charged to TCP
#     sockets, so it misses exactly the psock queue this test is about.
#   - the flow's mmp_flows entry (bpftool): "paused" and held-back ("passed")
#     bytes, which show the bound is active (not just a slow transfer); and
#     "absorbed": the bytes the proxy took from the client that the upstream
#     has not read, also asserted within the allowance (exact, and unaffected
#     by other processes).
#   - the psock backlog, what the verdict compares with --max-queued:
#     redirected + forwarded by userspace - taken into the upstream socket's
#     send queue (ss: bytes_acked + Send-Q - the flow's peer_base); asserted
#     within --max-queued + 1 MiB (the verdict checks before adding an skb).
#     The three reads are not atomic, but every counter only grows and the
#     subtracted one is read last, so the value can only be underestimated.
#
# MemAvailable is system-wide, so other processes on a shared machine move it
# too (swings of 100 MiB within seconds were seen while benchmarks ran). When
# the drop is over the allowance but the exact, flow-local measures say the
# proxy held little (absorbed within the allowance, psock backlog within
# --max-queued + 1 MiB), the measurement is taken to be disturbed and the
# whole transfer is repeated, at most ATTEMPTS times in all; the lines say so.
# A real unbounded queue shows in the psock backlog and absorbed bytes, so it
# fails at once.
source "$(dirname "$0")/lib.sh"

if [[ ${MMP_ENGINE:-splice} != sockmap || $MMP_FLAVOR != bpf ]]; then
	echo "SKIP t08 slow upstream: sockmap engine only (MMP_ENGINE=${MMP_ENGINE:-splice}, $MMP_FLAVOR)"
	exit 0
fi
t_setup t08

SIZE=$((1 << 30))
PAUSE_AFTER=$((16 << 20))
PAUSE_MS=5000
MAX_QUEUED=$((4 << 20)) # mmproxy-bpf's default --max-queued
CLAIM_IP=203.0.113.9
CLAIM_PORT0=23000 # + attempt: a fresh claimed client per attempt
ATTEMPTS=3
MIB=1048576
BACKLOG_SLACK=$MIB # the verdict checks before adding an skb: one skb over at most

for cmd in bpftool jq; do
	command -v "$cmd" >/dev/null || {
		echo "FAIL t08 setup: $cmd is not installed (make deps)"
		exit 1
	}
done

# The allowance, from the proxy namespace's sysctls.
read -r _ _ RMEM_MAX <<<"$(ns_exec "$TOPO_PROXY" sysctl -n net.ipv4.tcp_rmem)"
read -r _ _ WMEM_MAX <<<"$(ns_exec "$TOPO_PROXY" sysctl -n net.ipv4.tcp_wmem)"
ALLOW=$((64 * MIB + 2 * RMEM_MAX + 2 * WMEM_MAX))
ALLOW_TXT="64 MiB + 2 x tcp_rmem max $((RMEM_MAX / MIB)) + 2 x tcp_wmem max $((WMEM_MAX / MIB)) = $((ALLOW / MIB)) MiB"

t_require mmp_start
t_require up_start -m xfer --send 0 --after-eof --pause-after "$PAUSE_AFTER" --pause-ms "$PAUSE_MS" --verify-seed 1

mem_avail_kb() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
tcp_mem_pages() { awk '/^TCP:/ {for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1)}' /proc/net/sockstat; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
# flow_state PORT: "bytes redirected passed paused peer_base client_cookie"
# of the client->upstream direction of the flow claiming PORT, or nothing.
flow_state() {
	bpftool -j map dump pinned "$MMP_PINDIR/mmp_flows" 2>/dev/null | jq -r --argjson p "$1" \
		'.[] | .formatted.value | select(.client.port == $p) |
		 "\(.up.bytes) \(.up.redirected) \(.up.passed) \(.up.paused) \(.up.peer_base) \(.client_cookie)"' 2>/dev/null
}
# forwarded COOKIE: the held-back bytes userspace has forwarded (mmp_sockdir).
forwarded() {
	bpftool -j map dump pinned "$MMP_PINDIR/mmp_sockdir" 2>/dev/null | jq -r --argjson c "$1" \
		'.[] | select(.formatted.key == $c) | .formatted.value.forwarded' 2>/dev/null
}
# up_sock_written PORT: bytes_acked + Send-Q of the proxy's upstream-side socket.
up_sock_written() {
	ns_exec "$TOPO_PROXY" ss -Htin state established "( src $CLAIM_IP:$1 )" 2>/dev/null |
		awk 'NR == 1 {q = $2} /bytes_acked:/ {for (i = 1; i <= NF; i++) if ($i ~ /^bytes_acked:/) {sub("bytes_acked:", "", $i); print $i + q}}'
}

# stall_run ATTEMPT: one 1 GiB transfer with a 5 s stall; sets the R_* results.
stall_run() {
	local port=$((CLAIM_PORT0 + $1)) mark base_kb base_tcp min_kb max_tcp kb tm t0 deadline
	local fbytes fredir fpassed fpaused fbase fcookie fwd written backlog absorbed pause_line
	R_PORT=$port R_ERR="" R_NSAMPLES=0 R_PAUSED=0 R_PASSED=0 R_ABSORBED=0 R_BACKLOG=-1 R_UPRECVD=0
	R_CL_LOG="$T_TMP/client-$1.log"
	mark=$(log_mark "$UP4_LOG")
	# Baseline just before the transfer: the median of three samples.
	base_kb=$( (mem_avail_kb; sleep 0.1; mem_avail_kb; sleep 0.1; mem_avail_kb) | sort -n | sed -n 2p)
	base_tcp=$(tcp_mem_pages)
	min_kb=$base_kb max_tcp=$base_tcp
	t0=$(date +%s%N)
	proc_start R_CL_PID "$R_CL_LOG" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -c "127.0.0.1:$PROXY_PORT" \
		--pp2 "$CLAIM_IP:$port" 203.0.113.1:443 --send "$SIZE" --timeout 150
	if ! pause_line=$(wait_log_since "$UP4_LOG" "$mark" "^pause $CLAIM_IP $port " 60); then
		R_ERR="the upstream never paused (client: $(tail -n 2 "$R_CL_LOG" | tr '\n' ' '))"
	else
		read -r _ _ _ _ R_UPRECVD <<<"$pause_line"
		# Sample until the upstream resumes (bounded in case it never says so).
		deadline=$(($(date +%s) + PAUSE_MS / 1000 + 10))
		while ! log_since "$UP4_LOG" "$mark" | grep -q "^resume $CLAIM_IP $port " && (($(date +%s) < deadline)); do
			kb=$(mem_avail_kb)
			((kb < min_kb)) && min_kb=$kb
			tm=$(tcp_mem_pages)
			((tm > max_tcp)) && max_tcp=$tm
			read -r fbytes fredir fpassed fpaused fbase fcookie <<<"$(flow_state "$port")"
			if [[ -n ${fbytes:-} ]]; then
				((fpaused)) && R_PAUSED=$((R_PAUSED + 1))
				((fpassed > R_PASSED)) && R_PASSED=$fpassed
				absorbed=$((fbytes - R_UPRECVD))
				((absorbed > R_ABSORBED)) && R_ABSORBED=$absorbed
				fwd=$(forwarded "$fcookie")
				written=$(up_sock_written "$port")
				if [[ -n $fwd && -n $written ]]; then
					backlog=$((fredir + fwd - (written - fbase)))
					((backlog > R_BACKLOG)) && R_BACKLOG=$backlog
				fi
			fi
			R_NSAMPLES=$((R_NSAMPLES + 1))
			sleep 0.2
		done
		log_since "$UP4_LOG" "$mark" | grep -q "^resume $CLAIM_IP $port " || R_ERR="the upstream never resumed"
	fi
	wait "$R_CL_PID" 2>/dev/null
	R_CL_STATUS=$?
	R_MS=$((($(date +%s%N) - t0) / 1000000))
	R_DONE=$(wait_log_since "$UP4_LOG" "$mark" "^done $CLAIM_IP $port " 10)
	# The disturbance gauge: MemAvailable once this flow's sockets are gone.
	sleep 0.5
	R_DROP=$(((base_kb - min_kb) * 1024))
	R_AFTER=$(((base_kb - $(mem_avail_kb)) * 1024))
	R_TCP_RISE=$(((max_tcp - base_tcp) * 4096))
}

# flow_local_ok: the exact measures of the last run are within bounds.
flow_local_ok() { ((R_ABSORBED <= ALLOW && R_BACKLOG <= MAX_QUEUED + BACKLOG_SLACK)); }

attempt=1 retried=""
while :; do
	stall_run "$attempt"
	# (No repeat once 100 s are gone: run-all.sh allows a file 240 s.)
	if ((R_DROP > ALLOW && attempt < ATTEMPTS && SECONDS < 100)) && [[ -z $R_ERR ]] && flow_local_ok; then
		retried+="attempt $attempt disturbed: MemAvailable -$(mib "$R_DROP") MiB while the flow held $(mib "$R_ABSORBED") MiB; "
		echo "# t08: MemAvailable dropped $(mib "$R_DROP") MiB while the flow held only $(mib "$R_ABSORBED") MiB (psock backlog $(mib "$R_BACKLOG") MiB): another process? repeating"
		attempt=$((attempt + 1))
		continue
	fi
	break
done
R_NOTE1="paused in $R_PAUSED of $R_NSAMPLES samples, held back up to $(mib "$R_PASSED") MiB, absorbed $(mib "$R_ABSORBED") MiB beyond the upstream's $(mib "$R_UPRECVD") MiB, psock backlog max $(mib "$R_BACKLOG") MiB (--max-queued $(mib "$MAX_QUEUED") MiB)"
retried=${retried%; }
R_NOTE2="MemAvailable drop max $(mib "$R_DROP") MiB, allowance $ALLOW_TXT; sockstat TCP mem (global) +$(mib "$R_TCP_RISE") MiB; $(mib "$R_AFTER") MiB down 0.5 s after the transfer${retried:+; $retried}"

case_begin "1 slow upstream: the bound is active during the $((PAUSE_MS / 1000)) s stall (flow paused, bytes held back)"
[[ -n $R_ERR ]] && case_fail "$R_ERR"
((R_NSAMPLES > 0)) || case_fail "no sample taken during the stall"
((R_PAUSED > 0)) || case_fail "mmp_flows never showed the flow paused in $R_NSAMPLES samples"
((R_PASSED > 0)) || case_fail "mmp_flows never showed held-back (passed) bytes"
((R_ABSORBED <= ALLOW)) ||
	case_fail "the proxy absorbed $(mib "$R_ABSORBED") MiB the upstream had not read (allowance $ALLOW_TXT)"
((R_BACKLOG <= MAX_QUEUED + BACKLOG_SLACK)) ||
	case_fail "the psock backlog reached $(mib "$R_BACKLOG") MiB (--max-queued $(mib "$MAX_QUEUED") MiB)"
((${#CASE_ERRS[@]})) && case_fail "measured: $R_NOTE1"
case_note "$R_NOTE1"
case_end

case_begin "2 slow upstream: kernel memory drop within $((ALLOW / MIB)) MiB during the stall"
if ((R_NSAMPLES == 0)); then
	case_fail "no sample taken during the stall"
elif ((R_DROP > ALLOW)); then
	case_fail "MemAvailable dropped by $(mib "$R_DROP") MiB: $R_NOTE2"
fi
case_note "$R_NOTE2"
case_end

case_begin "3 slow upstream: after the upstream resumes, $((SIZE / MIB)) MiB arrive whole (sha256 equal)"
read -r _ _ cs csh _ _ _ _ <<<"$(grep '^xfer ' "$R_CL_LOG")"
((R_CL_STATUS == 0)) || case_fail "client exited $R_CL_STATUS: $(tail -n 2 "$R_CL_LOG" | tr '\n' ' ')"
if [[ -z $R_DONE ]]; then
	case_fail "the upstream never finished (upstream: $(tail -n 2 "$UP4_LOG" | tr '\n' ' ')| client: $(tail -n 1 "$R_CL_LOG"))"
else
	read -r _ a p _ _ _ _ urn ursh _ <<<"$R_DONE"
	[[ $a == "$CLAIM_IP" && $p == "$R_PORT" ]] || case_fail "upstream saw $a:$p, claimed $CLAIM_IP:$R_PORT"
	[[ ${cs:-} == "$SIZE" ]] || case_fail "client sent ${cs:-nothing} bytes, want $SIZE"
	if [[ ${urn:-} != "${cs:-}" || ${ursh:-} != "${csh:-}" ]]; then
		case_fail "client sent ${cs:-?} bytes ${csh:0:12}, upstream got ${urn:-?} ${ursh:0:12} ($(grep -o 'first_diff.*' <<<"$R_DONE"))"
	fi
	grep -q ' error ' <<<"$R_DONE" && case_fail "upstream: error ${R_DONE#* error }"
fi
case_note "$((SIZE / MIB)) MiB in $R_MS ms including the $PAUSE_MS ms stall, sha256 ${csh:0:12} equal"
case_end

mmp_stop
case_lifecycle
t_finish
