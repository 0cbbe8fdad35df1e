/* SPDX-License-Identifier: GPL-2.0 */
/*
 * -p tcp, udp or tcp,udp (docs/DESIGN.md §13): the protocols one instance
 * serves, and the per-protocol view of its configuration that the TCP and
 * UDP halves of a combined instance each run with.
 */
#ifndef MMP_PROTOCOLS_H
#define MMP_PROTOCOLS_H

#include <stdbool.h>
#include "lib/config.h"

/* "tcp", "udp" or "tcpudp": the pin directory's prefix (lib/instance.c). */
const char *mmp_config_protocol_name(const struct mmp_config *cfg);

bool mmp_config_serves(const struct mmp_config *cfg, int protocol);

/*
 * *cfg as if -p PROTOCOL alone had been given, everything else shared (the
 * pin directory included): the lock, steer and run code of one protocol
 * takes this, unchanged from single-protocol instances.
 */
void mmp_config_for_protocol(const struct mmp_config *cfg, int protocol, struct mmp_config *out);

#endif
