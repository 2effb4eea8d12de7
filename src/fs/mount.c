/* Mounting and unmounting: the FUSE session that serves the operations of
 * mount_ops.c on a mount point, from the mount options to the unmount.  It
 * checks the mount point, builds libfuse's arguments (always `ro`), turns
 * what libfuse and fusermount3 say when a mount fails into our one-line
 * error, goes to the background only once the mount is ready, and serves
 * until unmounted or stopped; `xplanefs -u` unmounts only an xplanefs
 * mount.  Kept apart from the operations, which never see any of this. */
#include "fs/mount_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <mntent.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fuse_log.h>
#include <fuse_opt.h>

extern char **environ;

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
	if (opts->single_thread)
		res = fuse_session_loop(se);
	else
		res = xpf_mount_loop(se);
	/* res < 0: a read failed; else unmounted or stopped by a signal (-s:
	 * res is the signal's number). */
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
