/* Shared by the FUSE front end's files only: mount_ops.c (the
 * operations), mount.c (mounting them) and mount_loop.c (serving them).
 * Includes the libfuse low-level API, so nothing built without FUSE may
 * include it. */
#ifndef XPF_MOUNT_PRIV_H
#define XPF_MOUNT_PRIV_H

#define FUSE_USE_VERSION 34

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include <fuse_lowlevel.h>

#include "fs/mount.h"

/* What the operations read (their request's userdata); mount.c fills it. */
typedef struct xpf_fs {
	xpf_report *report;
	bool debug;
	uid_t uid;
	gid_t gid;
	struct timespec time; /* the capture's mtime, shown on every node */
	/* The kernel skips open and release (opendir, releasedir) once they
	 * answer ENOSYS (fs_init): each is a round trip per file, and a walk
	 * of the tree opens every file once. */
	bool no_open, no_opendir;
} xpf_fs;

/* The operations (mount_ops.c): read-only, every write answers EROFS. */
extern const struct fuse_lowlevel_ops xpf_ops;

/* Serve se's requests until it is unmounted or a stop signal ends it
 * (mount_loop.c): 0, or a read's negative errno. */
int xpf_mount_loop(struct fuse_session *se);

#endif
