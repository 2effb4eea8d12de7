#include "capture/input.h"

#include "common/alloc.h"
#include "common/buf.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Whether directory path dir (trailing slashes aside) ends with the whole
 * path components tail ("plugins/profile" in "/x/plugins/profile/"). */
static bool ends_with_dirs(const char *dir, const char *tail)
{
	size_t n = strlen(dir), m = strlen(tail);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n >= m && strncmp(dir + n - m, tail, m) == 0 && (n == m || dir[n - m - 1] == '/');
}

static char *join(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *s = xpf_malloc(na + nb + 2);
	memcpy(s, a, na);
	s[na] = '/';
	memcpy(s + na + 1, b, nb + 1);
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir that end with suffix (or, when want_dirs, that are
 * directories). */
static int list_dir(const char *dir, const char *suffix, bool want_dirs, char ***out, size_t *n,
		    xpf_error *err)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return xpf_fail(err, XPF_EIO, "%s: cannot list: %s", dir, strerror(errno));
	char **v = NULL;
	size_t k = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (want_dirs) {
			char *p = join(dir, de->d_name);
			struct stat sb;
			bool isdir = stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
			free(p);
			if (!isdir)
				continue;
		} else if (!ends_with(de->d_name, suffix)) {
			continue;
		}
		v = xpf_realloc_array(v, k + 1, sizeof *v);
		v[k++] = xpf_strdup(de->d_name);
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof *v, cmp_str);
	*out = v;
	*n = k;
	return XPF_OK;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The kinds' suffixes, the longest of a kind first: what a name loses to
 * become a host's or a mount point's (xpf_input_stem). */
static const char *const capture_suffixes[] = {
	".xplane.pb.gz", ".hlo_proto.pb.gz", ".hlo.pb.gz", ".pb.gz", ".gz",
	".xplane.pb",    ".hlo_proto.pb",    ".hlo.pb",    ".pb",
};

char *xpf_input_stem(const char *file)
{
	const char *base = strrchr(file, '/');
	char *s = xpf_strdup(base ? base + 1 : file);
	size_t n = strlen(s);
	for (size_t i = 0; i < sizeof capture_suffixes / sizeof *capture_suffixes; i++) {
		size_t m = strlen(capture_suffixes[i]);
		if (n > m && strcmp(s + n - m, capture_suffixes[i]) == 0) {
			s[n - m] = '\0';
			break;
		}
	}
	return s;
}

/* A bare HloProto, by its name (gzip'd or not). */
static bool hlo_name(const char *path)
{
	return ends_with(path, ".hlo_proto.pb") || ends_with(path, ".hlo.pb") ||
	       ends_with(path, ".hlo_proto.pb.gz") || ends_with(path, ".hlo.pb.gz");
}

static int open_host(xpf_input *in, const char *path, const char *file, bool hlo, xpf_error *err)
{
	in->hosts = xpf_realloc_array(in->hosts, in->nhosts + 1, sizeof *in->hosts);
	xpf_input_host *h = &in->hosts[in->nhosts];
	memset(h, 0, sizeof *h);
	h->path = xpf_strdup(path);
	h->name = xpf_input_stem(file);
	int rc = hlo ? xpf_capture_open_hlo(path, &h->cap, err) :
		       xpf_capture_open(path, &h->cap, err);
	if (rc != XPF_OK) {
		free(h->path);
		free(h->name);
		return rc;
	}
	in->nhosts++;
	return XPF_OK;
}

/* A run directory's host files, sorted: `<host>.xplane.pb` and
 * `<host>.xplane.pb.gz`; of a host with both (gzip -k), the plain one. */
static int list_hosts(const char *dir, char ***out, size_t *n, xpf_error *err)
{
	char **gz;
	size_t ngz;
	int rc = list_dir(dir, ".xplane.pb", false, out, n, err);
	if (rc != XPF_OK)
		return rc;
	if ((rc = list_dir(dir, ".xplane.pb.gz", false, &gz, &ngz, err)) != XPF_OK) {
		free_list(*out, *n);
		return rc;
	}
	size_t plain = *n;
	for (size_t i = 0; i < ngz; i++) {
		char *stem = xpf_strndup(gz[i], strlen(gz[i]) - 3);
		bool both = plain && bsearch(&stem, *out, plain, sizeof **out, cmp_str);
		free(stem);
		if (both) {
			free(gz[i]);
			continue;
		}
		*out = xpf_realloc_array(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = gz[i];
	}
	free(gz);
	if (*n)
		qsort(*out, *n, sizeof **out, cmp_str);
	return XPF_OK;
}

static int open_run_dir(xpf_input *in, const char *dir, xpf_error *err)
{
	char **files;
	size_t n;
	int rc = list_hosts(dir, &files, &n, err);
	if (rc != XPF_OK)
		return rc;
	if (n == 0) {
		char **rl;
		size_t nr;
		rc = list_dir(dir, ".xplane.riegeli", false, &rl, &nr, err);
		free_list(files, n);
		if (rc != XPF_OK)
			return rc;
		free_list(rl, nr);
		if (nr)
			return xpf_fail(err, XPF_EUNSUPPORTED,
					"%s: not supported: .xplane.riegeli captures (continuous profiling); capture with jax.profiler.trace to get .xplane.pb",
					dir);
		/* a logdir's inner folders, given instead of the logdir */
		const char *hint = "";
		if (ends_with_dirs(dir, "plugins/profile"))
			hint = " (a logdir's plugins/profile: give the logdir, two levels up, or one run's folder)";
		else if (ends_with_dirs(dir, "plugins"))
			hint = " (a logdir's plugins: give the logdir, one level up)";
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: no *.xplane.pb (or .xplane.pb.gz) in this directory%s",
				dir, hint);
	}
	in->kind = XPF_INPUT_RUNDIR;
	in->run_dir = xpf_strdup(dir);
	for (size_t i = 0; i < n && rc == XPF_OK; i++) {
		char *p = join(dir, files[i]);
		rc = open_host(in, p, files[i], false, err);
		free(p);
	}
	free_list(files, n);
	return rc;
}

/* The run of the logdir path to open (runs: sorted, oldest first, since
 * their names are local times YYYY_MM_DD_HH_MM_SS): run, else the newest
 * older than before, else the newest; into *pick. */
static int pick_run(const char *path, char **runs, size_t nr, const char *run, const char *before,
		    const char **pick, xpf_error *err)
{
	*pick = NULL;
	if (run) {
		for (size_t i = 0; i < nr; i++)
			if (strcmp(runs[i], run) == 0)
				*pick = runs[i];
	} else if (before) {
		for (size_t i = 0; i < nr; i++)
			if (strcmp(runs[i], before) < 0)
				*pick = runs[i];
		if (*pick == NULL)
			return xpf_fail(err, XPF_EUSAGE,
					"%s: no run older than '%s' in plugins/profile to compare it with: give --base-run NAME, or another baseline",
					path, before);
	} else if (nr == 0) {
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: plugins/profile holds no run", path);
	} else {
		*pick = runs[nr - 1];
	}
	if (*pick)
		return XPF_OK;
	/* name the newest few */
	xpf_buf have = XPF_BUF_INIT;
	for (size_t i = nr, k = 0; i-- > 0 && k < 5; k++)
		xpf_buf_printf(&have, "%s%s", k ? ", " : "", runs[i]);
	int rc = xpf_fail(err, XPF_EUSAGE, "%s: no run '%s' in plugins/profile (%s%s%s)", path, run,
			  nr ? "newest first: " : "it holds no run", have.len ? have.data : "",
			  nr > 5 ? ", ..." : "");
	xpf_buf_release(&have);
	return rc;
}

/* A logdir's run (pick_run), opened as a run directory. */
static int open_logdir(xpf_input *in, const char *path, const char *prof, const char *run,
		       const char *before, xpf_error *err)
{
	char **runs;
	size_t nr;
	const char *pick;
	int rc = list_dir(prof, NULL, true, &runs, &nr, err);
	if (rc != XPF_OK)
		return rc;
	rc = pick_run(path, runs, nr, run, before, &pick, err);
	if (rc == XPF_OK) {
		in->run_name = xpf_strdup(pick);
		char *rd = join(prof, pick);
		rc = open_run_dir(in, rd, err);
		free(rd);
	}
	free_list(runs, nr);
	return rc;
}

int xpf_input_open(const char *path, const char *run, xpf_input **out, xpf_error *err)
{
	return xpf_input_open_run(path, run, NULL, out, err);
}

int xpf_input_open_run(const char *path, const char *run, const char *before, xpf_input **out,
		       xpf_error *err)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return xpf_fail(err, XPF_EIO, "%s: cannot open: %s", path, strerror(errno));
	xpf_input *in = xpf_calloc(1, sizeof *in);
	in->path = xpf_strdup(path);
	char *prof = join(path, "plugins/profile");
	struct stat ps;
	bool logdir = S_ISDIR(sb.st_mode) && stat(prof, &ps) == 0 && S_ISDIR(ps.st_mode);
	int rc;
	if (run && !logdir) {
		/* a run of what has none: said, not ignored */
		rc = xpf_fail(err, XPF_EUSAGE,
			      "%s: not a logdir (no plugins/profile/): its runs cannot be chosen; give the logdir, or drop the run's name",
			      path);
	} else if (logdir) {
		rc = open_logdir(in, path, prof, run, before, err);
	} else if (S_ISDIR(sb.st_mode)) {
		rc = open_run_dir(in, path, err);
	} else if (ends_with(path, ".xplane.riegeli")) {
		rc = xpf_fail(err, XPF_EUNSUPPORTED,
			      "%s: not supported: .xplane.riegeli captures (continuous profiling) are Riegeli record files; capture with jax.profiler.trace to get .xplane.pb",
			      path);
	} else if (hlo_name(path)) {
		in->kind = XPF_INPUT_HLO;
		rc = open_host(in, path, path, true, err);
	} else {
		in->kind = XPF_INPUT_FILE;
		rc = open_host(in, path, path, false, err);
	}
	free(prof);
	if (rc != XPF_OK) {
		xpf_input_free(in);
		return rc;
	}
	*out = in;
	return XPF_OK;
}

void xpf_input_free(xpf_input *in)
{
	if (in == NULL)
		return;
	for (size_t i = 0; i < in->nhosts; i++) {
		xpf_capture_free(in->hosts[i].cap);
		free(in->hosts[i].name);
		free(in->hosts[i].path);
	}
	free(in->hosts);
	free(in->path);
	free(in->run_dir);
	free(in->run_name);
	free(in);
}
