#!/usr/bin/env bash
# t55: no connection lost when the per-user pipe limits are reached (issue 24).
#
# At 1,000 streams the splice engine's pipes passed fs.pipe-user-pages-soft:
# past it pipe2() gives 8 KiB pipes and F_SETPIPE_SZ answers EPERM, past
# fs.pipe-user-pages-hard pipe2() fails with ENFILE (fs/pipe.c; man 7 pipe).
# The old code then cut connections with a wrong hint ("failed to create a
# splice pipe: Resource temporarily unavailable (raise the open-files
# limit)"). Now such a direction copies through userspace (docs/DESIGN.md §3d,
# "Pipes refused").
#
# The limits bind only processes without CAP_SYS_RESOURCE and CAP_SYS_ADMIN:
# the proxy drops both after set-up (user/lib/privileges.c), which case 0
# checks, so they apply to it although it runs as root. They are global
# sysctls, not per network namespace: saved, lowered only while this file's
# transfers run (root's other capable processes are exempt), and restored
# right after, and in the EXIT trap whatever happens.
#
#   0 the running proxy has neither CAP_SYS_RESOURCE nor CAP_SYS_ADMIN
#   1 fs.pipe-user-pages-soft=1: every new pipe is 8 KiB and cannot grow
#   2 fs.pipe-user-pages-soft=1, fs.pipe-user-pages-hard=1: pipe2() fails
#   1c (splice) as 2 with --lift-pipe-limits: the pipes are made with
#     CAP_SYS_RESOURCE raised (CAP_SYS_ADMIN where this host's bounding set
#     lacks the first, as CI's does), so no flow copies; the proxy holds that
#     capability permitted, never effective between pipes
#   1d --lift-pipe-limits refused with one line naming cause and fix: without
#     either capability (setpriv), and with --engine auto
#   1b (splice) fs.pipe-user-pages-soft at 48 pages per pipe: 256 KiB pipes
#     for all (64 pages) would not fit, and flows fell back; with the pipe
#     budget (half the soft limit for grown pipes, 64 KiB after) none does
#   2b (tc) as 1, with hand-offs put off 300 ms: flows that copy without a
#     pipe are then handed to the kernel, byte-exact
#   2c (tc) as 2b flat out with 16M: the flows handed off keep moving into
#     the far peer's small window, not one window per 200 ms probe
#   3 the sysctls are back as they were
# Each case: T55_CONNS echo streams flat out (mmpt-bidir --echo, every buffer
# full both ways), T55_SIZE each way: all byte-exact both ways (sha256), none
# lost. With the splice engine every connection falls back (pipe_fallbacks
# in `stats --json` and in the exit totals = T55_CONNS) with one -v 1 line
# naming the sysctl; tc's flows go through splice until their hand-off and
# sockmap's flows need no pipe, so there the fallback count is only bounded,
# and every line there is must name the right cause. No line may say
# "failed to create a splice pipe".
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
if ! is_bpf; then
	echo "SKIP t55 pipe limits: mmproxy-bpf only (stats, its log lines)"
	exit 0
fi
t_setup t55

# Small socket buffers in the test's own namespace (tcp_[rw]mem are per
# netns): with loopback's defaults (up to 4 and 6 MiB) a few MiB fit in the
# buffers and no destination is ever full, so no direction ever has to park
# bytes, which is where the old code cut connections.
if ! ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.tcp_wmem="4096 16384 131072" net.ipv4.tcp_rmem="4096 65536 131072"; then
	echo "FAIL t55 setup: cannot set net.ipv4.tcp_wmem/tcp_rmem in the proxy namespace"
	exit 1
fi

N=${T55_CONNS:-24}
SIZE=${T55_SIZE:-4M}
SOFT0=$(cat /proc/sys/fs/pipe-user-pages-soft)
HARD0=$(cat /proc/sys/fs/pipe-user-pages-hard)
limits_restore() { sysctl -qw fs.pipe-user-pages-soft="$SOFT0" fs.pipe-user-pages-hard="$HARD0"; }
cleanup_push limits_restore

# cap_permitted N: the proxy holds capability N in its permitted set.
cap_permitted() {
	local prm
	prm=$(awk '/^CapPrm:/ { print $2 }' "/proc/$MMP_PID/status")
	[[ -n $prm ]] && (((0x$prm >> $1) & 1))
}

# lift_caps_check: with --lift-pipe-limits the proxy keeps, permitted only,
# CAP_SYS_RESOURCE (24) where this shell's bounding set has it, else
# CAP_SYS_ADMIN (21), and not the other.
lift_caps_check() {
	local bnd keep=21 other=24 name=CAP_SYS_ADMIN
	bnd=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
	(((0x$bnd >> 24) & 1)) && keep=24 other=21 name=CAP_SYS_RESOURCE
	cap_permitted $keep || case_fail "--lift-pipe-limits: $name is not permitted after set-up, so no pipe can raise it"
	cap_permitted $other && case_fail "--lift-pipe-limits: capability $other is still permitted after set-up"
	[[ $name == CAP_SYS_ADMIN ]] && ! grep -q "no CAP_SYS_RESOURCE, so CAP_SYS_ADMIN is kept instead" "$MMP_LOG" &&
		case_fail "--lift-pipe-limits kept CAP_SYS_ADMIN without the warning that says so"
	case_note "kept $name, permitted only"
}

# caps_dropped: the proxy holds neither CAP_SYS_ADMIN (21) nor CAP_SYS_RESOURCE (24).
caps_dropped() {
	local eff
	eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$MMP_PID/status")
	[[ -n $eff ]] && (((0x$eff >> 21) & 1)) && return 1
	[[ -n $eff ]] && (((0x$eff >> 24) & 1)) && return 1
	[[ -n $eff ]]
}

# stats_fallbacks: pipe_fallbacks from `stats --json` (the counters are published once a second).
stats_fallbacks() {
	"$MMP_BIN" stats --pin-dir "$MMP_PINDIR" --json 2>/dev/null | grep -o '"pipe_fallbacks": *[0-9]*' | grep -o '[0-9]*$'
}

# limits_case NAME SOFT HARD CAUSE PORT_BASE: the transfers under the lowered limits.
limits_case() {
	local name=$1 soft=$2 hard=$3 cause=$4 pbase=$5
	local out="$T_TMP/bidir-$pbase.out" mark ok bad lines right cut stats total ms t0
	case_begin "$name"
	if ! mmp_start ${LIFT:+--lift-pipe-limits}; then
		case_fail "$MMP_START_ERR"
		case_end
		return
	fi
	sleep 0.3 # set-up done: capabilities dropped
	caps_dropped || case_fail "the proxy kept CAP_SYS_ADMIN or CAP_SYS_RESOURCE effective: the pipe limits would not apply"
	[[ -n ${LIFT:-} ]] && lift_caps_check
	mark=$(log_mark "$MMP_LOG")
	t0=$(date +%s%N)
	sysctl -qw fs.pipe-user-pages-soft="$soft" fs.pipe-user-pages-hard="$hard"
	tc_run_bidir "$TOPO_PROXY" "$out" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n "$N" --parallel "$N" \
		--size "$SIZE" ${RATE:+--rate "$RATE"} --echo --net 203.0.113. --port-base "$pbase" --timeout 30
	limits_restore
	ms=$((($(date +%s%N) - t0) / 1000000))
	sleep 1.2 # one publication of the counters
	stats=$(stats_fallbacks)
	ok=$(grep -c '^conn .* up [0-9]* ok down [0-9]* ok$' "$out")
	bad=$(grep '^conn ' "$out" | grep -v ' up [0-9]* ok down [0-9]* ok$' | head -3 | tr '\n' ';')
	((ok == N)) || case_fail "$ok of $N connections byte-exact both ways, $((N - ok)) lost (e.g. ${bad:-$(tail -n 2 "$out" | tr '\n' ' ')})"
	((TC_STALLS == 0)) || case_fail "$TC_STALLS connections moved no byte for 2 s (first: $TC_STALL_DIAG)"
	lines=$(log_since "$MMP_LOG" "$mark" | grep -c 'no splice pipe for the')
	right=$(log_since "$MMP_LOG" "$mark" | grep 'no splice pipe for the' | grep -c -- "$cause.*copying this flow through userspace; raise the sysctl")
	cut=$(log_since "$MMP_LOG" "$mark" | grep -c 'failed to create a splice pipe\|closed: no splice pipe')
	((cut == 0)) || case_fail "$cut connections cut for want of a pipe: $(log_since "$MMP_LOG" "$mark" | grep -m1 'splice pipe' | cut -c1-160)"
	((right == lines)) || case_fail "$((lines - right)) of $lines fallback lines do not name '$cause': $(log_since "$MMP_LOG" "$mark" | grep 'no splice pipe for the' | grep -v -m1 -- "$cause" | cut -c1-200)"
	proc_alive "$MMP_PID" || case_fail "the proxy died"
	mmp_stop
	total=$(grep -m1 'totals: ' "$MMP_LOG" | sed -n 's/.*pipe fallbacks \([0-9]*\).*/\1/p')
	[[ ${stats:-x} == "${total:-y}" ]] || case_fail "stats --json says pipe_fallbacks ${stats:-missing}, the exit totals ${total:-missing}"
	((${total:-0} == lines)) || case_fail "pipe fallbacks ${total:-missing} counted, $lines lines logged"
	case $MMP_ENGINE in
	splice) if [[ -n ${EXPECT_FALLBACKS:-} ]]; then
			((lines == EXPECT_FALLBACKS)) || case_fail "$lines of $N connections fell back, expected $EXPECT_FALLBACKS"
		else
			((lines == N)) || case_fail "$lines of $N connections fell back: every long flow's pipe was refused"
		fi ;;
	*) ((lines <= N)) || case_fail "$lines fallbacks for $N connections" ;;
	esac
	((${HANDOFF_CHECK:-0})) && handoff_check "$mark"
	((${WINDOW_CHECK:-0})) && window_check "$mark" "$ms"
	case_note "$ok/$N exact both ways, $SIZE each way, $ms ms; pipe fallbacks $total (stats --json $stats); e.g. $(log_since "$MMP_LOG" "$mark" | grep -m1 'no splice pipe for the' | sed 's/^mmproxy-bpf: //' | cut -c1-200)"
	case_end
}

# handoff_check MARK (tc, -v 2): flows that fell back to copying were then
# handed to the kernel: the hand-off drains what the copy buffers hold as it
# drains the pipes (drain_state), so the kernel path is not lost either.
handoff_check() {
	local mark=$1 fell both=0 kernel c
	fell=$(log_since "$MMP_LOG" "$mark" | grep 'no splice pipe for the' | sed -n 's/.*client \([0-9.]*:[0-9]*\): no splice pipe.*/\1/p' | sort -u)
	kernel=$(log_since "$MMP_LOG" "$mark" | grep -c 'spliced in the kernel after')
	for c in $fell; do
		log_since "$MMP_LOG" "$mark" | grep -q "client $c spliced in the kernel after" && both=$((both + 1))
	done
	[[ -n $fell ]] || case_fail "no flow fell back before its hand-off: the case tested nothing (raise T55_SIZE?)"
	((both > 0)) || case_fail "none of the $(wc -w <<<"$fell") flows that copied without a pipe reached the kernel ($kernel flows did)"
	case_note "$both of $(wc -w <<<"$fell") flows that copied without a pipe then handed to the kernel ($kernel in all)"
}

# window_check MARK MS (tc, -v 2): flows reached the kernel, and none moved
# by window probes there (a flow whose far receiver's window never holds one
# of its sender's segments moves 64 KiB per 200 ms: 16M takes 50 s, past
# the tool's 30 s timeout, which limits_case reports as lost).
window_check() {
	local mark=$1 ms=$2 kernel slow
	kernel=$(log_since "$MMP_LOG" "$mark" | grep -c 'spliced in the kernel after')
	slow=$(grep '^conn ' "$T_TMP/bidir-$WINDOW_PORT.out" | sed -n 's/.* ms \([0-9.]*\) .*/\1/p' | sort -n | tail -n 1)
	((kernel > 0)) || case_fail "no flow reached the kernel: the case tested nothing"
	case_note "$kernel of $N flows in the kernel; slowest flow ${slow:-?} ms, all $ms ms"
}

case_begin "0 the proxy runs without CAP_SYS_RESOURCE and CAP_SYS_ADMIN, so the pipe limits bind it"
if mmp_start; then
	sleep 0.3
	caps_dropped || case_fail "CapEff $(awk '/^CapEff:/ { print $2 }' "/proc/$MMP_PID/status") has CAP_SYS_ADMIN or CAP_SYS_RESOURCE"
	mmp_stop
else
	case_fail "$MMP_START_ERR"
fi
case_end

limits_case "1 fs.pipe-user-pages-soft=1 (8 KiB pipes, F_SETPIPE_SZ refused): $N echo streams byte-exact, none lost" \
	1 "$HARD0" "per-user pipe buffer limit reached (fs.pipe-user-pages-soft" 37000
if [[ $MMP_ENGINE == splice ]]; then
	# 2N pipes at 48 pages each: the budget grows N*48/64 of them to 64 pages
	# (half the limit) and leaves the rest at 16, which leaves room for about
	# 40 pipes of root's other processes. The build before grew every pipe to
	# 64 pages: 17 of 24 flows fell back.
	EXPECT_FALLBACKS=0 limits_case \
		"1b fs.pipe-user-pages-soft=$((2 * N * 48)): the pipe budget leaves room for every pipe, no flow copies" \
		$((2 * N * 48)) "$HARD0" "per-user pipe buffer limit reached (fs.pipe-user-pages-soft" 36000
else
	case_begin "1b the pipe budget leaves room for every pipe"
	case_skip "engine $MMP_ENGINE does not grow its pipes"
fi
limits_case "2 fs.pipe-user-pages-hard=1 (pipe2 fails with ENFILE): $N echo streams byte-exact, none lost" \
	1 1 "per-user pipe buffer limit reached (fs.pipe-user-pages-hard" 38000
if [[ $MMP_ENGINE == splice ]]; then
	# Without the raise pipe2 fails (case 2): a count of 0 shows every pipe was made with the capability.
	LIFT=1 EXPECT_FALLBACKS=0 limits_case \
		"1c --lift-pipe-limits, fs.pipe-user-pages-soft=1 and -hard=1: pipes made with the capability raised, no flow copies" \
		1 1 "per-user pipe buffer limit reached" 34000
else
	case_begin "1c --lift-pipe-limits: pipes made past both limits"
	case_skip "--lift-pipe-limits takes --engine splice"
fi

# refused_start WHY PATTERN CMD...: CMD exits non-zero at once, its one error
# line matches PATTERN, and it leaves no pin directory behind.
refused_start() {
	local why=$1 pattern=$2 out rc
	shift 2
	out=$(timeout 10 ip netns exec "$TOPO_PROXY" "$@" 2>&1)
	rc=$?
	((rc != 0 && rc != 124)) || case_fail "$why: exit status $rc, expected a refusal"
	grep -q -- "$pattern" <<<"$out" || case_fail "$why: no line says '$pattern': $(grep -v libbpf <<<"$out" | tail -n 2 | tr '\n' ' ')"
	[[ ! -e $T_TMP/pins-refused ]] || case_fail "$why: left its pin directory"
}

case_begin "1d --lift-pipe-limits refused without CAP_SYS_RESOURCE and CAP_SYS_ADMIN, and with --engine auto, with the fix named"
refuse=("$MMP_BIN" run -l "127.0.0.1:$PROXY_PORT" -4 "127.0.0.1:$UP_PORT" --pin-dir "$T_TMP/pins-refused" --lift-pipe-limits)
refused_start "without CAP_SYS_RESOURCE and CAP_SYS_ADMIN" "missing capability CAP_SYS_RESOURCE: --lift-pipe-limits .*or drop --lift-pipe-limits" \
	setpriv --inh-caps=-all --bounding-set=-sys_resource,-sys_admin -- "${refuse[@]}" --engine splice
refused_start "with --engine auto" "--lift-pipe-limits sizes the relay pipes of TCP flows, which only --engine splice grows" \
	"${refuse[@]}" --engine auto
case_end

if [[ $MMP_ENGINE == tc ]]; then
	# The hand-off put off until the flows copy without pipes (each moves
	# 128 KiB by recv/send first, then asks for its pipe). At 2 MB/s a
	# direction, the pace the tool's old hand-written hash set: flat out,
	# 4M flows ended about 430 ms in, most before their hand-off.
	RATE=${T55_RATE_2B-2M} SIZE=${T55_SIZE_2B:-4M} MMP_TC_HANDOFF_DELAY=300 MMP_VERBOSITY=2 HANDOFF_CHECK=1 limits_case \
		"2b tc: fs.pipe-user-pages-soft=1, hand-offs after 300 ms: flows that copy without a pipe reach the kernel, byte-exact" \
		1 "$HARD0" "per-user pipe buffer limit reached (fs.pipe-user-pages-soft" 39000
	# Flat out, 16M: lo's 65,483-byte segments against 128 KiB buffers.
	# The bound once locked the proxy's buffers at 256 KiB, so the load
	# balancer kept 65,483-byte segments, and after the switch 5-13 of 24
	# flows met an upstream window stuck at 65,024 and moved one window per
	# 200 ms probe until the 30 s timeout (docs/DESIGN.md §3b, "Bounded
	# queues").
	SIZE=${T55_SIZE_2C:-16M} MMP_TC_HANDOFF_DELAY=${T55_DELAY_2C:-300} MMP_VERBOSITY=2 WINDOW_CHECK=1 WINDOW_PORT=35000 limits_case \
		"2c tc: as 2b flat out, 16M: flows in the kernel take the far receiver's small window, byte-exact and on time" \
		1 "$HARD0" "per-user pipe buffer limit reached (fs.pipe-user-pages-soft" 35000
else
	case_begin "2b tc: flows that copy without a pipe still reach the kernel"
	case_skip "engine $MMP_ENGINE has no tc hand-off"
	case_begin "2c tc: flows in the kernel take the far receiver's small window"
	case_skip "engine $MMP_ENGINE has no tc hand-off"
fi

case_begin "3 the pipe limits are back as they were"
[[ $(cat /proc/sys/fs/pipe-user-pages-soft) == "$SOFT0" && $(cat /proc/sys/fs/pipe-user-pages-hard) == "$HARD0" ]] ||
	case_fail "fs.pipe-user-pages-soft/hard are $(cat /proc/sys/fs/pipe-user-pages-soft)/$(cat /proc/sys/fs/pipe-user-pages-hard), were $SOFT0/$HARD0"
case_end

case_lifecycle
t_finish
