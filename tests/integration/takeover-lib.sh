# shellcheck shell=bash
# tests/integration/takeover-lib.sh: the load that restarts must not disturb
# (docs/DESIGN.md §15), started and checked the same way by t62 (run
# --takeover) and t63 (socket activation). Source it after lib.sh, once
# need_bench_tools has set BENCH_TOOLS. Not a test file itself.
#
# The caller sets STREAMS, STREAM_SIZE, STREAM_RATE (mmpt-bidir's long
# streams, both ways) and RATE, DURATION (loadgen's new connections a second,
# for how long).

# restart_load_start CLIENT UPSTREAM NET CONNS TARGET [LOADGEN_ARGS...]:
# mmpt-bidir's streams from clients in NET through the proxy at CLIENT to
# its upstream end at UPSTREAM (BIDIR_PID), then `loadgen -m connrate` with
# CONNS connections to TARGET, each PROXY v2, one 64-byte message echoed and
# checked (LG_PID).
restart_load_start() {
	local client=$1 upstream=$2 net=$3 conns=$4 target=$5
	shift 5
	ns_exec "$TOPO_PROXY" nstat -asz >"$T_TMP/nstat.before" 2>/dev/null
	proc_start BIDIR_PID "$T_TMP/bidir.out" "$TOPO_PROXY" "$MMP_TOOLS/mmpt-bidir" -c "$client" \
		-l "$upstream" -n "$STREAMS" --parallel "$STREAMS" --size "$STREAM_SIZE" \
		--rate "$STREAM_RATE" --net "$net" --port-base 24000 --timeout 80
	proc_start LG_PID "$T_TMP/loadgen.out" "$TOPO_PROXY" "$BENCH_TOOLS/loadgen" -m connrate -c "$conns" \
		--connect-rate "$RATE" -T "$DURATION" --warmup 0 --threads 1 -s 64 --proxy v2 \
		--client-range 10.128.0.0/12 "$@" -q "$target"
}

# restart_load_wait: until loadgen and the streams have ended.
restart_load_wait() {
	while proc_alive "$LG_PID"; do sleep 0.2; done
	while proc_alive "$BIDIR_PID"; do sleep 0.2; done
	wait "$BIDIR_PID" 2>/dev/null
}

# restart_load_nstat: what the proxy's namespace counted, since
# restart_load_start, of listener drops, resets and request migration: what
# tells a refused SYN from a child reset as its listener closed.
restart_load_nstat() {
	ns_exec "$TOPO_PROXY" nstat -asz 2>/dev/null | awk 'NR == FNR { before[$1] = $2; next }
		$1 ~ /Listen|Migrate|Rst|Reset|AttemptFails|ReqQFull|Abort|Backlog|SynRetrans/ && $2 != before[$1] {
			printf "%s%s +%d", sep, $1, $2 - before[$1]; sep = ", " }' "$T_TMP/nstat.before" -
}

# restart_load_check GAP: the case fails on any connection refused, reset,
# cut or echoed wrong, and on any stream not complete and byte-exact; notes
# the longest connect+echo time, which GAP says what it bounds.
restart_load_check() {
	local lg summary opened msgs cerr crefused creset ioerr reset verr maxms
	lg=$(sed -n 's/^JSON //p' "$T_TMP/loadgen.out")
	if [[ -z $lg ]]; then
		case_fail "loadgen printed no report: $(tail -n 2 "$T_TMP/loadgen.out" | tr '\n' ' ')"
	else
		read -r opened msgs cerr crefused creset ioerr reset verr maxms < <(jq -r '[.conns_opened, .msgs,
			.connect_errors, .connect_refused, .connect_reset, .io_errors, .io_reset, .verify_errors,
			(.lat_us.max / 1000 | floor)] | @tsv' <<<"$lg")
		((cerr == 0)) ||
			case_fail "$cerr connect errors ($crefused refused, $creset reset after the handshake); kernel: $(restart_load_nstat)"
		((reset == 0)) || case_fail "$reset connections reset; kernel: $(restart_load_nstat)"
		((ioerr == 0)) || case_fail "$ioerr connections with I/O errors (EOF or reset)"
		((verr == 0)) || case_fail "$verr wrong bytes echoed"
		((msgs > 0 && msgs + 8 >= opened)) || case_fail "$msgs of $opened connections echoed their message"
		case_note "loadgen: $opened connections, $msgs echoed, longest connect+echo $maxms ms ($1)"
	fi
	summary=$(grep '^bidir ' "$T_TMP/bidir.out")
	[[ $summary == "bidir ok $STREAMS failed 0 "* ]] ||
		case_fail "streams: ${summary:-no summary} $(grep '^conn ' "$T_TMP/bidir.out" | grep -v ' ok down [0-9]* ok$' | head -n 2 | tr '\n' ' ')"
}
