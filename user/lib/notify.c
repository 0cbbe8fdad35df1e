// SPDX-License-Identifier: GPL-2.0
#include "lib/notify.h"

#ifdef MMP_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>

void mmp_notify_ready(const char *status)
{
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void mmp_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}
#else
/* Built without libsystemd-dev (make deps installs it): a Type=notify unit would time out. */
void mmp_notify_ready(const char *status)
{
	(void)status;
}

void mmp_notify_stopping(void)
{
}
#endif
