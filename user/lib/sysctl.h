/* SPDX-License-Identifier: GPL-2.0 */
/* Reading a sysctl from /proc/sys. */
#ifndef MMP_SYSCTL_H
#define MMP_SYSCTL_H

/* The integer value of the sysctl at path, or -1 when it cannot be read (a sandbox without /proc/sys). */
long mmp_sysctl_read(const char *path);

#endif
