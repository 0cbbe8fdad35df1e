/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Socket activation (a systemd .socket unit, or systemd-socket-activate):
 * the listening sockets are the service manager's, passed as fds 3.. with
 * LISTEN_FDS / LISTEN_PID. They outlive this process, so a restart
 * (`systemctl restart`) refuses and resets nothing: connections wait in
 * their queue until the next process accepts (docs/DESIGN.md §15).
 */
#ifndef MMP_ACTIVATED_H
#define MMP_ACTIVATED_H

#include <stdbool.h>
#include <sys/socket.h>

/* Take the passed fds (once; the variables are unset so children see none). Whether there were any. */
bool mmp_activated(void);

/*
 * A listener for where: a dup of the passed TCP listening socket bound
 * exactly there, non-blocking, or -ENOENT after one line naming the
 * sockets passed and the fix.
 */
int mmp_activated_listener(const struct sockaddr_storage *where);

#endif
