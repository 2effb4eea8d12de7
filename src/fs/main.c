/* xplanefs: command line.  See usage() and README.md. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/runtime/runtime.h"
#include "tree/report.h"
#include "capture/input.h"
#include "common/alloc.h"
#include "fs/check.h"
#include "fs/export.h"
#include "fs/mount.h"

static const char usage_text[] =
	"Usage:\n"
	"  xplanefs [options] CAPTURE [MOUNTPOINT]  mount the report read-only (daemonizes when ready)\n"
	"  xplanefs --cat PATH CAPTURE              print one report file (no FUSE needed)\n"
	"  xplanefs --export DIR CAPTURE            write the whole report tree into DIR\n"
	"  xplanefs --check CAPTURE                 decode and validate everything; print a summary\n"
	"  xplanefs -u MOUNTPOINT                   unmount\n"
	"  xplanefs --base BEFORE [options] AFTER [MOUNTPOINT]   (also with --cat, --export)\n"
	"                                           AFTER's tree plus base/ (BEFORE's own tree) and\n"
	"                                           compare/: did the fix work, and by how much\n"
	"\n"
	"Explore why a JAX step ran out of device memory, from a profiler capture.\n"
	"Start with:  xplanefs --cat diagnosis.txt CAPTURE\n"
	"\n"
	"CAPTURE is one of:\n"
	"  HOST.xplane.pb                 written by jax.profiler.trace(DIR) under DIR/plugins/profile/RUN/\n"
	"  a run directory                several HOST.xplane.pb: hosts/HOST/... plus a cross-host summary\n"
	"  a logdir                       with plugins/profile/RUN/: the newest run (or --run NAME)\n"
	"  NAME.hlo_proto.pb / NAME.hlo.pb  a bare xla.HloProto (--xla_dump_hlo_as_proto): plan only\n"
	"  any of these gzip'd              HOST.xplane.pb.gz, NAME.hlo.pb.gz: read as the file they\n"
	"                                   decompress to (told by their first bytes, not the name)\n"
	"\n"
	"Options:\n"
	"  -f                 stay in the foreground\n"
	"  -d                 FUSE debug output (implies -f)\n"
	"  -s                 single-threaded\n"
	"  -o OPT[,OPT...]    FUSE mount options (ro is always forced)\n"
	"  --module NAME      the module the diagnosis breaks down (and focus points at):\n"
	"                     jit_step(12), or jit_step when one module alone has the name\n"
	"  --capacity BYTES   pool size when the capture has no allocator events\n"
	"  --top N            rows in summaries (default 25)\n"
	"  --device N         which device's allocator the diagnosis reads\n"
	"  --run NAME         which run of a logdir (CAPTURE's; a usage error for a file)\n"
	"  --base CAPTURE     compare with a baseline capture (before a fix): compare/\n"
	"                     says what changed (start with compare/diagnosis.txt);\n"
	"                     base/ is the baseline's own tree.  E.g.\n"
	"                     xplanefs --base before.xplane.pb --cat compare/diagnosis.txt after.xplane.pb\n"
	"  --base-run NAME    which run of a logdir given as --base; without it the\n"
	"                     newest, or, when --base is CAPTURE's own logdir, the run\n"
	"                     before CAPTURE's: --base LOGDIR LOGDIR compares the last two\n"
	"  -h, --help         this help\n"
	"  -V, --version      print the version\n"
	"\n"
	"Without MOUNTPOINT the report is mounted on ./NAME (NAME = the capture's name\n"
	"without .xplane.pb or .xplane.pb.gz), created now and removed at unmount.\n"
	"\n"
	"Files to read first: diagnosis.txt, focus/peak_buffers.tsv, runtime/summary.txt,\n"
	"README (what every file holds).  Also: summary.txt (devices, allocators, modules),\n"
	"checks.txt (what did not add up), modules/NAME/ (each plan), runtime/ (the\n"
	"allocator's events and executions), capture/ (planes, devices, errors.txt).\n"
	"\n"
	"No FUSE (a container, no /dev/fuse)?  --cat, --export and --check need none.\n"
	"A part of the capture found broken gives EIO on the files that need it in the\n"
	"mount, and a line in capture/errors.txt; the rest keeps working.\n"
	"\n"
	"Environment: XPF_THREADS=N  threads for the big scans (default: the CPUs, at most 8).\n"
	"             XPF_PHASES=1  print how long each phase of reading the runtime took,\n"
	"                           and the memory held, on stderr (see bench/README.md).\n"
	"             XPF_CACHE_MB=N  the mount's cache of rendered files (default 64 MiB;\n"
	"                           0: no limit); a file dropped is made again when read.\n"
	"\n"
	"Exit status:\n"
	"  0  ok\n"
	"  1  usage error\n"
	"  2  the capture cannot be read (I/O, permissions; no room to decompress a .gz)\n"
	"  3  not a capture, or malformed (--cat/--export: also when a part needed\n"
	"     was found broken; the line says which, capture/errors.txt lists all)\n"
	"  4  a capture kind that is not supported (e.g. .xplane.riegeli)\n"
	"  5  the mount failed\n"
	"  6  the output could not be written (stdout of --cat/--check, --export's DIR:\n"
	"     read-only, full, closed, or a link where the tree has a folder)\n";

static void usage(FILE *f) { fputs(usage_text, f); }

static int fail(const xpf_error *err)
{
	fprintf(stderr, "xplanefs: %s\n", err->msg);
	return err->code ? err->code : 1;
}

static int usage_error(const char *msg)
{
	fprintf(stderr, "xplanefs: %s (xplanefs --help says how)\n", msg); /* one line, as every error */
	return XPF_EUSAGE;
}

/* Whether standard output was closed when we started (guard_std_fds). */
static bool stdout_closed;

/* A standard descriptor closed at start (`>&-`) is opened on /dev/null, so
 * that no file opened later (a capture, a file of --export) takes its
 * number and gets what is written there; a closed stdout is remembered:
 * --cat and --check then fail as on a full disk (exit 6), not silently. */
static void guard_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (fd == 1)
			stdout_closed = true;
		int got = open("/dev/null", O_RDWR);
		if (got >= 0 && got != fd)
			close(got); /* a lower one was closed and is taken already */
	}
}

static int write_all(FILE *f, const char *data, size_t len)
{
	if (f == stdout && stdout_closed) {
		errno = EBADF;
		return -1;
	}
	return fwrite(data, 1, len, f) == len ? 0 : -1;
}

static int do_cat(xpf_report *r, const char *path, xpf_error *err)
{
	xpf_node *n;
	/* A symlink named last is followed, as cat does. */
	int rc = xpf_report_resolve_target(r, path, &n, err);
	if (rc != XPF_OK)
		return rc;
	if (n == NULL)
		return xpf_fail(err, XPF_EUSAGE, "%s: no such file in the report (see README)", path);
	if (n->type == XPF_NODE_DIR) {
		xpf_node **kids;
		size_t k;
		rc = xpf_node_children(n, &kids, &k, err);
		if (rc != XPF_OK)
			return rc;
		/* the path as given without its trailing slashes ("" at the root) */
		size_t pl = strlen(path);
		while (pl > 0 && path[pl - 1] == '/')
			pl--;
		return xpf_fail(err, XPF_EUSAGE, "%s: is a directory (%zu entries; try %.*s%s%s)",
				path, k, (int)pl, path, pl ? "/" : "", k ? kids[0]->name : "");
	}
	/* "diagnosis.txt/" names a directory that is not there, as cat says */
	if (path[0] && path[strlen(path) - 1] == '/')
		return xpf_fail(err, XPF_EUSAGE, "%s: not a directory", path);
	const char *data;
	size_t len;
	rc = xpf_node_content(n, &data, &len, err);
	if (rc != XPF_OK)
		return rc;
	if (write_all(stdout, data, len) != 0 || fflush(stdout) != 0)
		return xpf_fail(err, XPF_EOUTPUT, "writing to stdout: %s", strerror(errno));
	return XPF_OK;
}

/* After --cat or --export: a part found broken while the files were made
 * (the diagnosis made without the runtime, say) is said in one line, and
 * the exit status is its error's.  0 when nothing was found broken. */
static int late_error(xpf_report *r, const char *made)
{
	xpf_error late;
	if (!xpf_report_first_late_error(r, &late))
		return 0;
	fprintf(stderr, "xplanefs: %s (%s without that part; capture/errors.txt lists it)\n",
		late.msg, made);
	return late.code;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (s == NULL || *s < '0' || *s > '9') /* strtoull would skip spaces and take a sign */
		return false;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

enum {
	OPT_CAT = 256,
	OPT_EXPORT,
	OPT_CHECK,
	OPT_MODULE,
	OPT_CAPACITY,
	OPT_TOP,
	OPT_DEVICE,
	OPT_RUN,
	OPT_BASE,
	OPT_BASE_RUN
};

/* Default mount point: ./NAME, unless that would put it in the capture's
 * own folder. */
static int default_mountpoint(const xpf_input *in, char **out, xpf_error *err)
{
	char real_cap[PATH_MAX];
	if (realpath(in->path, real_cap) == NULL)
		return xpf_fail(err, XPF_EUSAGE, "cannot resolve %s", in->path);
	const char *base = strrchr(real_cap, '/');
	base = base ? base + 1 : real_cap;
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof cwd) == NULL || xpf_input_folder(in, cwd))
		return xpf_fail(err, XPF_EUSAGE,
				"the current directory holds the capture, and xplanefs never writes there: give a MOUNTPOINT");
	char *name = xpf_input_stem(base);
	/* "...xplane.pb" would name "..": a mount over the parent folder */
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		int rc = xpf_fail(err, XPF_EUSAGE,
				  "%s: its name gives no mount point ('%s'): give a MOUNTPOINT",
				  base, name);
		free(name);
		return rc;
	}
	*out = name;
	return XPF_OK;
}

/* Each capture keeps its file open (big planes are read with pread; a
 * gzip'd one its decompressed copy, and itself to be watched): a run
 * directory of a thousand hosts needs more than the usual soft limit of
 * 1024 descriptors, so take the hard limit.  A hint: failure is ignored. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* XPF_PHASES: one line on stderr as each phase of reading the runtime
 * ends, with the anonymous memory held then (bench/run reads these). */
static long status_kb(const char *file, const char *field)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen(file, "r");
	size_t n = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && sscanf(line + n, " %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static void print_phase(void *ctx, const xpf_rt_progress *p)
{
	(void)ctx;
	long anon_kb = status_kb("/proc/self/status", "RssAnon:");
	long huge_kb = status_kb("/proc/self/smaps_rollup", "AnonHugePages:");
	fprintf(stderr, "xplanefs: runtime phase %-8s %.3f s, RssAnon %ld MiB (%ld on huge pages)\n",
		p->phase, p->seconds, anon_kb / 1024, huge_kb / 1024);
	if (strcmp(p->phase, "host") == 0)
		fprintf(stderr,
			"xplanefs: runtime host lines: %zu, read in %zu chunk(s), %zu by other threads; "
			"%zu allocator events at %zu sites, %zu executions; "
			"%zu module plan(s) built beside the scan\n",
			p->host_lines, p->host_chunks, p->host_chunks_by_others, p->nevents,
			p->nsites, p->nexecutions, p->plans_beside);
	else if (strcmp(p->phase, "finish") == 0)
		fprintf(stderr,
			"xplanefs: runtime kernels of %zu of %zu device(s) read before the finish, "
			"%zu more when it asked\n",
			p->kernel_devices_before, p->kernel_devices, p->kernel_devices_asked);
}

/* The runtime's options from the environment: the only place it is read.
 * XPF_THREADS=N also shares the host lines out on a small capture (tests);
 * XPF_KERNELS=all|ask reads every device's kernels before the link, or
 * none (each when asked): for tests, the same tree either way. */
static void runtime_options_from_env(xpf_rt_options *out)
{
	xpf_rt_options ro = XPF_RT_OPTIONS_INIT;
	const char *t = getenv("XPF_THREADS"), *k = getenv("XPF_KERNELS"), *ph = getenv("XPF_PHASES");
	if (t && *t) {
		long n = strtol(t, NULL, 10);
		ro.threads = n > 1 ? (n < 64 ? (int)n : 64) : 1;
		ro.share_small = true;
	}
	if (k && strcmp(k, "all") == 0)
		ro.kernels = XPF_RT_KERNELS_ALL;
	else if (k && strcmp(k, "ask") == 0)
		ro.kernels = XPF_RT_KERNELS_ASK;
	if (ph && *ph && strcmp(ph, "0") != 0)
		ro.phase = print_phase;
	*out = ro;
}

/* What the command line asked. */
struct cli {
	xpf_options opt;
	xpf_rt_options runtime; /* opt.runtime points here */
	xpf_mount_opts mount;
	const char *cat_path, *export_path, *unmount_path, *base_path, *base_run;
	bool check;
	char **args; /* the operands: CAPTURE [MOUNTPOINT] */
	int nargs;
};

/* What the parsing steps return to go on; every other value is main's exit
 * status (--help, --version, a usage error). */
enum { GO_ON = -1 };

static const struct option longopts[] = {
	{ "cat", required_argument, NULL, OPT_CAT },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "module", required_argument, NULL, OPT_MODULE },
	{ "capacity", required_argument, NULL, OPT_CAPACITY },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "run", required_argument, NULL, OPT_RUN },
	{ "base", required_argument, NULL, OPT_BASE },
	{ "base-run", required_argument, NULL, OPT_BASE_RUN },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* getopt_long's ':' (an option without its argument) or '?' (an unknown
 * one), named as the user wrote it. */
static int bad_option(int c, int argc, char **argv)
{
	char msg[300];
	const char *o = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	if (c == ':')
		snprintf(msg, sizeof msg, "option '%s' needs an argument", o);
	else
		snprintf(msg, sizeof msg, "unknown option '%s'", o);
	return usage_error(msg);
}

/* The numbers of --capacity, --top and --device into a->opt. */
static int take_number(struct cli *a, int c, const char *arg)
{
	uint64_t v;
	switch (c) {
	case OPT_CAPACITY:
		if (!parse_u64(arg, &a->opt.capacity) || a->opt.capacity == 0)
			return usage_error("--capacity wants a number of bytes");
		break;
	case OPT_TOP:
		if (!parse_u64(arg, &v) || v == 0 || v > 1000000)
			return usage_error("--top wants a positive number");
		a->opt.top = (int)v;
		break;
	case OPT_DEVICE:
		if (!parse_u64(arg, &v) || v > 1000000)
			return usage_error("--device wants a device number");
		a->opt.device = (int)v;
		break;
	}
	return GO_ON;
}

/* One option c (with optarg) into a. */
static int take_option(struct cli *a, int c, int argc, char **argv)
{
	switch (c) {
	case 'f': a->mount.foreground = true; break;
	case 'd': a->mount.debug = a->mount.foreground = true; break;
	case 's': a->mount.single_thread = true; break;
	case 'o': a->mount.fuse_opts = optarg; break;
	case 'u': a->unmount_path = optarg; break;
	case 'h': usage(stdout); return 0;
	case 'V': printf("xplanefs %s\n", XPF_VERSION); return 0;
	case OPT_CAT: a->cat_path = optarg; break;
	case OPT_EXPORT: a->export_path = optarg; break;
	case OPT_CHECK: a->check = true; break;
	case OPT_MODULE: a->opt.module = optarg; break;
	case OPT_CAPACITY:
	case OPT_TOP:
	case OPT_DEVICE: return take_number(a, c, optarg);
	case OPT_RUN: a->opt.run = optarg; break;
	case OPT_BASE: a->base_path = optarg; break;
	case OPT_BASE_RUN: a->base_run = optarg; break;
	default: return bad_option(c, argc, argv);
	}
	return GO_ON;
}

/* The options in order, each checked as it comes (the first bad one is
 * the one said); then the operands.  The environment's runtime options are
 * read first. */
static int parse_args(struct cli *a, int argc, char **argv)
{
	int c;
	*a = (struct cli){ .opt = XPF_OPTIONS_INIT };
	runtime_options_from_env(&a->runtime);
	a->opt.runtime = &a->runtime;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fdso:u:hV", longopts, NULL)) != -1) {
		int rc = take_option(a, c, argc, argv);
		if (rc != GO_ON)
			return rc;
	}
	a->args = argv + optind;
	a->nargs = argc - optind;
	return GO_ON;
}

/* The modes and operands that go together. */
static int check_args(const struct cli *a)
{
	if (a->base_run && !a->base_path)
		return usage_error("--base-run goes with --base");
	if (a->base_path && (a->unmount_path || a->check))
		return usage_error("--base does not go with -u or --check");
	if (a->unmount_path)
		return a->nargs != 0 ? usage_error("-u takes only the mount point") : GO_ON;
	int modes = (a->cat_path != NULL) + (a->export_path != NULL) + a->check;
	if (modes > 1)
		return usage_error("--cat, --export and --check are exclusive");
	if (a->nargs < 1)
		return usage_error("missing CAPTURE");
	if (modes == 1 && a->nargs != 1)
		return usage_error("too many arguments");
	if (a->nargs > 2)
		return usage_error("too many arguments");
	return GO_ON;
}

/* --check: the summary on stdout, which must reach it. */
static int run_check(xpf_input *in, xpf_error *err)
{
	int rc = xpf_check(in, stdout, err);
	xpf_input_free(in);
	if (rc != XPF_OK) {
		fflush(stdout);
		return fail(err);
	}
	/* a summary nobody got (stdout full, closed) is not a pass */
	if (stdout_closed)
		errno = EBADF;
	if (stdout_closed || fflush(stdout) != 0 || ferror(stdout)) {
		xpf_fail(err, XPF_EOUTPUT, "writing to stdout: %s", strerror(errno ? errno : EIO));
		return fail(err);
	}
	return 0;
}

static int run_cat(xpf_report *r, const char *path, xpf_error *err)
{
	if (do_cat(r, path, err) != XPF_OK)
		return fail(err);
	return late_error(r, "the file was made");
}

/* --export DIR: files that could not be made are said in one line (the
 * first, and how many more), and the exit status is the first's error. */
static int run_export(xpf_report *r, const char *dir, const xpf_input *in, const xpf_input *base,
		      xpf_error *err)
{
	xpf_export_soft soft = { 0 };
	if (xpf_export(r, dir, in, base, &soft, err) != XPF_OK)
		return fail(err);
	if (soft.n == 0)
		return late_error(r, "the tree was made");
	if (soft.n > 1)
		fprintf(stderr,
			"xplanefs: %s; %d more files not written (capture/errors.txt lists why)\n",
			soft.first, soft.n - 1);
	else
		fprintf(stderr, "xplanefs: %s\n", soft.first);
	return soft.code ? soft.code : XPF_EMALFORMED;
}

/* MOUNTPOINT as given: anywhere but a folder that holds the capture or,
 * with --base, the baseline, or holds such a folder (the mount would hide
 * it from the daemon that reads it, and from the user). */
static int check_mountpoint(const xpf_input *in, const xpf_input *base, const char *mountpoint,
			    xpf_error *err)
{
	if (xpf_input_folder(in, mountpoint))
		return xpf_fail(err, XPF_EUSAGE,
				"%s: the capture's own folder: a mount there would hide it; give another MOUNTPOINT",
				mountpoint);
	if (base && xpf_input_folder(base, mountpoint))
		return xpf_fail(err, XPF_EUSAGE,
				"%s: the baseline's own folder: a mount there would hide it; give another MOUNTPOINT",
				mountpoint);
	for (int k = 0; k < 2; k++)
		if (xpf_input_above(k ? base : in, mountpoint))
			return xpf_fail(err, XPF_EUSAGE,
					"%s: holds the %s's folder: a mount there would hide it; give another MOUNTPOINT",
					mountpoint, k ? "baseline" : "capture");
	return XPF_OK;
}

/* No MOUNTPOINT: ./NAME (*made, to free), created unless it is there, and
 * then removed at unmount (mo->remove_mountpoint). */
static int make_mountpoint(const xpf_input *in, const xpf_input *base, char **made,
			   xpf_mount_opts *mo, xpf_error *err)
{
	char *unused = NULL; /* nor in the baseline's folder */
	int rc = default_mountpoint(in, made, err);
	if (rc == XPF_OK && base)
		rc = default_mountpoint(base, &unused, err);
	free(unused);
	if (rc != XPF_OK)
		return rc;
	if (mkdir(*made, 0755) == 0)
		mo->remove_mountpoint = true;
	else if (errno != EEXIST)
		return xpf_fail(err, XPF_EMOUNT, "%s: cannot create mount point: %s", *made,
				strerror(errno));
	mo->mountpoint = *made;
	return XPF_OK;
}

/* The mount: serves until unmounted (in the background once ready). */
static int run_mount(struct cli *a, xpf_report *r, const xpf_input *in, const xpf_input *base,
		     xpf_error *err)
{
	char *made = NULL;
	int rc;
	/* XPF_CACHE_MB: the cache of rendered files (default 64 MiB; tests
	 * make it small to see files dropped and made again) */
	const char *cache = getenv("XPF_CACHE_MB");
	if (cache && *cache)
		xpf_report_set_cache_limit(r, (size_t)strtoull(cache, NULL, 10) << 20);
	if (!xpf_fs_available()) {
		xpf_fail(err, XPF_EMOUNT,
			 "this xplanefs was built without FUSE; use --cat, --export or --check");
		return fail(err);
	}
	if (a->nargs == 2) {
		a->mount.mountpoint = a->args[1];
		rc = check_mountpoint(in, base, a->mount.mountpoint, err);
	} else {
		rc = make_mountpoint(in, base, &made, &a->mount, err);
	}
	if (rc == XPF_OK) {
		rc = xpf_fs_mount(r, &a->mount, err);
		if (rc != XPF_OK && a->mount.remove_mountpoint)
			rmdir(a->mount.mountpoint);
	}
	if (rc != XPF_OK)
		rc = fail(err);
	free(made);
	return rc;
}

/* The baseline: --base-run's run of a logdir; without it the newest, or,
 * when it is CAPTURE's own logdir, the run before the one in shows (else
 * it would be compared with itself). */
static int open_base(const struct cli *a, const xpf_input *in, xpf_input **base, xpf_error *err)
{
	struct stat x, y;
	const char *before = NULL;
	if (a->base_run == NULL && in->run_name && stat(a->base_path, &x) == 0 &&
	    stat(in->path, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino)
		before = in->run_name;
	return xpf_input_open_run(a->base_path, a->base_run, before, base, err);
}

/* --cat, --export or the mount, on the report of in (with --base, beside
 * the baseline's). */
static int run_report(struct cli *a, xpf_input *in, xpf_error *err)
{
	xpf_report *r = NULL;
	xpf_input *base = NULL;
	int rc;
	if (a->base_path && open_base(a, in, &base, err) != XPF_OK)
		rc = fail(err);
	else if (xpf_report_open_compare(in, base, &a->opt, &r, err) != XPF_OK)
		rc = fail(err);
	else if (a->cat_path)
		rc = run_cat(r, a->cat_path, err);
	else if (a->export_path)
		rc = run_export(r, a->export_path, in, base, err);
	else
		rc = run_mount(a, r, in, base, err);
	xpf_report_free(r);
	xpf_input_free(in);
	xpf_input_free(base);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli a;
	xpf_error err = { 0 };
	xpf_input *in = NULL;

	guard_std_fds();
	raise_fd_limit();
	int rc = parse_args(&a, argc, argv);
	if (rc == GO_ON)
		rc = check_args(&a);
	if (rc != GO_ON)
		return rc;
	if (a.unmount_path)
		return xpf_fs_unmount(a.unmount_path, &err) != XPF_OK ? fail(&err) : 0;
	if (xpf_input_open(a.args[0], a.opt.run, &in, &err) != XPF_OK)
		return fail(&err);
	if (a.check)
		return run_check(in, &err);
	return run_report(&a, in, &err);
}
