#!/usr/bin/env bash
# t23: fd hygiene under injected faults (issue 10). Every error exit closes
# only what it opened: the proxy's fd census (/proc/PID/fd) returns to its
# baseline after each fault, and the proxy keeps serving.
#   a a tiny RLIMIT_NOFILE (prlimit, a little above the start-up need) and
#     more connections than fit: no crash, the refusals logged within a bound
#     (accept pauses 100 ms per EMFILE), fds back to baseline once the
#     clients close, then a new connection is served
#   b socket() failing for upstream connections (every 2nd, LD_PRELOAD
#     tests/tools/mmpt-faults.c): each failed connection closed with one
#     "upstream ... socket failed: Too many open files" line, fds at baseline
#   c pipe2() failing (every 2nd; splice, also auto/tc's first engine; sockmap
#     has no pipes): every connection served, copied through userspace where
#     its pipe failed, one "no splice pipe ... raise the open-files limit"
#     line per such connection, fds at baseline
source "$(dirname "$0")/lib.sh"
if ! is_bpf; then
	echo "SKIP t23 fd faults: mmproxy-bpf only (fd census, LD_PRELOAD)"
	exit 0
fi
SHIM=$MMP_TOOLS/mmpt-faults.so
if [[ ! -f $SHIM ]] || ! command -v prlimit >/dev/null; then
	echo "FAIL t23 setup: $SHIM or prlimit missing (make integration-tools; util-linux)"
	exit 1
fi
t_setup t23
t_require up_start

# echo_ok: one echo through the proxy (the proxy serves).
echo_ok() {
	local p
	next_port p
	client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --pp2 "198.18.0.1:$p" 203.0.113.1:443 --msg 'ping\n' --timeout 5
}

# echo_big: the same with 192 KiB each way, past the 128 KiB after which the
# splice engine opens a direction's pipe (docs/DESIGN.md §3d): small echoes
# never call pipe2.
echo_big() {
	local p
	next_port p
	client "$TOPO_PROXY" -c "127.0.0.1:$PROXY_PORT" --pp2 "198.18.0.1:$p" 203.0.113.1:443 --send 196608 --timeout 5 &&
		[[ $(client_result) =~ xfer\ sent\ 196608\ ([0-9a-f]+)\ recv\ 196608\ ([0-9a-f]+)$ ]] &&
		[[ ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]
}

# start_with PREFIX...: mmp_start with the proxy's command prefixed (prlimit, env).
start_with() {
	mmp_cmdline --listeners 1 || return 1
	MMP_LOG="$T_TMP/mmproxy-$MMP_STARTS.log"
	cleanup_push "rm -rf '$MMP_PINDIR'"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" "$@" "${MMP_CMD[@]}"
	if ! wait_port "$TOPO_PROXY" "$PROXY_PORT" 10 "$MMP_PID"; then
		MMP_START_ERR="did not listen: $(grep -v libbpf "$MMP_LOG" | tail -n 3 | tr '\n' ' ')"
		proc_stop "$MMP_PID" 2
		return 1
	fi
	MMP_RUNNING=1
}

# burst N MS: N clients at once, each holding its connection MS ms, then closing.
burst() {
	local n=$1 ms=$2 i p pids=()
	for ((i = 0; i < n; i++)); do
		next_port p
		ns_exec "$TOPO_PROXY" "$MMP_TOOLS/mmpt-client" -c "127.0.0.1:$PROXY_PORT" --pp2 "198.18.1.1:$p" \
			203.0.113.1:443 --close --hold-ms "$ms" --timeout 10 >/dev/null 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
}

# ---------------------------------------------------------------- case a --
case_begin "a tiny RLIMIT_NOFILE: connections past it are refused cleanly, fds back to baseline"
# Under tc/auto an idle flow is handed to the kernel at once and its two fds
# close within milliseconds, so on a slow host the clients never overlap
# enough to reach the limit (CI on 2026-12-04: "never reached"): this case is
# about accept's EMFILE path, so its flows stay on splice, holding their fds
# (--tc-handoff-delay, for this case's starts only).
# The start-up need, measured: a normal start's census.
MMP_TC_HANDOFF_DELAY=60000 start_with env || case_fail "start: $MMP_START_ERR"
need=$(mmp_fds)
mmp_stop
limit=""
for extra in 8 16 32 64; do
	if MMP_TC_HANDOFF_DELAY=60000 start_with prlimit --nofile=$((need + extra)):$((need + extra)) --; then
		limit=$((need + extra))
		break
	fi
done
if [[ -z $limit ]]; then
	case_fail "the proxy did not start with $((need + 64)) fds (needs $need)"
else
	sleep 0.3
	base=$(mmp_fds)
	mark=$(log_mark "$MMP_LOG")
	t0=$(date +%s)
	burst 60 1500
	secs=$(($(date +%s) - t0 + 1))
	proc_alive "$MMP_PID" || case_fail "the proxy died under the fd limit"
	refused=$(log_since "$MMP_LOG" "$mark" | grep -cE 'accept failed: Too many open files|socket failed: Too many open files|Too many open files')
	((refused > 0)) || case_fail "no 'Too many open files' line: the limit ($limit) was never reached"
	# Rate limit: accept pauses 100 ms per EMFILE, so at most ~10 lines a second for accept.
	acc=$(log_since "$MMP_LOG" "$mark" | grep -c 'accept failed: Too many open files')
	((acc <= 12 * secs)) || case_fail "$acc accept-EMFILE lines in $secs s: not rate-limited"
	mmp_fds_back "$base" 10
	echo_ok || case_fail "not served once the clients closed: $(client_result)"
	case_note "limit $limit (start-up census $need, baseline $base): $refused lines over 60 clients ($acc from accept) in $secs s"
fi
mmp_stop
case_end

# fault_case NAME VAR MATCH: start under the shim with VAR=2, arm, 10 echoes,
# disarm; the failures are closed cleanly with one MATCH line each.
fault_case() {
	local name=$1 var=$2 match=$3 arm=$T_TMP/arm ok=0 fail=0 injected lines i
	case_begin "$name"
	rm -f "$arm"
	if ! start_with env LD_PRELOAD="$SHIM" MMPT_FAULT_ARM="$arm" "$var=2"; then
		case_fail "start: $MMP_START_ERR"
		case_end
		return
	fi
	sleep 0.3
	base=$(mmp_fds)
	mark=$(log_mark "$MMP_LOG")
	touch "$arm"
	for ((i = 0; i < 10; i++)); do
		if ${FAULT_ECHO:-echo_ok}; then ok=$((ok + 1)); else fail=$((fail + 1)); fi
	done
	rm -f "$arm"
	injected=$(log_since "$MMP_LOG" "$mark" | grep -c '^mmpt-faults: ')
	lines=$(log_since "$MMP_LOG" "$mark" | grep -c -- "$match")
	((injected > 0)) || case_fail "no fault was injected"
	if ((${FAULT_ABSORBED:-0})); then
		# The fault is absorbed (no pipe: the direction copies through userspace), one line per connection it hit.
		((fail == 0)) || case_fail "$fail of 10 connections failed: a failed pipe2 must not cut a connection"
		((lines > 0 && lines <= injected)) || case_fail "$injected faults injected, $lines '$match' lines"
	else
		((lines == injected)) || case_fail "$injected faults injected, $lines '$match' lines"
		((fail == injected)) || case_fail "$injected faults, but $fail of 10 connections failed"
	fi
	mmp_fds_back "$base" 5
	echo_ok || case_fail "not served after the faults: $(client_result)"
	proc_alive "$MMP_PID" || case_fail "the proxy died"
	case_note "$injected injected, $fail of 10 connections closed, $ok served; fds back to $base; e.g. $(log_since "$MMP_LOG" "$mark" | grep -m1 -- "$match" | cut -c1-150)"
	mmp_stop
	case_end
}

fault_case "b socket() fails for upstream connections: closed cleanly, fds back to baseline" \
	MMPT_FAULT_SOCKET_EVERY "socket failed: Too many open files"
if [[ $MMP_ENGINE == sockmap ]]; then
	case_begin "c pipe2() fails"
	case_skip "the sockmap engine opens no pipes"
else
	# Past 128 KiB a direction opens its pipe (docs/DESIGN.md §3d); when pipe2
	# fails it copies through userspace for good ("Pipes refused"), and the
	# connection is served: none may be cut. The tc
	# hand-off is put off past every echo's life: a flow handed to the kernel
	# before its 128 KiB would never call pipe2, and the case would test nothing.
	MMP_TC_HANDOFF_DELAY=10000 FAULT_ECHO=echo_big FAULT_ABSORBED=1 fault_case "c pipe2() fails: served by copying through userspace, fds back to baseline" \
		MMPT_FAULT_PIPE2_EVERY "no splice pipe for the .*: Too many open files: copying this flow through userspace; raise the open-files limit"
fi

case_lifecycle
t_finish
