/* Shared by the FUSE front end's two files only: mount_ops.c (the
 * operations) and mount.c (mounting them).  Includes the libfuse low-level
 * API, so nothing built without FUSE may include it. */
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

#endif
