// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

void mmp_conn_list_push(struct mmp_conn_list *l, struct mmp_conn *c)
{
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	l->len++;
}

void mmp_conn_list_remove(struct mmp_conn_list *l, struct mmp_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
	l->len--;
}

int mmp_conn_consume_header(struct mmp_conn *c)
{
	char lb[MMP_ADDRSTRLEN];
	ssize_t n;

	if (c->header_consumed)
		return 0;
	/* MSG_TRUNC on TCP discards the bytes without copying them; they were peeked and parsed already. */
	n = recv(c->client.fd, NULL, c->header_len, MSG_TRUNC | MSG_WAITALL);
	if (n != (ssize_t)c->header_len) {
		int err = n < 0 ? -errno : -EIO;

		pr_conn("failed to consume the PROXY header from %s: %s", mmp_fmt_addr((const void *)&c->lb_addr, lb),
			n < 0 ? strerror(-err) : "short read");
		return err;
	}
	c->header_consumed = true;
	return 0;
}

const char *mmp_conn_client_name(const struct mmp_conn *c, char *buf)
{
	return mmp_fmt_addr((const void *)(c->src_addr.ss_family ? &c->src_addr : &c->lb_addr), buf);
}
