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

/*
 * In place, never with TCP_REPAIR_QUEUE: while a socket in repair mode has its
 * send queue selected, any ACK that lets it send (or a loss probe) makes the
 * kernel mark the next segments sent without putting them on the wire. The
 * peer never sees them, and only an RTO brings them back (t20: 0-4 RTOs a
 * case, each on a proxy socket peeked during a hold; docs/DESIGN.md §3b,
 * "Reading a socket's state").
 */
int mmp_tc_read_sock(struct mmp_tc *tc, int fd, const struct mmp_tc_tuple *incoming, struct mmp_tc_frozen *f)
{
	struct __attribute__((packed)) {
		uint8_t eth[14];
		struct mmp_tc_sock_query q;
	} in = { 0 }, out = { 0 };
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &in, .data_size_in = sizeof(in), .data_out = &out,
			    .data_size_out = sizeof(out), .repeat = 1);
	socklen_t len = sizeof(f->tsval);
	int err;

	err = mmp_tcp_info(fd, &f->ti);
	if (err || f->ti.tcpi_state != TCP_STATE_ESTABLISHED)
		return err; /* a FIN or RST came: the caller looks no further */
	in.q.tuple = *incoming;
	err = bpf_prog_test_run_opts(bpf_program__fd(tc->skel->progs.mmp_tc_sock_probe), &opts);
	if (err)
		return err;
	if (!out.q.found)
		return -ENOENT;
	f->rcv_nxt = out.q.rcv_nxt;
	f->snd_una = out.q.snd_una;
	f->snd_nxt = out.q.snd_nxt;
	f->write_seq = out.q.write_seq;
	f->ts_recent = out.q.ts_recent;
	f->ofo = out.q.ofo;
	f->win = (struct tcp_repair_window){ .snd_wl1 = out.q.snd_wl1, .snd_wnd = out.q.snd_wnd,
					     .max_window = out.q.max_window, .rcv_wnd = out.q.rcv_wnd,
					     .rcv_wup = out.q.rcv_wup };
	return getsockopt(fd, IPPROTO_TCP, TCP_TIMESTAMP, &f->tsval, &len) ? -errno : 0;
}

uint8_t mmp_tc_wscale(const struct tcp_info *ti, bool snd)
{
	if (!(ti->tcpi_options & TCPI_OPT_WSCALE))
		return 0;
	return snd ? ti->tcpi_snd_wscale : ti->tcpi_rcv_wscale;
}
