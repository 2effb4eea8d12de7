/* The FUSE operations: the report tree (tree/report.h) as a read-only
 * filesystem, on the libfuse 3.14 low-level API.  This file and mount.c
 * (which mounts these operations and serves them) are the only ones that
 * include FUSE headers; this one is the only code that replies to the
 * kernel and turns xpf error codes into errno values (xpf_errno()).  The
 * two are apart because they change for different reasons: what a file
 * looks like to the kernel here, how a mount starts and stops there.
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
#include "fs/mount_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fuse_log.h>

/* The capture is immutable: let the kernel cache everything for ~31 years. */
#define XPF_FOREVER 1e9

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
	xpf_fs *fs = userdata;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Lookup renders a file (its size is exact) and the mount is `ro`, so
	 * open has nothing left to do: without it the kernel keeps the pages
	 * (FOPEN_KEEP_CACHE, and FOPEN_CACHE_DIR for folders, its default
	 * then), a failed file still gives EIO on read, and a write is
	 * refused (EROFS) before it reaches us. */
	fs->no_open = conn->capable & FUSE_CAP_NO_OPEN_SUPPORT;
	fs->no_opendir = conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT;
	if (fs->no_open)
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
	if (fs->no_opendir)
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
	/* Every listing with the folders' attributes (list_dir), not only a
	 * folder's first part: `find` reads a whole folder before it stats
	 * the entries, so the kernel's "auto" mode would send a lookup per
	 * execution folder after the first few. */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
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
	if (fs_of(req)->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
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
	if (fs_of(req)->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (dir_children(req, ino, &kids, &k) == NULL)
		return;
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* The entry of a directory's child; with its attributes (plus) where
 * they cost little: a folder's, and a file's that is made when its folder
 * is listed (an execution's), so that a walk (`find`, `grep -r`) needs no
 * lookup for them (runtime/executions/ has a folder of three files per
 * execution).  Other files and links go without (ino 0: the kernel looks
 * them up when asked): a size is only known once the file is made, and a
 * listing must not make the tree's big files. */
static void child_entry(xpf_fs *fs, xpf_node *kid, bool plus, struct fuse_entry_param *e)
{
	xpf_error err = { 0 };
	memset(e, 0, sizeof *e);
	if (plus && (kid->type == XPF_NODE_DIR || kid->made_when_listed) &&
	    node_stat(fs, kid, &e->attr, &err) == XPF_OK) {
		e->ino = kid->ino;
		e->entry_timeout = XPF_FOREVER;
		e->attr_timeout = XPF_FOREVER;
		return;
	}
	e->attr.st_ino = kid->ino;
	e->attr.st_mode = kid->type == XPF_NODE_DIR  ? S_IFDIR :
			  kid->type == XPF_NODE_LINK ? S_IFLNK :
						       S_IFREG;
}

/* Offsets: 0 ".", 1 "..", 2 + i the i-th child; an entry's `off` is the
 * offset of the next one.  Children never change once listed. */
static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	xpf_node **kids;
	size_t k;
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
		struct fuse_entry_param e;
		const char *name;
		memset(&e, 0, sizeof e);
		if (i < 2) { /* ".", ".." (the kernel makes no entry of them) */
			xpf_node *d = i == 1 && n->parent ? n->parent : n;
			name = i == 0 ? "." : "..";
			e.attr.st_ino = d->ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			name = kids[i - 2]->name;
			child_entry(fs_of(req), kids[i - 2], plus, &e);
		}
		size_t need =
			plus ? fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e, i + 1) :
			       fuse_add_direntry(req, buf + pos, size - pos, name, &e.attr, i + 1);
		if (need > size - pos)
			break;
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, false);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, true);
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

const struct fuse_lowlevel_ops xpf_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.open = fs_open,
	.read = fs_read,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
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
