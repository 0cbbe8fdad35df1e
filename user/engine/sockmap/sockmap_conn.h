/* SPDX-License-Identifier: GPL-2.0 */
/* What the sockmap engine's two files share: its per-connection context. */
#ifndef MMP_SOCKMAP_CONN_H
#define MMP_SOCKMAP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/conn.h"

/* Index 0 = the client socket, 1 = the upstream. */
struct mmp_sockmap_conn {
	uint64_t cookie[2]; /* cookie[0] is the flow key the pause notifications carry */
	struct mmp_conn *conn;
	uint64_t forwarded[2]; /* held-back bytes userspace forwarded from socket i */
	bool fin[2]; /* socket i received the peer's FIN */
	bool shut[2]; /* FIN forwarded from socket i to the other side */
	bool holding[2]; /* socket i has held-back bytes to forward */
	uint8_t *buf[2]; /* held-back bytes read from socket i, not yet written */
	size_t buf_len[2], buf_off[2];
};

#endif
