#!/usr/bin/env bash
# t19: the shipped systemd units give the default engine what it needs
# (issue 11, point 2). The capability set is parsed from the unit files, not
# repeated here.
#
#   1 both units (scripts/mmproxy-bpf.service, scripts/mmproxy-bpf@.service)
#     pass `systemd-analyze verify` (ExecStart pointed at this build), are
#     Type=notify, and grant one and the same capability set
#     (CapabilityBoundingSet= = AmbientCapabilities=).
#   2 under exactly that set (setpriv --bounding-set, as root: the units have
#     no User=, so systemd's bounding set is what limits them), `check` says
#     ok for every capability it lists, CAP_NET_RAW included, and lists every
#     capability of the unit.
#   3 under exactly that set, `run --engine auto` starts the tc engine (not
#     "splice for every flow") and a 2 MiB flow each way is spliced in the
#     kernel, byte-exact.
#   4 the same without CAP_NET_RAW (the old unit's set) falls back to splice:
#     what case 3 would catch if the unit lost it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tc-lib.sh"
if [[ $MMP_FLAVOR != bpf ]]; then
	echo "SKIP t19 unit capabilities: mmproxy-bpf only"
	exit 0
fi
for cmd in setpriv systemd-analyze; do
	command -v "$cmd" >/dev/null || {
		echo "FAIL t19 setup: $cmd is not installed (make deps)"
		exit 1
	}
done
MMP_VERBOSITY=2
t_setup t19

UNIT="$REPO_ROOT/scripts/mmproxy-bpf.service"
TEMPLATE="$REPO_ROOT/scripts/mmproxy-bpf@.service"

# unit_caps FILE KEY: the capabilities of KEY= in FILE, sorted, one per line.
unit_caps() { sed -n "s/^$2=//p" "$1" | tr ' ' '\n' | grep . | sort -u; }

# setpriv's names: CAP_NET_RAW -> +net_raw, comma separated.
setpriv_caps() { tr 'A-Z' 'a-z' | sed 's/^cap_/+/' | paste -sd, -; }

CAPS=$(unit_caps "$UNIT" CapabilityBoundingSet)

# ---------------------------------------------------------------- case 1 --
case_begin "1 both units verify, are Type=notify and grant one capability set"
for u in "$UNIT" "$TEMPLATE"; do
	name=$(basename "$u")
	[[ $name == *@.service ]] && name=${name/@./@t19.}
	sed "s#/usr/local/sbin/mmproxy-bpf#$MMP_BIN#g" "$u" >"$T_TMP/$name"
	out=$(systemd-analyze verify --man=no "$T_TMP/$name" 2>&1 | grep -v -e 'mmproxy-bpf@t19.conf' -e '^$')
	[[ -z $out ]] || case_fail "systemd-analyze verify $(basename "$u"): $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
	grep -q '^Type=notify$' "$u" || case_fail "$(basename "$u") is not Type=notify"
	[[ $(unit_caps "$u" CapabilityBoundingSet) == "$CAPS" ]] || case_fail "$(basename "$u"): another CapabilityBoundingSet"
	[[ $(unit_caps "$u" AmbientCapabilities) == "$CAPS" ]] || case_fail "$(basename "$u"): AmbientCapabilities differs from CapabilityBoundingSet"
done
grep -qx CAP_NET_RAW <<<"$CAPS" || case_fail "the unit does not grant CAP_NET_RAW"
case_note "capabilities: $(tr '\n' ' ' <<<"$CAPS")"
case_end

# run_caps CAPS_LINES CMD...: CMD in the proxy namespace with exactly CAPS.
run_caps() {
	local caps
	caps=$(setpriv_caps <<<"$1")
	shift
	ns_exec "$TOPO_PROXY" setpriv --inh-caps=-all --bounding-set=-all,"$caps" -- "$@"
}

# ---------------------------------------------------------------- case 2 --
case_begin "2 check under the unit's capabilities: every capability ok, CAP_NET_RAW listed"
out=$(run_caps "$CAPS" "$MMP_BIN" check 2>&1)
for c in $CAPS; do
	grep -q "^ok   capability $c " <<<"$out" || case_fail "check does not say ok for $c: $(grep "capability $c" <<<"$out")"
done
grep -q '^FAIL capability' <<<"$out" && case_fail "check under the unit's set: $(grep '^FAIL capability' <<<"$out" | tr '\n' ' ')"
listed=$(sed -n 's/^[a-zA-Z]* *capability \(CAP_[A-Z_]*\).*/\1/p' <<<"$out" | sort -u)
[[ $listed == "$CAPS" ]] || case_fail "check lists $(tr '\n' ' ' <<<"$listed"), the unit grants $(tr '\n' ' ' <<<"$CAPS")"
case_end

# caps_run TAG CAPS PORT_BASE: run --engine auto under CAPS and one 2 MiB flow
# each way through it. Sets CR_LOG, CR_OUT, CR_SPLICED (0/1).
caps_run() {
	local tag=$1 caps=$2 pbase=$3 pid
	CR_LOG="$T_TMP/mmproxy-$tag.log" CR_OUT="$T_TMP/bidir-$tag.out" CR_SPLICED=0
	cleanup_push "rm -rf /sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-$PROXY_PORT /sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-$PROXY_PORT-netns-*"
	nsenter --net="/run/netns/$TOPO_PROXY" -- setpriv --inh-caps=-all --bounding-set=-all,"$(setpriv_caps <<<"$caps")" -- \
		"$MMP_BIN" run -l "127.0.0.1:$PROXY_PORT" -4 "127.0.0.1:$UP_PORT" -6 "[::1]:$UP_PORT" -v 2 \
		--tc-handoff-delay 0 --listeners 1 >"$CR_LOG" 2>&1 </dev/null &
	pid=$!
	cleanup_push "proc_kill $pid"
	if ! wait_port "$TOPO_PROXY" "$PROXY_PORT" 10 "$pid"; then
		case_fail "$tag: did not listen: $(grep -v libbpf "$CR_LOG" | tail -n 3 | tr '\n' ' ')"
		return 1
	fi
	tc_run_bidir "$TOPO_PROXY" "$CR_OUT" -c "127.0.0.1:$PROXY_PORT" -l "127.0.0.1:$UP_PORT" -n 1 --size 2M \
		--rate 1M --port-base "$pbase" --timeout 20
	tc_wait_spliced "$CR_LOG" 0 "203.0.113.1:$pbase" 1 && CR_SPLICED=1
	proc_stop "$pid" 10
	((PROC_STATUS == 0)) || case_fail "$tag: exited $PROC_STATUS on SIGTERM"
	return 0
}

# ---------------------------------------------------------------- case 3 --
case_begin "3 run --engine auto under the unit's capabilities: the tc engine splices the flow in the kernel"
if caps_run unit "$CAPS" 24500; then
	grep -q 'listening on .* engine tc' "$CR_LOG" ||
		case_fail "auto did not start the tc engine: $(grep -v libbpf "$CR_LOG" | grep -E 'listening|warning|tc engine' | head -n 3 | tr '\n' ' ')"
	((CR_SPLICED)) || case_fail "the flow was not spliced in the kernel: $TC_OUTCOME"
	line=$(grep '^conn ' "$CR_OUT")
	[[ $line == *" up 2097152 ok down 2097152 ok"* ]] || case_fail "the flow: ${line:-$(tail -n 1 "$CR_OUT")}"
fi
case_end

# ---------------------------------------------------------------- case 4 --
case_begin "4 the same without CAP_NET_RAW: auto runs splice for every flow (what the unit must avoid)"
if caps_run no-raw "$(grep -vx CAP_NET_RAW <<<"$CAPS")" 24600; then
	grep -q 'engine auto uses splice for every flow' "$CR_LOG" ||
		case_fail "without CAP_NET_RAW, no warning that auto uses splice: $(grep -v libbpf "$CR_LOG" | head -n 3 | tr '\n' ' ')"
	((CR_SPLICED)) && case_fail "without CAP_NET_RAW the flow was still spliced in the kernel"
	line=$(grep '^conn ' "$CR_OUT")
	[[ $line == *" up 2097152 ok down 2097152 ok"* ]] || case_fail "the flow on splice: ${line:-$(tail -n 1 "$CR_OUT")}"
fi
case_end

t_finish
