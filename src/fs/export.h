/* Where xplanefs writes (SPEC §6: never beside or over a capture): --export's
 * tree, and the check a mount point passes. */
#ifndef XPF_EXPORT_H
#define XPF_EXPORT_H

#include <limits.h>
#include <stdbool.h>

#include "capture/input.h"
#include "tree/report.h"

/* Whether path names (by its device and inode, however it is spelled) a
 * folder that holds one of in's captures, or the run directory or logdir
 * given as in. */
bool xpf_input_folder(const xpf_input *in, const char *path);
/* Whether path names a folder above one of in's captures' (their folders'
 * parent, its parent, ... up to /): a mount there hides them as well. */
bool xpf_input_above(const xpf_input *in, const char *path);

/* Files --export could not make (EIO in the mount): how many, the first. */
typedef struct xpf_export_soft {
	int n;
	int code;                                               /* the first's */
	char first[PATH_MAX + sizeof((xpf_error *)0)->msg + 2]; /* "PATH: what" */
} xpf_export_soft;

/* The report's tree into the folder dir (created if absent), for the
 * captures of in and base (NULL without --base).  Refused (XPF_EUSAGE) when
 * dir is a capture, a folder that holds one, or lies inside the run
 * directory or logdir given as CAPTURE.  Below dir nothing is followed: a
 * symbolic link or file where the tree has a folder is refused
 * (XPF_EOUTPUT), a folder that holds a capture is never written in, and an
 * entry where the tree has a file or link is replaced (the entry itself,
 * never what it points to).  Files whose part of the capture is broken are
 * counted in *soft and the rest goes on; any other failure stops it. */
int xpf_export(xpf_report *r, const char *dir, const xpf_input *in, const xpf_input *base,
	       xpf_export_soft *soft, xpf_error *err);

#endif
