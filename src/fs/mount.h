/* The FUSE front end (mount.c, mount_ops.c); the only code that talks to
 * the kernel. */
#ifndef XPF_MOUNT_H
#define XPF_MOUNT_H

#include <stdbool.h>

#include "tree/report.h"

typedef struct xpf_mount_opts {
	const char *mountpoint;
	bool foreground;        /* -f */
	bool debug;             /* -d (implies foreground) */
	bool single_thread;     /* -s */
	const char *fuse_opts;  /* -o, comma-separated; "ro" is always added */
	bool remove_mountpoint; /* we created it: rmdir after unmount */
} xpf_mount_opts;

/* Mount r on opts->mountpoint and serve until unmounted.  Daemonizes only
 * once the mount is ready (errors before that reach the terminal).  Returns
 * the exit status: 0 after a clean unmount, XPF_EMOUNT if mounting failed. */
int xpf_fs_mount(xpf_report *r, const xpf_mount_opts *opts, xpf_error *err);
/* fusermount3 -u MOUNTPOINT. */
int xpf_fs_unmount(const char *mountpoint, xpf_error *err);
/* Whether this build has FUSE. */
bool xpf_fs_available(void);

#endif
