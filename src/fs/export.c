/* --export DIR, and the folders xplanefs never writes in (see export.h).
 *
 * The tree is written below one directory descriptor per level (openat,
 * mkdirat, unlinkat): a name inside DIR is never resolved through a
 * symbolic link, whoever put it there.  A link where the tree has a folder
 * (`modules -> ..`) is refused; one where the tree has a file
 * (`summary.txt -> ../capture.xplane.pb`) is removed and the file created
 * anew with O_EXCL, so that neither its target nor another name of the same
 * file (a hard link) is ever written through.  Each folder entered is
 * compared by device and inode with the folders that hold a capture. */
#include "fs/export.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"

/* Folders by device and inode. */
struct dev_ino {
	dev_t dev;
	ino_t ino;
};
struct folders {
	struct dev_ino *at;
	size_t n, cap;
};

static void folders_add(struct folders *f, const char *path)
{
	struct stat sb;
	if (path != NULL && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		*XPF_VEC_PUSH(f->at, f->n, f->cap) = (struct dev_ino){ sb.st_dev, sb.st_ino };
}

/* The folder of path: dirname(3) on a copy. */
static void add_folder_of(struct folders *f, const char *path)
{
	char *c = xpf_strdup(path);
	folders_add(f, dirname(c));
	free(c);
}

/* The folders in's captures lie in (as named, and their links' targets'),
 * the run directory and the folder given as CAPTURE. */
static void input_folders(struct folders *f, const xpf_input *in)
{
	if (in == NULL)
		return;
	folders_add(f, in->path);
	folders_add(f, in->run_dir);
	for (size_t i = 0; i < in->nhosts; i++) {
		char real[PATH_MAX];
		if (in->hosts[i].path == NULL)
			continue;
		add_folder_of(f, in->hosts[i].path);
		if (realpath(in->hosts[i].path, real))
			add_folder_of(f, real);
	}
}

static bool folders_hold(const struct folders *f, const struct stat *sb)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->at[i].dev == sb->st_dev && f->at[i].ino == sb->st_ino)
			return true;
	return false;
}

bool xpf_input_folder(const xpf_input *in, const char *path)
{
	struct folders f = { 0 };
	struct stat sb;
	input_folders(&f, in);
	bool held = stat(path, &sb) == 0 && folders_hold(&f, &sb);
	free(f.at);
	return held;
}

/* Whether the folder sb is one that holds folder (an absolute path) or
 * holds one that does: a mount there would hide it. */
static bool above(const char *folder, const struct stat *sb)
{
	char *c = xpf_strdup(folder);
	bool found = false;
	while (!found && strcmp(c, "/") != 0 && strcmp(c, ".") != 0) {
		char *up = xpf_strdup(dirname(c));
		struct stat ub;
		found = stat(up, &ub) == 0 && ub.st_dev == sb->st_dev && ub.st_ino == sb->st_ino;
		free(c);
		c = up;
	}
	free(c);
	return found;
}

bool xpf_input_above(const xpf_input *in, const char *path)
{
	struct stat sb;
	char real[PATH_MAX], folder[PATH_MAX];
	if (in == NULL || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return false;
	if (realpath(in->path, real) && above(real, &sb))
		return true;
	for (size_t i = 0; i < in->nhosts; i++)
		if (in->hosts[i].path && realpath(in->hosts[i].path, real)) {
			snprintf(folder, sizeof folder, "%s", real);
			if (above(folder, &sb))
				return true;
		}
	return false;
}

/* ---- where DIR may be ------------------------------------------------- */

/* The absolute form of path, which need not exist yet (its folder must). */
static bool abs_path(const char *path, char out[PATH_MAX])
{
	if (realpath(path, out))
		return true;
	char *c1 = xpf_strdup(path), *c2 = xpf_strdup(path), dir[PATH_MAX];
	bool ok = realpath(dirname(c1), dir) != NULL &&
		  snprintf(out, PATH_MAX, "%s/%s", strcmp(dir, "/") ? dir : "", basename(c2)) <
			  PATH_MAX;
	free(c1);
	free(c2);
	return ok;
}

/* Whether abs lies strictly below the folder dir (both absolute). */
static bool is_below(const char *abs, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return abs[1] != '\0';
	return strncmp(abs, dir, n) == 0 && abs[n] == '/';
}

/* Why --export DIR would write where xplanefs never writes (SPEC §6), or
 * NULL: DIR is a capture, or a folder that holds one, or lies inside the
 * run directory or logdir given as CAPTURE.  A new folder beside a capture
 * (`--export report/ capture.xplane.pb` in the capture's folder) is the
 * user's own choice: writing it leaves the capture and the other files of
 * its folder as they were. */
static const char *export_forbidden(const xpf_input *in, const char *path)
{
	char target[PATH_MAX], f[PATH_MAX];
	struct stat sb, tb;
	if (!abs_path(path, target))
		return NULL;
	bool resolved = realpath(in->path, f) != NULL;
	bool input_dir = resolved && stat(f, &sb) == 0 && S_ISDIR(sb.st_mode);
	bool exists = stat(target, &tb) == 0;
	for (size_t i = 0; exists && i < in->nhosts; i++)
		if (in->hosts[i].path && stat(in->hosts[i].path, &sb) == 0 &&
		    sb.st_dev == tb.st_dev && sb.st_ino == tb.st_ino)
			return "the capture itself";
	if (exists && xpf_input_folder(in, target))
		return "the capture's own folder";
	if (input_dir && is_below(target, f))
		return "inside the folder given as CAPTURE";
	return NULL;
}

/* ---- the walk ---------------------------------------------------------- */

struct exporter {
	struct folders inputs; /* never written in */
	xpf_export_soft *soft;
	xpf_error *err;
};

static void soft_fail(xpf_export_soft *s, const char *path, const xpf_error *e)
{
	if (s->n++ == 0) {
		s->code = e->code;
		snprintf(s->first, sizeof s->first, "%s: %s", path, e->msg);
	}
}

/* The folder dfd may be written in: it holds no capture. */
static int check_folder(struct exporter *x, int dfd, const char *path)
{
	struct stat sb;
	if (fstat(dfd, &sb) != 0)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot stat: %s", path, strerror(errno));
	if (folders_hold(&x->inputs, &sb))
		return xpf_fail(x->err, XPF_EUSAGE,
				"%s: a folder that holds a capture, which xplanefs never writes in: give --export another DIR",
				path);
	return XPF_OK;
}

/* The folder name in dfd, made if absent, opened without following a
 * link; its descriptor into *out. */
static int enter_folder(struct exporter *x, int dfd, const char *name, const char *path, int *out)
{
	if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot create: %s", path, strerror(errno));
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return xpf_fail(x->err, XPF_EOUTPUT,
				"%s: is there and is not a folder (a symbolic link is never followed): remove it or give --export another DIR",
				path);
	if (fd < 0)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot open: %s", path, strerror(errno));
	int rc = check_folder(x, fd, path);
	if (rc != XPF_OK) {
		close(fd);
		return rc;
	}
	*out = fd;
	return XPF_OK;
}

/* An entry where the tree has a file or link: removed (the entry itself,
 * a link's target never), unless it is a folder. */
static int clear_entry(struct exporter *x, int dfd, const char *name, const char *path)
{
	struct stat sb;
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? XPF_OK :
					 xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot stat: %s", path,
						  strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return xpf_fail(x->err, XPF_EOUTPUT,
				"%s: is a folder where the report has a file: remove it or give --export another DIR",
				path);
	if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot replace: %s", path, strerror(errno));
	return XPF_OK;
}

static int write_file(struct exporter *x, int dfd, const char *name, const char *path,
		      const char *data, size_t len)
{
	int rc = clear_entry(x, dfd, name, path);
	if (rc != XPF_OK)
		return rc;
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot create: %s", path, strerror(errno));
	while (len > 0) {
		ssize_t w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = xpf_fail(x->err, XPF_EOUTPUT, "%s: write failed: %s", path,
				      strerror(w < 0 ? errno : EIO));
			break;
		}
		data += w;
		len -= (size_t)w;
	}
	if (close(fd) != 0 && rc == XPF_OK)
		rc = xpf_fail(x->err, XPF_EOUTPUT, "%s: write failed: %s", path, strerror(errno));
	return rc;
}

static int write_link(struct exporter *x, int dfd, const char *name, const char *path,
		      const char *target)
{
	int rc = clear_entry(x, dfd, name, path);
	if (rc == XPF_OK && symlinkat(target, dfd, name) != 0)
		rc = xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot create symlink: %s", path,
			      strerror(errno));
	return rc;
}

static int export_folder(struct exporter *x, xpf_node *dir, int dfd, const char *path);

/* One entry k of a folder (dfd, at path/). */
static int export_entry(struct exporter *x, xpf_node *k, int dfd, const char *p)
{
	const char *data;
	size_t len;
	xpf_error e = { 0 };
	if (k->type == XPF_NODE_DIR) {
		xpf_node **kids;
		size_t n;
		int sub = -1;
		if (xpf_node_children(k, &kids, &n, &e) != XPF_OK) {
			/* Like the mount (EIO on this folder): not written, the rest goes on. */
			soft_fail(x->soft, p, &e);
			return XPF_OK;
		}
		int rc = enter_folder(x, dfd, k->name, p, &sub);
		if (rc != XPF_OK)
			return rc;
		rc = export_folder(x, k, sub, p);
		close(sub);
		return rc;
	}
	if (xpf_node_content(k, &data, &len, &e) != XPF_OK) {
		/* Like the mount: one broken part does not stop the rest. */
		soft_fail(x->soft, p, &e);
		return XPF_OK;
	}
	if (k->type == XPF_NODE_LINK)
		return write_link(x, dfd, k->name, p, data);
	int rc = write_file(x, dfd, k->name, p, data, len);
	xpf_node_forget(k); /* written: keep only one file's bytes at a time */
	return rc;
}

static int export_folder(struct exporter *x, xpf_node *dir, int dfd, const char *path)
{
	xpf_node **kids;
	size_t n;
	xpf_error e = { 0 };
	if (xpf_node_children(dir, &kids, &n, &e) != XPF_OK) {
		soft_fail(x->soft, path, &e);
		return XPF_OK;
	}
	for (size_t i = 0; i < n; i++) {
		size_t plen = strlen(path) + strlen(kids[i]->name) + 2;
		char *p = xpf_malloc(plen);
		snprintf(p, plen, "%s/%s", path, kids[i]->name);
		int rc = export_entry(x, kids[i], dfd, p);
		free(p);
		if (rc != XPF_OK)
			return rc;
	}
	return XPF_OK;
}

/* DIR as given (the user's own path: a link there is theirs to follow),
 * made if absent; its descriptor into *out. */
static int open_top(struct exporter *x, const char *dir, int *out)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot create: %s", dir, strerror(errno));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOTDIR)
		return xpf_fail(x->err, XPF_EUSAGE,
				"%s: not a directory (--export writes a tree there)", dir);
	if (fd < 0)
		return xpf_fail(x->err, XPF_EOUTPUT, "%s: cannot open: %s", dir, strerror(errno));
	int rc = check_folder(x, fd, dir);
	if (rc != XPF_OK) {
		close(fd);
		return rc;
	}
	*out = fd;
	return XPF_OK;
}

int xpf_export(xpf_report *r, const char *dir, const xpf_input *in, const xpf_input *base,
	       xpf_export_soft *soft, xpf_error *err)
{
	const char *forbidden = export_forbidden(in, dir);
	if (!forbidden && base)
		forbidden = export_forbidden(base, dir);
	if (forbidden)
		return xpf_fail(err, XPF_EUSAGE,
				"%s: %s, which xplanefs never writes to: give --export another DIR",
				dir, forbidden);
	struct exporter x = { .soft = soft, .err = err };
	input_folders(&x.inputs, in);
	input_folders(&x.inputs, base);
	int fd = -1;
	int rc = open_top(&x, dir, &fd);
	if (rc == XPF_OK) {
		rc = export_folder(&x, xpf_report_root(r), fd, dir);
		close(fd);
	}
	free(x.inputs.at);
	return rc;
}
