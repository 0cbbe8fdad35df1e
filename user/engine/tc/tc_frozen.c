// SPDX-License-Identifier: GPL-2.0
/* The proxy's sockets' TCP state in repair mode (engine/tc/tc_frozen.h). */
#include <linux/sockios.h>
#include <linux/tcp.h> /* TCP_REPAIR_* */
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"
#include "lib/sockinfo.h"
#include "mmp_tc.h"
#include "tc.skel.h"

int mmp_tc_queue_bytes(int fd, unsigned long req)
{
	int n = 0;

	return ioctl(fd, req, &n) ? -1 : n;
}

int mmp_tc_set_repair(int fd, int on)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) ? -errno : 0;
}

int mmp_tc_read_frozen(int fd, struct mmp_tc_frozen *f)
{
	int q = TCP_RECV_QUEUE;
	socklen_t len = sizeof(uint32_t);

	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &f->rcv_nxt, &len))
		return -errno;
	q = TCP_SEND_QUEUE;
	len = sizeof(uint32_t);
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &f->write_seq, &len))
		return -errno;
	len = sizeof(uint32_t);
	if (getsockopt(fd, IPPROTO_TCP, TCP_TIMESTAMP, &f->tsval, &len))
		return -errno;
	len = sizeof(f->win);
	if (getsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &f->win, &len))
		return -errno;
	return mmp_tcp_info(fd, &f->ti);
}

/*
 * The peer's last TSval the socket receiving `incoming` accepted, read by
 * mmp_tc_ts_probe: the TSval offsets come from the frozen sockets' state,
 * never from a packet (docs/DESIGN.md §3c).
 */
int mmp_tc_read_ts_recent(struct mmp_tc *tc, const struct mmp_tc_tuple *incoming, uint32_t *ts)
{
	struct __attribute__((packed)) {
		uint8_t eth[14];
		struct mmp_tc_ts_query q;
	} in = { 0 }, out = { 0 };
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &in, .data_size_in = sizeof(in), .data_out = &out,
			    .data_size_out = sizeof(out), .repeat = 1);
	int err;

	in.q.tuple = *incoming;
	err = bpf_prog_test_run_opts(bpf_program__fd(tc->skel->progs.mmp_tc_ts_probe), &opts);
	if (err)
		return err;
	if (!out.q.found)
		return -ENOENT;
	*ts = out.q.ts_recent;
	return 0;
}

uint8_t mmp_tc_wscale(const struct tcp_info *ti, bool snd)
{
	if (!(ti->tcpi_options & TCPI_OPT_WSCALE))
		return 0;
	return snd ? ti->tcpi_snd_wscale : ti->tcpi_rcv_wscale;
}

int mmp_tc_peek_ack_state(int fd, struct mmp_tc_frozen *f)
{
	int off = TCP_REPAIR_OFF_NO_WP, err;

	err = mmp_tc_set_repair(fd, 1);
	if (err)
		return err;
	err = mmp_tc_read_frozen(fd, f);
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)) && !err)
		err = -errno;
	return err;
}
