#!/usr/bin/env bash
# t54: the Debian package (issue 27, "A Debian package"). It changes the host
# (dpkg), so it leaves it as it found it: it skips when the host has a
# mmproxy-bpf of its own in the package's paths, and the EXIT trap purges the
# package whatever happens.
#
#   1 `make deb` builds build/deb/mmproxy-bpf_*.deb (or the one there is
#     reused, when newer than every source make deb copies), amd64, with the
#     Debian 12 libraries as dependencies;
#   2 lintian reports no error;
#   3 dpkg -i: the binary in /usr/sbin, the man page, both units pointing at
#     /usr/sbin (systemd-analyze verify finds the binary), the example
#     configuration as a conffile; no unit enabled, no mmproxy-bpf started;
#   4 /usr/sbin/mmproxy-bpf setup-routing and check in a test namespace: all
#     checks pass, and `version` names the package's version;
#   5 dpkg -r: binary, units and man page gone, the conffile kept;
#   6 dpkg -P: dpkg -L lists nothing, /etc/mmproxy-bpf is gone, and every path
#     named *mmproxy-bpf* under /etc, /usr and /var/lib is as before case 3.
#
# The package does not depend on the engine: it runs once, under
# MMP_ENGINE=splice, the first engine `make test` runs.
source "$(dirname "$0")/lib.sh"
if [[ $MMP_ENGINE != splice ]]; then
	echo "SKIP t54 Debian package: runs once, under MMP_ENGINE=splice (this is $MMP_ENGINE)"
	exit 0
fi
if [[ $MMP_FLAVOR != bpf ]]; then
	echo "SKIP t54 Debian package: mmproxy-bpf only"
	exit 0
fi
for cmd in dpkg-buildpackage dh lintian dpkg-deb; do
	command -v "$cmd" >/dev/null || {
		echo "FAIL t54 setup: $cmd is not installed (make deps)"
		exit 1
	}
done

PKG=mmproxy-bpf
DEB_DIR="$REPO_ROOT/build/deb"
UNIT_DIR=/lib/systemd/system
UNITS=("$UNIT_DIR/$PKG.service" "$UNIT_DIR/$PKG@.service" "$UNIT_DIR/$PKG@.socket")
PKG_FILES=("/usr/sbin/$PKG" "/usr/share/man/man8/$PKG.8.gz" "${UNITS[@]}" "/etc/$PKG/example.conf")

# pkg_status: dpkg's status of the package ("install ok installed",
# "deinstall ok config-files"), empty when dpkg knows nothing of it.
pkg_status() { dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null; }

# A host that has the package, or files of its own where the package puts
# its files, is left alone: installing would overwrite them, purging delete.
if [[ -n $(pkg_status) && $(pkg_status) != *not-installed* ]]; then
	echo "SKIP t54 Debian package: $PKG is installed on this host ($(pkg_status)); dpkg -P $PKG to run this test"
	exit 0
fi
for f in "${PKG_FILES[@]}"; do
	if [[ -e $f || -L $f ]]; then
		echo "SKIP t54 Debian package: $f exists and the package would replace it; move it away to run this test"
		exit 0
	fi
done

# /etc/mmproxy-bpf may hold an operator's NAME.conf files (make install's
# units read them): then it stays after purge, and only example.conf goes.
etc_existed=0
[[ -e /etc/$PKG ]] && etc_existed=1

t_setup t54

# dpkg_retry CMD...: CMD, again every second for up to 2 minutes while
# another dpkg or apt holds dpkg's lock (other jobs on a shared CI host).
dpkg_retry() {
	local i out rc
	for ((i = 0; i < 120; i++)); do
		out=$("$@" 2>&1)
		rc=$?
		if ((rc == 0)) || ! grep -q 'dpkg.* lock' <<<"$out"; then break; fi
		sleep 1
	done
	printf '%s\n' "$out"
	return "$rc"
}

# Whatever happens below, the package goes: purged at exit when dpkg knows it.
# shellcheck disable=SC2016 # expanded when the cleanup runs
cleanup_push '[[ -z $(pkg_status) || $(pkg_status) == *not-installed* ]] || dpkg_retry dpkg -P "$PKG"'

# pkg_paths: every path named *mmproxy-bpf* where a package's files and
# dpkg's and deb-systemd-helper's records of it go (/lib is /usr/lib on
# Debian 12; both are searched where they differ). The build tree and the
# proxy's runtime state (/run, /sys/fs/bpf) are not the package's.
pkg_paths() {
	local roots=(/etc /usr/sbin /usr/bin /usr/share/man /usr/share/doc /usr/lib/systemd /var/lib/dpkg/info /var/lib/systemd)
	[[ $(readlink -f /lib/systemd) == /usr/lib/systemd ]] || roots+=(/lib/systemd)
	find "${roots[@]}" -name "*$PKG*" 2>/dev/null | sort
}

# mmp_pids: processes running the packaged binary (other instances of the
# suite run build trees' binaries, never /usr/sbin's).
mmp_pids() {
	local p
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/exe" 2>/dev/null) == "/usr/sbin/$PKG"* ]] && echo "${p#/proc/}"
	done
}

# --------------------------------------------------------------- case 1 --
case_begin "1 make deb builds the package"
deb=
newest_src=$(cd "$REPO_ROOT" && find Makefile README.md bpf debian docs include scripts user vmlinux -type f -printf "%T@\n" 2>/dev/null | sort -n | tail -1)
for f in "$DEB_DIR"/"$PKG"_*.deb; do
	[[ -f $f ]] && (($(stat -c %Y "$f") > ${newest_src%.*})) && deb=$f
done
if [[ -n $deb ]]; then
	case_note "reused $(basename "$deb"), newer than every source"
else
	t0=$(date +%s)
	if make -s -C "$REPO_ROOT" deb >"$T_TMP/make-deb.log" 2>&1; then
		for f in "$DEB_DIR"/"$PKG"_*.deb; do [[ -f $f ]] && deb=$f; done
		case_note "built in $(($(date +%s) - t0)) s"
	else
		case_fail "make deb failed: $(tail -n 5 "$T_TMP/make-deb.log" | tr '\n' ' ')"
	fi
fi
if [[ -n $deb && -f $deb ]]; then
	version=$(dpkg-deb -f "$deb" Version)
	arch=$(dpkg-deb -f "$deb" Architecture)
	depends=$(dpkg-deb -f "$deb" Depends)
	[[ $arch == amd64 ]] || case_fail "Architecture $arch, not amd64"
	for lib in libbpf1 libxdp1 libmicrohttpd12 libcap-ng0 libsystemd0 iproute2; do
		[[ $depends =~ (^|, )$lib( |,|$) ]] || case_fail "Depends lacks $lib: $depends"
	done
	case_note "$(basename "$deb")"
else
	[[ ${#CASE_ERRS[@]} -gt 0 ]] || case_fail "no $DEB_DIR/${PKG}_*.deb after make deb"
	deb=
fi
case_end
if [[ -z $deb ]]; then
	echo "FAIL t54 2-6: no package to test"
	T_NFAIL=$((${T_NFAIL:-0} + 1))
	t_finish
fi

# --------------------------------------------------------------- case 2 --
case_begin "2 lintian reports no error"
lintian --fail-on error "$deb" >"$T_TMP/lintian.log" 2>&1
rc=$?
errors=$(grep -c '^E: ' "$T_TMP/lintian.log")
warnings=$(grep -c '^W: ' "$T_TMP/lintian.log")
((rc == 0 && errors == 0)) || case_fail "lintian exit $rc, $errors errors: $(grep -m3 '^E: ' "$T_TMP/lintian.log" | tr '\n' ' ')"
case_note "$errors errors, $warnings warnings"
case_end

# --------------------------------------------------------------- case 3 --
case_begin "3 dpkg -i: files in place, units on /usr/sbin, conffile, nothing enabled or started"
before=$(pkg_paths)
out=$(DEBIAN_FRONTEND=noninteractive dpkg_retry dpkg -i "$deb")
[[ $(pkg_status) == "install ok installed" ]] || case_fail "dpkg -i: status '$(pkg_status)': $(tail -n 3 <<<"$out" | tr '\n' ' ')"
for f in "${PKG_FILES[@]}"; do
	[[ -f $f ]] || case_fail "$f missing"
done
[[ -x /usr/sbin/$PKG ]] || case_fail "/usr/sbin/$PKG is not executable"
for u in "${UNITS[@]}"; do
	[[ -f $u && $u == *.service ]] || continue # the socket unit runs nothing
	grep -q "^ExecStart=/usr/sbin/$PKG run " "$u" || case_fail "$(basename "$u"): no ExecStart=/usr/sbin/$PKG run"
	grep -q /usr/local "$u" && case_fail "$(basename "$u") still names /usr/local: $(grep -m1 /usr/local "$u")"
done
# verify checks that every Exec*= binary exists: the path is /usr/sbin's.
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze verify --man=no "$UNIT_DIR/$PKG.service" 2>&1)
	[[ -z $out ]] || case_fail "systemd-analyze verify $PKG.service: $(tr '\n' ' ' <<<"$out" | cut -c1-300)"
fi
grep -q '^MMPROXY_ARGS=-l ' /etc/$PKG/example.conf 2>/dev/null || case_fail "example.conf sets no MMPROXY_ARGS=-l ..."
dpkg-query -W -f='${Conffiles}\n' "$PKG" | grep -q "^ /etc/$PKG/example.conf " || case_fail "/etc/$PKG/example.conf is not a conffile"
# Enabled means a symlink to a unit in a .wants directory, where systemctl
# enable or deb-systemd-helper (which works without systemd as PID 1) makes
# it; deb-systemd-helper mirrors each one under $DSH. Its .dsh-also file
# lists the symlinks enabling would make (for purge to remove): none exists.
DSH=/var/lib/systemd/deb-systemd-helper-enabled
links=$(find /etc/systemd/system "$DSH" -name "$PKG*" ! -name '*.dsh-also' 2>/dev/null)
[[ -z $links ]] || case_fail "units enabled on install: $(tr '\n' ' ' <<<"$links")"
if [[ -f $DSH/$PKG.service.dsh-also ]]; then
	while read -r l; do
		[[ -n $l && (-e $l || -L $l) ]] && case_fail "$l exists: $PKG.service is enabled"
	done <"$DSH/$PKG.service.dsh-also"
fi
if [[ -d /run/systemd/system ]]; then
	systemctl -q is-enabled "$PKG.service" && case_fail "systemctl: $PKG.service is enabled"
	systemctl -q is-active "$PKG.service" 'mmproxy-bpf@*.service' && case_fail "systemctl: a $PKG unit is active"
fi
pids=$(mmp_pids)
[[ -z $pids ]] || case_fail "/usr/sbin/$PKG runs after install: pids $pids"
case_end

# --------------------------------------------------------------- case 4 --
case_begin "4 /usr/sbin/$PKG setup-routing and check in a test namespace"
out=$(ns_exec "$TOPO_PROXY" /usr/sbin/$PKG setup-routing 2>&1) || case_fail "setup-routing: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
out=$(ns_exec "$TOPO_PROXY" /usr/sbin/$PKG check 2>&1)
rc=$?
if ((rc != 0)) || ! grep -q '^all checks passed' <<<"$out"; then
	case_fail "check exit $rc: $(grep -v '^ok' <<<"$out" | head -n 4 | tr '\n' ' ')"
fi
ver=$(/usr/sbin/$PKG version 2>&1)
[[ $ver == "$PKG $version"* ]] || case_fail "version says '$ver', the package is $version"
case_note "$ver"
case_end

# --------------------------------------------------------------- case 5 --
case_begin "5 dpkg -r: binary, units and man page gone, conffile kept"
out=$(dpkg_retry dpkg -r "$PKG")
[[ $(pkg_status) == "deinstall ok config-files" ]] || case_fail "dpkg -r: status '$(pkg_status)': $(tail -n 3 <<<"$out" | tr '\n' ' ')"
for f in /usr/sbin/$PKG /usr/share/man/man8/$PKG.8.gz "${UNITS[@]}"; do
	[[ -e $f ]] && case_fail "$f left after dpkg -r"
done
[[ -f /etc/$PKG/example.conf ]] || case_fail "the conffile /etc/$PKG/example.conf went with dpkg -r (only purge removes it)"
case_end

# --------------------------------------------------------------- case 6 --
case_begin "6 dpkg -P: nothing left behind"
out=$(dpkg_retry dpkg -P "$PKG")
st=$(pkg_status)
[[ -z $st || $st == *not-installed* ]] || case_fail "dpkg -P: status '$st': $(tail -n 3 <<<"$out" | tr '\n' ' ')"
listed=$(dpkg -L "$PKG" 2>/dev/null | grep '^/')
[[ -z $listed ]] || case_fail "dpkg -L still lists $(wc -l <<<"$listed") paths"
if ((!etc_existed)) && [[ -e /etc/$PKG ]]; then
	case_fail "/etc/$PKG left after purge: $(find "/etc/$PKG" -mindepth 1 | tr '\n' ' ')"
fi
[[ -e /etc/$PKG/example.conf ]] && case_fail "/etc/$PKG/example.conf left after purge"
after=$(pkg_paths)
left=$(comm -13 <(echo "$before") <(echo "$after"))
gone=$(comm -23 <(echo "$before") <(echo "$after"))
[[ -z $left ]] || case_fail "left behind: $(tr '\n' ' ' <<<"$left")"
[[ -z $gone ]] || case_fail "removed although there before: $(tr '\n' ' ' <<<"$gone")"
pids=$(mmp_pids)
[[ -z $pids ]] || case_fail "/usr/sbin/$PKG still runs: pids $pids"
case_end

t_finish
