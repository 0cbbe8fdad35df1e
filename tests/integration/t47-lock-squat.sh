#!/usr/bin/env bash
# t47: an unprivileged user cannot hold mmproxy-bpf's locks, and lo's
# sysctls go back to what they were (issue 26, finding 3 and the minor
# finding on route_localnet/accept_local; docs/DESIGN.md §6b).
#
#   1 uid 65534 in the proxy namespace binds the abstract names the locks
#     used to be (mmproxy-bpf/pin:DIR, ports:tcp:ADDR:RANGE, the whole
#     ports:tcp:0.0.0.0:1-65535, every tc:0x4d4d:PRIO) and tries to create and
#     lock files in the new lock directory (refused: root's, 0700). The proxy
#     (-l a port range) still starts, and the lock files are root's 0600.
#   2 a second instance on the same pin directory is still refused, naming
#     the first one's pid.
#   3 restart: SIGTERM, start again on the same pin directory: it starts.
#   4 SIGKILL releases the locks: `cleanup --pin-dir` succeeds (the squatter
#     still there), and a start after it too.
#   5 a lock directory another user could write is refused with one line
#     naming the fix (MMP_LOCK_DIR: group-writable, owned by uid 65534, a
#     symlink); nothing pinned, no filter left.
#   6 lo's route_localnet and accept_local, both 0, are turned on by `run
#     --engine tc` and stay on after its exit; `cleanup` of a stopped instance
#     while another runs keeps them ("kept:"), `cleanup` once none runs puts
#     both back to 0; setup-routing and cleanup-routing do the same.
# Fails on the old code: 1, 3 and 4 (the abstract names were taken), 5 (no
# lock directory to check), 6 (nothing put back).
source "$(dirname "$0")/lib.sh"
if ! is_bpf; then
	echo "SKIP t47 lock squatting: mmproxy-bpf only"
	exit 0
fi
# The system's python3: uid 65534 may not read a root's pyenv shim.
PY=/usr/bin/python3
if ! command -v setpriv >/dev/null || [[ ! -x $PY ]]; then
	echo "FAIL t47 setup: setpriv and $PY are needed (make deps)"
	exit 1
fi
t_setup t47

PIN=/sys/fs/bpf/mmproxy-bpf-t47-$$
LO=7000
HI=7003
NSID=$(stat -L -c '%d-%i' "/run/netns/$TOPO_PROXY")
LOCKDIR=/run/mmproxy-bpf/locks/net-$NSID
cleanup_push "rm -rf '$PIN' '$PIN-b'"

# The squatter (uid 65534): binds every abstract name in argv, tries the lock
# directory, prints one line per outcome, then holds the names until killed.
SQUAT_PY='
import os, socket, sys, time, errno
held = []
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind("\0mmproxy-bpf/" + name)
        held.append(s)
    except OSError as e:
        print("bind-failed", name, e.strerror)
print("abstract-held", len(held))
st = os.stat("/proc/self/ns/net")
d = "/run/mmproxy-bpf/locks/net-%d-%d" % (st.st_dev, st.st_ino)
import fcntl
for path in (d, d + "/x"):
    try:
        os.makedirs(path, exist_ok=True)
        print("LOCKDIR-TAKEN mkdir", path)
    except OSError as e:
        print("lockdir-refused mkdir", path, e.strerror)
for name in ("pin:%2F" + sys.argv[1][4:].lstrip("/").replace("/", "%2F"), "lo-sysctls", "squat"):
    try:
        fd = os.open(d + "/" + name, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("LOCKDIR-TAKEN file", name)
    except OSError as e:
        print("lockdir-refused file", name, e.strerror)
print("ready", flush=True)
sys.stdout.flush()
while True:
    time.sleep(1)
'

# squat_start: the squatter in the proxy namespace as uid 65534. Sets SQ_PID, SQ_LOG.
squat_start() {
	local names=("pin:$PIN" "ports:tcp:127.0.0.1:$LO-$HI" "ports:tcp:0.0.0.0:1-65535" "ports:tcp:[::]:1-65535") p
	for ((p = 0x4e00; p <= 0x5dff; p++)); do names+=("tc:0x4d4d:$p"); done
	SQ_LOG="$T_TMP/squat.log"
	proc_start SQ_PID "$SQ_LOG" "$TOPO_PROXY" setpriv --reuid 65534 --regid 65534 --clear-groups -- \
		"$PY" -u -c "$SQUAT_PY" "${names[@]}"
	wait_grep "$SQ_LOG" '^ready' 10
}

# inst_start TAG [ENV=V...] -- ARGS: run on the pin directory PIN (unless ARGS
# say otherwise) with -l LO-HI. Sets MMP_PID, MMP_LOG; 1 when it did not listen.
inst_start() {
	local tag=$1 envs=()
	shift
	while [[ $1 != -- ]]; do envs+=("$1") && shift; done
	shift
	MMP_LOG="$T_TMP/mmproxy-$tag.log"
	proc_start MMP_PID "$MMP_LOG" "$TOPO_PROXY" env "${envs[@]}" "$MMP_BIN" run -v 1 --engine "$MMP_ENGINE" \
		--tc-handoff-delay 0 --listeners 1 -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" "$@"
	wait_grep "$MMP_LOG" 'listening on' 15
}

inst_err() { grep -v libbpf "$MMP_LOG" | grep -v warning | tail -n 2 | tr '\n' ' '; }

# ---------------------------------------------------------------- case 1 --
case_begin "1 uid 65534 squats the old abstract names and the lock directory: the proxy still starts"
if ! squat_start; then
	case_fail "the squatter did not start: $(tail -n 3 "$SQ_LOG" | tr '\n' ' ')"
else
	grep -q '^abstract-held 4100$' "$SQ_LOG" || case_fail "the squatter holds only: $(grep -m3 -e abstract -e bind-failed "$SQ_LOG" | tr '\n' ' ')"
	grep -q '^LOCKDIR-TAKEN' "$SQ_LOG" && case_fail "uid 65534 got into the lock directory: $(grep '^LOCKDIR-TAKEN' "$SQ_LOG" | tr '\n' ' ')"
	case_note "squatter: $(grep -c '^lockdir-refused' "$SQ_LOG") lock-directory attempts refused"
fi
if inst_start a -- -l "127.0.0.1:$LO-$HI" --pin-dir "$PIN"; then
	PID_A=$MMP_PID
	bad=$(find "$LOCKDIR" -mindepth 1 \( -not -user root -o -perm /077 \) 2>/dev/null)
	[[ -z $bad ]] || case_fail "lock files not root's 0600/0700: $bad"
	[[ $(stat -c '%U %a' /run/mmproxy-bpf/locks "$LOCKDIR" | sort -u) == "root 700" ]] ||
		case_fail "lock directories: $(stat -c '%n %U %a' /run/mmproxy-bpf/locks "$LOCKDIR" | tr '\n' ' ')"
else
	PID_A=""
	case_fail "the proxy did not start beside the squatter: $(inst_err)"
fi
case_end

# ---------------------------------------------------------------- case 2 --
case_begin "2 a second instance on the same pin directory is refused, naming the first"
if [[ -z $PID_A ]]; then
	case_skip "case 1 did not start the proxy"
else
	out=$(ns_exec "$TOPO_PROXY" timeout 10 "$MMP_BIN" run -l "127.0.0.1:$((HI + 10))" -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" \
		--pin-dir "$PIN" --engine "$MMP_ENGINE" 2>&1 </dev/null)
	rc=$?
	((rc != 0)) || case_fail "the duplicate started (exit 0)"
	grep -q "another mmproxy-bpf instance uses $PIN in this network namespace (pid $PID_A" <<<"$out" ||
		case_fail "no line naming pid $PID_A: $(grep -v libbpf <<<"$out" | tail -n 2 | tr '\n' ' ')"
	out=$(ns_exec "$TOPO_PROXY" timeout 10 "$MMP_BIN" run -l "127.0.0.1:$((HI - 1))-$((HI + 5))" -4 "127.0.0.1:$UP_PORT" \
		-6 "[::1]:$UP_PORT" --pin-dir "$PIN-b" --engine "$MMP_ENGINE" 2>&1 </dev/null)
	grep -q "overlaps -l 127.0.0.1:$((HI - 1))-$((HI + 5)) (pid $PID_A" <<<"$out" ||
		case_fail "an overlapping range was not refused naming pid $PID_A: $(grep -v libbpf <<<"$out" | tail -n 2 | tr '\n' ' ')"
	case_end
fi

# ---------------------------------------------------------------- case 3 --
case_begin "3 restart on the same pin directory beside the squatter"
if [[ -n $PID_A ]]; then
	proc_stop "$PID_A" 10
	((PROC_STATUS == 0)) || case_fail "SIGTERM: exit $PROC_STATUS"
fi
if inst_start b -- -l "127.0.0.1:$LO-$HI" --pin-dir "$PIN"; then
	PID_B=$MMP_PID
else
	PID_B=""
	case_fail "the restart did not start: $(inst_err)"
fi
case_end

# ---------------------------------------------------------------- case 4 --
case_begin "4 SIGKILL releases the locks: cleanup beside the squatter, then a start"
if [[ -n $PID_B ]]; then
	kill -KILL "$PID_B"
	wait "$PID_B" 2>/dev/null
fi
out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN" 2>&1)
rc=$?
((rc == 0)) || case_fail "cleanup exit $rc: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
grep -q "^cleanup $PIN: " <<<"$out" || case_fail "cleanup did not clean $PIN: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
if inst_start c -- -l "127.0.0.1:$LO-$HI" --pin-dir "$PIN"; then
	proc_stop "$MMP_PID" 10
	((PROC_STATUS == 0)) || case_fail "SIGTERM: exit $PROC_STATUS"
else
	case_fail "no start after SIGKILL and cleanup: $(inst_err)"
fi
proc_kill "$SQ_PID"
case_end

# ---------------------------------------------------------------- case 5 --
case_begin "5 a lock directory other users could take is refused, with its fix"
BAD=/run/mmproxy-bpf-t47-$$
cleanup_push "rm -rf '$BAD'"
mkdir -p "$BAD" && chmod 0700 "$BAD"
mkdir -m 0770 "$BAD/group-writable"
mkdir -m 0700 "$BAD/nobody" && chown 65534:65534 "$BAD/nobody"
ln -s "$BAD/nobody" "$BAD/symlink"
for kind in group-writable nobody symlink; do
	case $kind in
	group-writable) want="refusing the lock directory $BAD/$kind: its mode 0770 lets other users take mmproxy-bpf's locks (fix: chmod 0700 $BAD/$kind)" ;;
	nobody) want="refusing the lock directory $BAD/$kind: it is owned by uid 65534, not root" ;;
	symlink) want="refusing the lock directory $BAD/$kind: it is not a directory (a symlink?)" ;;
	esac
	out=$(ns_exec "$TOPO_PROXY" env MMP_LOCK_DIR="$BAD/$kind" timeout 10 "$MMP_BIN" run -l "127.0.0.1:$LO" \
		-4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" --pin-dir "$PIN" --engine "$MMP_ENGINE" 2>&1 </dev/null)
	rc=$?
	((rc != 0)) || case_fail "$kind: started (exit 0)"
	grep -qF "$want" <<<"$out" || case_fail "$kind: no line '$want': $(grep -v libbpf <<<"$out" | tail -n 2 | tr '\n' ' ')"
	[[ -z $(find "$PIN" -mindepth 1 2>/dev/null) ]] || case_fail "$kind: pins left in $PIN"
	[[ -z $(find "$BAD/nobody" -mindepth 1 2>/dev/null) ]] || case_fail "$kind: wrote into uid 65534's directory"
done
[[ -z $(ns_exec "$TOPO_PROXY" tc filter show dev lo ingress 2>/dev/null) ]] || case_fail "a TC filter was left on lo"
case_end

# ---------------------------------------------------------------- case 6 --
lo_values() { ns_exec "$TOPO_PROXY" sysctl -n net.ipv4.conf.lo.route_localnet net.ipv4.conf.lo.accept_local | paste -sd' '; }

case_begin "6 lo's route_localnet/accept_local: on at start, kept while one runs, put back by cleanup"
ns_exec "$TOPO_PROXY" sysctl -qw net.ipv4.conf.lo.route_localnet=0 net.ipv4.conf.lo.accept_local=0
if ! inst_start d -- -l "127.0.0.1:$LO-$HI" --pin-dir "$PIN" --engine tc; then
	case_fail "instance d did not start: $(inst_err)"
else
	PID_D=$MMP_PID
	[[ $(lo_values) == "1 1" ]] || case_fail "run --engine tc did not turn them on: $(lo_values)"
	if inst_start e -- -l "127.0.0.1:$((HI + 10))" --pin-dir "$PIN-b" --engine tc; then
		proc_stop "$MMP_PID" 10
		[[ $(lo_values) == "1 1" ]] || case_fail "an exit changed them: $(lo_values)"
		out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN-b" 2>&1)
		grep -q "^kept: lo's route_localnet and accept_local stay on while an instance runs in this network namespace ($PIN)" <<<"$out" ||
			case_fail "cleanup beside a running instance: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
		[[ $(lo_values) == "1 1" ]] || case_fail "cleanup beside a running instance changed them: $(lo_values)"
	else
		case_fail "instance e did not start: $(inst_err)"
	fi
	proc_stop "$PID_D" 10
	[[ $(lo_values) == "1 1" ]] || case_fail "the exit changed them: $(lo_values)"
	out=$(ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup --pin-dir "$PIN" 2>&1)
	[[ $(lo_values) == "0 0" ]] || case_fail "cleanup once none runs left them at $(lo_values): $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	grep -q "^restored: /proc/sys/net/ipv4/conf/lo/route_localnet = 0" <<<"$out" ||
		case_fail "no 'restored:' line: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
fi
# setup-routing records the same way; cleanup-routing (last: it removes the test's routing) puts back.
ns_exec "$TOPO_PROXY" "$MMP_BIN" setup-routing --table 123 >/dev/null 2>&1
[[ $(lo_values) == "1 1" ]] || case_fail "setup-routing did not turn them on: $(lo_values)"
ns_exec "$TOPO_PROXY" "$MMP_BIN" cleanup-routing --table 123 >/dev/null 2>&1
[[ $(lo_values) == "0 0" ]] || case_fail "cleanup-routing left them at $(lo_values)"
[[ -e $LOCKDIR/saved.lo-sysctls ]] && case_fail "the record is still there after cleanup-routing"
case_end

t_finish
