/* SPDX-License-Identifier: GPL-2.0 */
/*
 * systemd readiness (Type=notify) through libsystemd's sd_notify: READY=1
 * once every listener is up and the engines attached, STOPPING=1 when a
 * signal ends the run. Outside systemd ($NOTIFY_SOCKET unset) both do nothing.
 */
#ifndef MMP_NOTIFY_H
#define MMP_NOTIFY_H

void mmp_notify_ready(const char *status);
void mmp_notify_stopping(void);

#endif
