// SPDX-License-Identifier: GPL-2.0
/*
 * Payloads staged per flow and sent to the flow's upstream socket in arrival
 * order: runs of equal-sized payloads as one UDP_SEGMENT (GSO) send, the rest
 * with one sendmmsg (udp_forward.c has why). Used by the forward path, and by
 * the flow lifecycle, which flushes a flow's staged datagrams before
 * replacing it.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "udp/udp_stage.h"
#include "udp/udp_thread.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

void udp_stage_payload(struct udp_worker *w, struct udp_flow *f, const uint8_t *p, uint32_t len)
{
	int idx;

	if (w->nstage == UDP_STAGE_MAX)
		udp_relay_flush_forward(w);
	idx = w->nstage++;
	w->stage[idx] = (struct udp_stage){ .p = p, .len = len, .next = -1 };
	if (f->stage_tail < 0) {
		f->stage_head = idx;
		f->staged_next = w->staged;
		w->staged = f;
	} else {
		w->stage[f->stage_tail].next = idx;
	}
	f->stage_tail = idx;
	udp_ft_touch(&w->ft, f, w->now_ns);
}

static void fwd_sent(struct udp_worker *w, struct udp_flow *f, uint32_t dgrams, uint64_t bytes)
{
	f->pkts_up += dgrams;
	f->bytes_up += bytes;
	udp_cnt_add(w, MMP_UDP_CNT_fwd_dgrams, dgrams);
	udp_cnt_add(w, MMP_UDP_CNT_fwd_bytes, bytes);
}

static void fwd_failed(struct udp_worker *w, struct udp_flow *f, uint32_t dgrams, int err)
{
	char t[MMP_ADDRSTRLEN];

	udp_cnt_add(w, MMP_UDP_CNT_drop_fwd_send, dgrams);
	if (mmp_verbosity >= MMP_LOG_CONN && mmp_rl_allow(&w->rl[MMP_UDP_CNT_drop_fwd_send], w->now_ns))
		pr_conn("dropped %u datagram(s) from %s: sending to upstream %s failed: %s%s", dgrams,
			udp_ep_fmt(&f->lb, (char[MMP_ADDRSTRLEN]){ 0 }),
			mmp_fmt_addr((const struct sockaddr *)f->target, t), strerror(err),
			err == ECONNREFUSED ? " (is the upstream running?)"
			: err == EAGAIN || err == ENOBUFS ? " (the upstream is not keeping up)"
							  : "");
}

/* Send msgs[0..n) on f's connected socket. */
static void fwd_sendmmsg(struct udp_worker *w, struct udp_flow *f, struct mmsghdr *msgs, int n)
{
	int i = 0;

	while (i < n) {
		int ret = sendmmsg(f->fd, msgs + i, n - i, MSG_DONTWAIT);

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			/* msgs[i] failed; the rest may still go. */
			fwd_failed(w, f, 1, errno);
			i++;
			continue;
		}
		for (int k = i; k < i + ret; k++)
			fwd_sent(w, f, 1, msgs[k].msg_len);
		i += ret;
	}
}

/*
 * One GSO train: segs payloads from stage index first, every one size bytes
 * but the last. Returns 0, or -1 when the kernel refused it: send them singly.
 */
static int fwd_gso(struct udp_worker *w, struct udp_flow *f, int first, int segs, uint16_t size)
{
	char ctl[CMSG_SPACE(sizeof(uint16_t))] = { 0 };
	struct iovec iov = { .iov_base = w->gso_buf };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int i = first;

	for (int k = 0; k < segs; k++, i = w->stage[i].next) {
		memcpy(w->gso_buf + iov.iov_len, w->stage[i].p, w->stage[i].len);
		iov.iov_len += w->stage[i].len;
	}
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(c), &size, sizeof(size));
	while (sendmsg(f->fd, &mh, MSG_DONTWAIT) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EINVAL || errno == EMSGSIZE || errno == EIO || errno == EOPNOTSUPP) {
			f->no_gso_up = true;
			return -1;
		}
		fwd_failed(w, f, segs, errno);
		return 0;
	}
	fwd_sent(w, f, segs, iov.iov_len);
	return 0;
}

/*
 * The length of the GSO run starting at stage index i: payloads of i's size,
 * possibly ending with one shorter payload, within the kernel's limits.
 * *end gets the index after the run.
 */
static int run_length(const struct udp_stage *st, int i, int *end)
{
	uint32_t size = st[i].len, total = 0;
	int segs = 0;

	while (i >= 0 && segs < UDP_MAX_SEGS && st[i].len <= size && total + st[i].len <= UDP_MAX_PAYLOAD) {
		bool shorter = st[i].len < size;

		total += st[i].len;
		segs++;
		i = st[i].next;
		if (shorter)
			break;
	}
	*end = i;
	return segs;
}

static void fwd_flow(struct udp_worker *w, struct udp_flow *f)
{
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	int i = f->stage_head, n = 0;

	while (i >= 0) {
		int end, segs = 0;

		if (!f->no_gso_up && w->stage[i].len)
			segs = run_length(w->stage, i, &end);
		if (segs >= 2) {
			if (n) /* what came first goes first */
				fwd_sendmmsg(w, f, msgs, n);
			n = 0;
			if (!fwd_gso(w, f, i, segs, (uint16_t)w->stage[i].len)) {
				i = end;
				continue;
			}
		}
		iov[n] = (struct iovec){ .iov_base = (void *)w->stage[i].p, .iov_len = w->stage[i].len };
		msgs[n] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[n], .msg_iovlen = 1 } };
		if (++n == UDP_BATCH) {
			fwd_sendmmsg(w, f, msgs, n);
			n = 0;
		}
		i = w->stage[i].next;
	}
	if (n)
		fwd_sendmmsg(w, f, msgs, n);
}

void udp_relay_flush_forward(struct udp_worker *w)
{
	struct udp_flow *f = w->staged, *next;

	for (; f; f = next) {
		next = f->staged_next;
		fwd_flow(w, f);
		f->staged_next = NULL;
		f->stage_head = f->stage_tail = -1;
	}
	w->staged = NULL;
	w->nstage = 0;
}

