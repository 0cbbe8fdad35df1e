// SPDX-License-Identifier: GPL-2.0
/*
 * mmpt-drops: counts, until SIGTERM or SIGINT, what the kernel drops in the
 * given network namespaces (bpf/drop_watch.bpf.c):
 *
 *   mmpt-drops /run/netns/NAME...
 *
 * Prints "ready" once attached, and at the end three lines:
 *   paws ack N copy N new N    what TCP's PAWS check dropped: pure ACKs,
 *                              segments whose every byte the receiver held,
 *                              and segments with bytes it lacked (the tc
 *                              tests fail only on the last: tc-lib.sh,
 *                              tc_paws_verdict)
 *   drops REASON=N...          every drop by its reason, named as the
 *                              kernel's enum skb_drop_reason without its
 *                              prefix, lower case ("drops none" if none);
 *                              not the proxy's BPF_PROG_TEST_RUN packets,
 *                              which the kernel frees as drops
 *   lost REASON=N...           the drops that cost data, by reason: TCP
 *                              segments of more than one byte (one byte
 *                              beyond a closed window is a window probe)
 *                              with bytes their receiving socket lacked,
 *                              in order or out of order
 * and for each of the first DROP_WATCH_LOST_DETAIL of those, a line
 *   lost-at REASON PORT<PORT len N seq rcv_nxt+OFF rmem N rcvbuf N
 *           locks N wnd N clamp N ratio N/256 ofo Y|N
 *                              the dropping socket (local<remote port):
 *                              its memory against its buffer and whether
 *                              its size is locked (SO_RCVBUF: locks & 2),
 *                              its window, and its out-of-order queue
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "mmpt_common.h"
#include "bpf/drop_watch.h"
#include "drop_watch.skel.h"

/* The kernel's enum skb_drop_reason in its BTF, for the reasons' names: NULL without it. */
static const struct btf_type *drop_reason_enum(const struct btf *btf)
{
	__s32 id = btf ? btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM) : -1;

	return id > 0 ? btf__type_by_id(btf, id) : NULL;
}

/* Prints reason's name from t (drop_reason_enum), or its number. */
static void print_reason(const struct btf *btf, const struct btf_type *t, __u32 reason)
{
	static const char prefix[] = "SKB_DROP_REASON_";
	const struct btf_enum *e;
	const char *name;

	if (reason == DROP_REASON_SUBSYS_SLOT) {
		printf(" subsystem");
		return;
	}
	for (int i = 0; t && i < btf_vlen(t); i++) {
		e = btf_enum(t) + i;
		if ((__u32)e->val != reason)
			continue;
		name = btf__name_by_offset(btf, e->name_off);
		if (!strncmp(name, prefix, sizeof(prefix) - 1))
			name += sizeof(prefix) - 1;
		putchar(' ');
		for (; *name; name++)
			putchar(tolower((unsigned char)*name));
		return;
	}
	printf(" reason%u", reason);
}

/*
 * Where the kernel's function `name` starts and the next one starts
 * (/proc/kallsyms, root only); both 0 when it is not found.
 */
static void kernel_function_range(const char *name, __u64 *lo, __u64 *hi)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long addr;
	char type, sym[256];

	*lo = *hi = 0;
	if (!f)
		return;
	/* Addresses are in order within the kernel's own text, where the function is. */
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3) {
		if (*lo && addr > *lo) {
			*hi = addr;
			break;
		}
		if (!*lo && !strcmp(sym, name))
			*lo = addr;
	}
	fclose(f);
	if (!*hi)
		*lo = 0;
}

/* "LABEL REASON=N..." over a map of counts by reason, or "LABEL none". */
static void print_by_reason(const struct btf *btf, const char *label, const struct bpf_map *map)
{
	const struct btf_type *reasons = drop_reason_enum(btf);
	int fd = bpf_map__fd(map);
	bool any = false;
	__u64 n;

	printf("%s", label);
	for (__u32 r = 0; r < DROP_REASON_SLOTS; r++) {
		if (bpf_map_lookup_elem(fd, &r, &n) || !n)
			continue;
		print_reason(btf, reasons, r);
		printf("=%llu", (unsigned long long)n);
		any = true;
	}
	printf("%s\n", any ? "" : " none");
}

static void print_paws(struct drop_watch_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.mmpt_paws_drops);
	__u64 n[PAWS_KINDS] = { 0 };

	for (__u32 k = 0; k < PAWS_KINDS; k++)
		bpf_map_lookup_elem(fd, &k, &n[k]);
	printf("paws ack %llu copy %llu new %llu\n", (unsigned long long)n[PAWS_ACK],
	       (unsigned long long)n[PAWS_COPY], (unsigned long long)n[PAWS_NEW]);
}

/* One "lost-at" line per kept lost segment (drop_watch.h). */
static void print_lost_detail(const struct btf *btf, struct drop_watch_bpf *skel)
{
	const struct btf_type *reasons = drop_reason_enum(btf);
	__u32 n = skel->bss->lost_n;

	for (__u32 i = 0; i < n && i < DROP_WATCH_LOST_DETAIL; i++) {
		const struct drop_watch_lost *d = &skel->bss->lost_detail[i];

		printf("lost-at");
		print_reason(btf, reasons, d->reason);
		printf(" %u<%u len %u seq rcv_nxt%+d rmem %u rcvbuf %u locks %u wnd %u clamp %u ratio %u/256 ofo %s\n",
		       d->local_port, d->remote_port, d->len, d->seq_off, d->rmem, d->rcvbuf, d->userlocks,
		       d->rcv_wnd, d->window_clamp, d->scaling_ratio, d->ofo ? "Y" : "N");
	}
}

int main(int argc, char **argv)
{
	struct drop_watch_bpf *skel;
	struct btf *btf;
	struct stat st;
	sigset_t stop;
	int i, err, sig;

	tool_start("mmpt-drops");
	if (argc < 2 || argc - 1 > DROP_WATCH_MAX_NETNS)
		die("usage: mmpt-drops /run/netns/NAME... (1 to %d namespaces)", DROP_WATCH_MAX_NETNS);
	skel = drop_watch_bpf__open();
	if (!skel)
		die("cannot open the drop watcher: %s", strerror(errno));
	for (i = 1; i < argc; i++) {
		/* A namespace file's inode number is the namespace's ns.inum. */
		if (stat(argv[i], &st))
			die("%s: %s (give a namespace file such as /run/netns/NAME)", argv[i], strerror(errno));
		skel->rodata->netns_ino[i - 1] = (__u32)st.st_ino;
	}
	skel->rodata->netns_n = (__u32)(argc - 1);
	kernel_function_range("bpf_prog_test_run_skb", &skel->rodata->test_run_lo, &skel->rodata->test_run_hi);
	err = drop_watch_bpf__load(skel);
	if (!err)
		err = drop_watch_bpf__attach(skel);
	if (err) {
		drop_watch_bpf__destroy(skel);
		die("cannot attach the drop watcher to tp_btf/kfree_skb: %s (needs root and kernel BTF)", strerror(-err));
	}
	/* Blocked, then waited for: a signal sent right after "ready" is not missed. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	printf("ready\n");
	sigwait(&stop, &sig);
	btf = btf__load_vmlinux_btf(); /* for the reasons' names; numbers without it */
	print_paws(skel);
	print_by_reason(btf, "drops", skel->maps.mmpt_drop_reasons);
	print_by_reason(btf, "lost", skel->maps.mmpt_lost_reasons);
	print_lost_detail(btf, skel);
	btf__free(btf);
	drop_watch_bpf__destroy(skel);
	return 0;
}
