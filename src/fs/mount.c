/* The FUSE front end: the report tree (analysis/report.h) as a read-only
 * filesystem, on the libfuse 3.14 low-level API.  This is the only file that
 * includes FUSE headers, replies to the kernel, and turns xpf error codes
 * into errno values (xpf_errno()).
 *
 * Inode model.  A FUSE inode number is the report node's `ino`: root = 1 =
 * FUSE_ROOT_ID, the others assigned in the deterministic order the tree is
 * built and populated.  Nodes live until xpf_report_free(), i.e. longer than
 * the mount, so lookup counts need no bookkeeping and forget is a no-op.
 *
 * Size policy.  A file is rendered the first time the kernel asks about it
 * (lookup, getattr, open) and the tree keeps the bytes, so st_size is exact
 * and every later read slices the same buffer.  The capture never changes
 * under us, hence: entry and attribute timeouts of "forever", negative
 * lookups cached the same way (ino 0 with a timeout), keep_cache on files,
 * cache_readdir on directories, cached symlinks.  A file whose rendering
 * fails (a malformed part found late) gives EIO on every access; the report
 * records the reason for capture/errors.txt.
 *
 * Read-only in depth: the mount is always `ro`, every write-like operation
 * answers EROFS, statfs says ST_RDONLY. */
#define FUSE_USE_VERSION 34

#include "fs/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <mntent.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <fuse_log.h>
#include <fuse_opt.h>

extern char **environ;

/* The capture is immutable: let the kernel cache everything for ~31 years. */
#define XPF_FOREVER 1e9

typedef struct xpf_fs {
	xpf_report *report;
	bool debug;
	uid_t uid;
	gid_t gid;
	struct timespec time; /* the capture's mtime, shown on every node */
} xpf_fs;

/* The one place where xpf error codes become errno values. */
static int xpf_errno(int code)
{
	switch (code) {
	case XPF_OK: return 0;
	case XPF_EUSAGE: return EINVAL;
	case XPF_EIO:
	case XPF_EMALFORMED:
	case XPF_EUNSUPPORTED:
	case XPF_EMOUNT:
	default: return EIO;
	}
}

static xpf_fs *fs_of(fuse_req_t req) { return fuse_req_userdata(req); }

static void reply_xpf_error(fuse_req_t req, xpf_node *n, const xpf_error *err)
{
	xpf_fs *fs = fs_of(req);
	if (fs->debug) {
		xpf_buf path = XPF_BUF_INIT;
		xpf_node_path(n, &path);
		fuse_log(FUSE_LOG_ERR, "xplanefs: /%s: %s\n", path.data ? path.data : "", err->msg);
		xpf_buf_release(&path);
	}
	fuse_reply_err(req, xpf_errno(err->code));
}

static xpf_node *node_of(fuse_req_t req, fuse_ino_t ino)
{
	return xpf_report_node_by_ino(fs_of(req)->report, ino);
}

/* Fill st for n; renders files and symlink targets (exact sizes). */
static int node_stat(xpf_fs *fs, xpf_node *n, struct stat *st, xpf_error *err)
{
	memset(st, 0, sizeof *st);
	st->st_ino = n->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = st->st_mtim = st->st_ctim = fs->time;
	st->st_blksize = 4096;
	if (n->type == XPF_NODE_DIR) {
		st->st_mode = S_IFDIR | 0555;
		/* Counting subdirectories would populate lazy directories (and
		 * decode what they show); 1 is the usual "not counted". */
		st->st_nlink = 1;
		if (n->populate == NULL) {
			xpf_node **kids;
			size_t k;
			int rc = xpf_node_children(n, &kids, &k, err);
			if (rc != XPF_OK)
				return rc;
			st->st_nlink = 2;
			for (size_t i = 0; i < k; i++)
				st->st_nlink += kids[i]->type == XPF_NODE_DIR;
		}
		return XPF_OK;
	}
	const char *data;
	size_t len;
	int rc = xpf_node_pin(n, &data, &len, err); /* its size: the bytes may go after */
	if (rc != XPF_OK)
		return rc;
	xpf_node_unpin(n);
	st->st_mode = n->type == XPF_NODE_LINK ? S_IFLNK | 0777 : S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)len;
	st->st_blocks = (blkcnt_t)((len + 511) / 512);
	return XPF_OK;
}

/* ---- reading ----------------------------------------------------------- */

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Nothing ever changes: no need to drop cached pages on getattr. */
	conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	xpf_fs *fs = fs_of(req);
	xpf_node *dir = node_of(req, parent), *n = NULL;
	xpf_error err = { 0 };
	struct fuse_entry_param e;

	if (dir == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (dir->type != XPF_NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (xpf_node_lookup(dir, name, &n, &err) != XPF_OK) {
		reply_xpf_error(req, dir, &err);
		return;
	}
	memset(&e, 0, sizeof e);
	e.entry_timeout = XPF_FOREVER;
	e.attr_timeout = XPF_FOREVER;
	if (n == NULL) {
		/* ino 0: a negative entry the kernel keeps for entry_timeout. */
		fuse_reply_entry(req, &e);
		return;
	}
	if (node_stat(fs, n, &e.attr, &err) != XPF_OK) {
		reply_xpf_error(req, n, &err);
		return;
	}
	e.ino = n->ino;
	fuse_reply_entry(req, &e);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xpf_node *n = node_of(req, ino);
	xpf_error err = { 0 };
	struct stat st;
	(void)fi;
	if (n == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (node_stat(fs_of(req), n, &st, &err) != XPF_OK) {
		reply_xpf_error(req, n, &err);
		return;
	}
	fuse_reply_attr(req, &st, XPF_FOREVER);
}

static void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	xpf_node *n = node_of(req, ino);
	xpf_error err = { 0 };
	const char *target;
	if (n == NULL) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n->type != XPF_NODE_LINK) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (xpf_node_readlink(n, &target, &err) != XPF_OK) {
		reply_xpf_error(req, n, &err);
		return;
	}
	fuse_reply_readlink(req, target);
}

/* A file's rendered bytes, or NULL after replying with the error (open and
 * read share it: rendering happens at most once, whichever comes first). */
/* File ino's bytes, pinned (xpf_node_unpin the node once replied), or NULL
 * once the error is replied. */
static xpf_node *file_content(fuse_req_t req, fuse_ino_t ino, const char **data, size_t *len)
{
	xpf_node *n = node_of(req, ino);
	xpf_error err = { 0 };
	if (n == NULL) {
		fuse_reply_err(req, ENOENT);
		return NULL;
	}
	if (n->type == XPF_NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return NULL;
	}
	if (xpf_node_pin(n, data, len, &err) != XPF_OK) {
		reply_xpf_error(req, n, &err);
		return NULL;
	}
	return n;
}

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const char *data;
	size_t len;
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, node_of(req, ino) ? EROFS : ENOENT);
		return;
	}
	xpf_node *n = file_content(req, ino, &data, &len);
	if (n == NULL)
		return;
	xpf_node_unpin(n); /* rendered: its errors are said at open */
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	const char *data;
	size_t len;
	(void)fi;
	xpf_node *n = file_content(req, ino, &data, &len);
	if (n == NULL)
		return;
	if (off < 0 || (uint64_t)off >= len) {
		fuse_reply_buf(req, NULL, 0);
	} else {
		size_t left = len - (size_t)off;
		fuse_reply_buf(req, data + off, size < left ? size : left); /* copies */
	}
	xpf_node_unpin(n);
}

/* Directory ino and its children, or NULL once the error is replied. */
static xpf_node *dir_children(fuse_req_t req, fuse_ino_t ino, xpf_node ***kids, size_t *k)
{
	xpf_node *n = node_of(req, ino);
	xpf_error err = { 0 };
	if (n == NULL) {
		fuse_reply_err(req, ENOENT);
		return NULL;
	}
	if (n->type != XPF_NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return NULL;
	}
	if (xpf_node_children(n, kids, k, &err) != XPF_OK) {
		reply_xpf_error(req, n, &err);
		return NULL;
	}
	return n;
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xpf_node **kids;
	size_t k;
	if (dir_children(req, ino, &kids, &k) == NULL)
		return;
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Offsets: 0 ".", 1 "..", 2 + i the i-th child; an entry's `off` is the
 * offset of the next one.  Children never change once listed. */
static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	xpf_node **kids;
	size_t k;
	(void)fi;
	xpf_node *n = dir_children(req, ino, &kids, &k);
	if (n == NULL)
		return;
	char *buf = malloc(size ? size : 1);
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t pos = 0;
	for (off_t i = off < 0 ? 0 : off; (uint64_t)i < k + 2; i++) {
		struct stat st;
		const char *name;
		memset(&st, 0, sizeof st);
		if (i == 0) {
			name = ".";
			st.st_ino = n->ino;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			st.st_ino = n->parent ? n->parent->ino : n->ino;
			st.st_mode = S_IFDIR;
		} else {
			xpf_node *kid = kids[i - 2];
			name = kid->name;
			st.st_ino = kid->ino;
			st.st_mode = kid->type == XPF_NODE_DIR  ? S_IFDIR :
				     kid->type == XPF_NODE_LINK ? S_IFLNK :
								  S_IFREG;
		}
		size_t need = fuse_add_direntry(req, buf + pos, size - pos, name, &st, i + 1);
		if (need > size - pos)
			break;
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	(void)ino;
	memset(&sv, 0, sizeof sv);
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	fuse_reply_statfs(req, &sv);
}

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	(void)ino;
	fuse_reply_err(req, (mask & W_OK) ? EROFS : 0);
}

/* ---- everything that would write: EROFS -------------------------------- */

static void ro_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void ro_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	fuse_reply_err(req, EROFS);
}

static void ro_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	fuse_reply_err(req, EROFS);
}

static void ro_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	fuse_reply_err(req, EROFS);
}

static void ro_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	fuse_reply_err(req, EROFS);
}

static void ro_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void ro_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	fuse_reply_err(req, EROFS);
}

static void ro_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void ro_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void ro_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void ro_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	fuse_reply_err(req, EROFS);
}

static void ro_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)offset, (void)length, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void ro_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	(void)ino_in, (void)off_in, (void)fi_in, (void)ino_out, (void)off_out, (void)fi_out;
	(void)len, (void)flags;
	fuse_reply_err(req, EROFS);
}

static const struct fuse_lowlevel_ops xpf_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.open = fs_open,
	.read = fs_read,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.statfs = fs_statfs,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.access = fs_access,
	.setattr = ro_setattr,
	.mknod = ro_mknod,
	.mkdir = ro_mkdir,
	.unlink = ro_unlink,
	.rmdir = ro_unlink,
	.symlink = ro_symlink,
	.rename = ro_rename,
	.link = ro_link,
	.write = ro_write,
	.create = ro_create,
	.setxattr = ro_setxattr,
	.removexattr = ro_removexattr,
	.fallocate = ro_fallocate,
	.copy_file_range = ro_copy_file_range,
};

/* ---- mounting ---------------------------------------------------------- */

/* -o as given, then ours; `ro` last so that it always wins over a `rw`. */
static int build_args(xpf_report *r, const xpf_mount_opts *opts, struct fuse_args *args,
		      xpf_error *err)
{
	xpf_input *in = xpf_report_input(r);
	char *o = NULL;
	char *fsname = NULL;
	if (fuse_opt_add_arg(args, "xplanefs") != 0)
		goto nomem;
	if (opts->debug && fuse_opt_add_arg(args, "-d") != 0)
		goto nomem;
	/* Mount options must fit in a page: a very long path shows its last part. */
	const char *shown = in && in->path ? in->path : "";
	if (strlen(shown) > 256)
		shown += strlen(shown) - 256;
	if (asprintf(&fsname, "fsname=xplanefs:%s", shown) < 0) {
		fsname = NULL;
		goto nomem;
	}
	if (fuse_opt_add_opt(&o, "default_permissions") != 0 ||
	    fuse_opt_add_opt_escaped(&o, fsname) != 0 ||
	    fuse_opt_add_opt(&o, "subtype=xplanefs") != 0)
		goto nomem;
	if (opts->fuse_opts && opts->fuse_opts[0] && fuse_opt_add_opt(&o, opts->fuse_opts) != 0)
		goto nomem;
	if (fuse_opt_add_opt(&o, "ro") != 0 || fuse_opt_add_arg(args, "-o") != 0 ||
	    fuse_opt_add_arg(args, o) != 0)
		goto nomem;
	free(o);
	free(fsname);
	return XPF_OK;
nomem:
	free(o);
	free(fsname);
	return xpf_fail(err, XPF_EMOUNT, "out of memory building the mount options");
}

/* While mounting, libfuse's own complaints (bad options, no /dev/fuse) are
 * kept and put into our one-line error instead of going to stderr apart. */
static char setup_msg[512];
static bool setup_msg_done;

/* libfuse may write one message in pieces: keep the first whole line. */
static void setup_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(setup_msg);
	if (level > FUSE_LOG_ERR || setup_msg_done || n + 1 >= sizeof setup_msg)
		return;
	vsnprintf(setup_msg + n, sizeof setup_msg - n, fmt, ap);
	char *nl = strchr(setup_msg, '\n');
	if (nl) {
		*nl = '\0';
		setup_msg_done = true;
	}
}

static const char *setup_reason(const char *fallback)
{
	return setup_msg[0] ? setup_msg : fallback;
}

/* fusermount3 (which libfuse runs to mount as a user) writes its
 * complaint to our stderr: while it runs, fd 2 goes
 * into a pipe, and the first line found there goes into our one-line error.
 * The pipe does not block a writer.  Not with -d (libfuse's debug output
 * goes to stderr as it comes) nor with auto_unmount (then fusermount3 stays
 * to unmount at our exit, and must keep a stderr). */
struct stderr_catch {
	int saved, rd;
};

static void catch_begin(struct stderr_catch *c)
{
	int p[2];
	c->saved = c->rd = -1;
	fflush(stderr);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return;
	c->saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (c->saved < 0 || dup2(p[1], 2) < 0) {
		if (c->saved >= 0)
			close(c->saved);
		close(p[0]);
		close(p[1]);
		c->saved = -1;
		return;
	}
	close(p[1]);
	c->rd = p[0];
}

/* Back to the real stderr; what was written meanwhile into said (size
 * bytes, "" when nothing). */
static void catch_end(struct stderr_catch *c, char *said, size_t size)
{
	said[0] = '\0';
	if (c->saved < 0)
		return;
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	ssize_t k = read(c->rd, said, size - 1);
	close(c->rd);
	said[k > 0 ? k : 0] = '\0';
}

/* The first line of s, for a one-line message. */
static const char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return s;
}

/* What the mount failure messages end with. */
#define NO_MOUNT_HINT "; --cat PATH and --export DIR read the report without a mount"

bool xpf_fs_available(void) { return true; }

static bool is_our_mount(const char *path);

/* The mount point as given, absolute in mp (fuse_daemonize() changes to
 * "/" and we rmdir it later): a directory, not already an xplanefs mount. */
static int resolve_mountpoint(const char *given, char mp[PATH_MAX], xpf_error *err)
{
	struct stat sb;
	if (realpath(given, mp) == NULL || stat(mp, &sb) < 0)
		return xpf_fail(err, XPF_EMOUNT, "%s: bad mount point: %s%s", given, strerror(errno),
				errno == ENOTCONN ?
					" (a mount whose xplanefs is gone: xplanefs -u it)" :
					"");
	if (is_our_mount(mp))
		return xpf_fail(err, XPF_EMOUNT,
				"%s: already an xplanefs mount (xplanefs -u it first)", given);
	if (!S_ISDIR(sb.st_mode))
		return xpf_fail(err, XPF_EMOUNT, "%s: bad mount point: not a directory", given);
	return XPF_OK;
}

/* What the ops read: the report, whose files are ours and dated as the
 * capture. */
static void fs_setup(xpf_fs *fs, xpf_report *r, const xpf_mount_opts *opts)
{
	struct stat sb;
	memset(fs, 0, sizeof *fs);
	fs->report = r;
	fs->debug = opts->debug;
	fs->uid = getuid();
	fs->gid = getgid();
	xpf_input *in = xpf_report_input(r);
	if (in && in->path && stat(in->path, &sb) == 0)
		fs->time = sb.st_mtim;
}

/* A shell starts background commands with SIGINT ignored, and libfuse
 * leaves ignored signals alone; but `kill -INT` must still unmount. */
static void unignore_stop_signals(void)
{
	for (size_t i = 0; i < 2; i++) {
		int sig = i == 0 ? SIGINT : SIGTERM;
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			signal(sig, SIG_DFL);
	}
}

/* se mounted on mp; on failure the one-line error says libfuse's reason,
 * then fusermount3's (struct stderr_catch). */
static int session_mount(struct fuse_session *se, const char *mp, const xpf_mount_opts *opts,
			 xpf_error *err)
{
	struct stderr_catch sc = { -1, -1 };
	char said[512];
	bool catching = !opts->debug && !(opts->fuse_opts && strstr(opts->fuse_opts, "auto_unmount"));
	if (catching)
		catch_begin(&sc);
	int res = fuse_session_mount(se, mp);
	catch_end(&sc, said, sizeof said);
	if (res != 0)
		return xpf_fail(err, XPF_EMOUNT, "%s: cannot mount: %s%s%s%s", opts->mountpoint,
				setup_msg[0] || !said[0] ?
					setup_reason("is /dev/fuse there and fusermount3 installed?") :
					"",
				setup_msg[0] && said[0] ? "; " : "", first_line(said), NO_MOUNT_HINT);
	if (said[0]) /* mounted: what fusermount3 said is a warning, kept */
		fputs(said, stderr);
	return XPF_OK;
}

/* Serve requests until unmounted, or stopped by a signal (a clean stop). */
static int serve(struct fuse_session *se, const xpf_mount_opts *opts, xpf_error *err)
{
	int res;
	if (opts->single_thread) {
		res = fuse_session_loop(se);
	} else {
		struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 10 };
		res = fuse_session_loop_mt(se, &cfg);
	}
	/* res > 0: the signal that ended the loop; 0: unmounted. */
	if (res < 0)
		return xpf_fail(err, XPF_EMOUNT, "%s: serving failed: %s", opts->mountpoint,
				strerror(-res));
	return XPF_OK;
}

int xpf_fs_mount(xpf_report *r, const xpf_mount_opts *opts, xpf_error *err)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	char mp[PATH_MAX];
	xpf_fs fs;

	int rc = resolve_mountpoint(opts->mountpoint, mp, err);
	if (rc != XPF_OK)
		return rc;
	fs_setup(&fs, r, opts);
	if (build_args(r, opts, &args, err) != XPF_OK)
		return XPF_EMOUNT;
	setup_msg[0] = '\0';
	setup_msg_done = false;
	if (!opts->debug)
		fuse_set_log_func(setup_log);
	se = fuse_session_new(&args, &xpf_ops, sizeof xpf_ops, &fs);
	if (se == NULL) {
		rc = xpf_fail(err, XPF_EMOUNT, "%s: cannot mount: %s%s", opts->mountpoint,
			      setup_reason("bad FUSE options"), NO_MOUNT_HINT);
		goto out_args;
	}
	unignore_stop_signals();
	if (fuse_set_signal_handlers(se) != 0) {
		rc = xpf_fail(err, XPF_EMOUNT, "cannot install signal handlers");
		goto out_session;
	}
	rc = session_mount(se, mp, opts, err);
	if (rc != XPF_OK)
		goto out_signals;
	fuse_set_log_func(NULL);
	/* The mount is ready: only now go to the background (the parent exits 0). */
	if (fuse_daemonize(opts->foreground || opts->debug) != 0)
		rc = xpf_fail(err, XPF_EMOUNT, "%s: cannot go to the background", opts->mountpoint);
	else
		rc = serve(se, opts, err);
	fuse_session_unmount(se);
	if (opts->remove_mountpoint)
		rmdir(mp);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_args:
	fuse_set_log_func(NULL);
	fuse_opt_free_args(&args);
	return rc;
}

/* Whether path is where an xplanefs is mounted (fstype fuse.xplanefs).
 * Only the folder above is resolved: stat on the mount point itself fails
 * with ENOTCONN once its daemon is gone, and -u must still clean that up. */
static bool is_our_mount(const char *path)
{
	char real[PATH_MAX], dir[PATH_MAX], *copy1 = strdup(path), *copy2 = strdup(path);
	bool found = false;
	if (copy1 == NULL || copy2 == NULL || realpath(dirname(copy1), dir) == NULL) {
		free(copy1);
		free(copy2);
		return false;
	}
	const char *base = basename(copy2);
	int n = strcmp(base, ".") == 0 || strcmp(base, "/") == 0 ?
			snprintf(real, sizeof real, "%s", dir) :
			snprintf(real, sizeof real, "%s/%s", strcmp(dir, "/") ? dir : "", base);
	free(copy1);
	free(copy2);
	if (n < 0 || (size_t)n >= sizeof real)
		return false;
	FILE *f = setmntent("/proc/self/mounts", "r");
	if (f == NULL)
		return false;
	struct mntent *m;
	while ((m = getmntent(f)) != NULL)
		if (strcmp(m->mnt_dir, real) == 0)
			found = strcmp(m->mnt_type, "fuse.xplanefs") == 0;
	endmntent(f);
	return found;
}

/* Only an xplanefs mount: as root, umount2() directly; otherwise (or if that
 * fails) fusermount3 -u, which checks that the user may unmount it. */
int xpf_fs_unmount(const char *mountpoint, xpf_error *err)
{
	if (!is_our_mount(mountpoint))
		return xpf_fail(err, XPF_EMOUNT, "%s: not an xplanefs mount point", mountpoint);
	if (geteuid() == 0 && umount2(mountpoint, UMOUNT_NOFOLLOW) == 0)
		return XPF_OK;
	char *const argv[] = { "fusermount3", "-u", "--", (char *)mountpoint, NULL };
	char said[512] = "";
	pid_t pid;
	int st = 0, rc = XPF_OK, p[2] = { -1, -1 };
	/* its stderr (its reason) into a pipe, for our one line */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (pipe2(p, O_CLOEXEC) == 0)
		posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	int e = posix_spawnp(&pid, "fusermount3", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (p[1] >= 0)
		close(p[1]);
	if (e != 0) {
		rc = xpf_fail(err, XPF_EMOUNT, "%s: cannot run fusermount3: %s", mountpoint,
			      strerror(e));
	} else {
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR) {
				rc = xpf_fail(err, XPF_EMOUNT, "%s: waiting for fusermount3: %s",
					      mountpoint, strerror(errno));
				break;
			}
	}
	if (p[0] >= 0) {
		ssize_t k = e == 0 ? read(p[0], said, sizeof said - 1) : 0;
		said[k > 0 ? k : 0] = '\0';
		close(p[0]);
	}
	if (rc == XPF_OK && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		rc = xpf_fail(err, XPF_EMOUNT, "%s: cannot unmount: %s", mountpoint,
			      said[0] ? first_line(said) : "fusermount3 -u failed");
	return rc;
}
