/* Capture decoding.  See capture.h for the model (mapped once, indexed
 * lazily, streamed).  Only HloProtos go through protobuf-c; the XSpace is
 * read with our own bounded wire reader (wire.c) so that a 1 GiB capture is
 * never materialised as structs and every error can say where it is. */
#include "capture/capture_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/wire.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"

/* ---- small helpers ---------------------------------------------------- */

bool xpf_str_eq(xpf_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && memcmp(s.p, lit, n) == 0;
}

char *xpf_str_dup(xpf_str s) { return xpf_strndup(s.p, s.n); }

/* ---- opening ---------------------------------------------------------- */

static void push_str(xpf_capture *c, int which, const uint8_t *p, size_t n)
{
	c->str[which] = xpf_realloc_array(c->str[which], c->nstr[which] + 1, sizeof(char *));
	c->str[which][c->nstr[which]++] = xpf_strndup(p, n);
}

static bool known_plane(const char *name)
{
	return strncmp(name, "/host:", 6) == 0 || strncmp(name, "/device:", 8) == 0 ||
	       strcmp(name, "Task Environment") == 0 || strncmp(name, "/gpu:", 5) == 0 ||
	       strncmp(name, "/tpu:", 5) == 0;
}

static int index_modules(xpf_capture *c, xpf_error *err);

/* What a capture whose first bytes do not decode as protobuf looks like,
 * or NULL: nothing we know.  (A gzip file is decompressed before: gzip
 * here is gzip inside gzip, or bytes given in memory.) */
static const char *first_bytes_kind(const xpf_capture *c)
{
	const uint8_t *p = c->data;
	size_t n = c->size;
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return c->gz_fd >= 0 ?
			       "gzip'd twice: what it decompresses to is gzip again (zcat it once, and give that)" :
			       "a gzip file (*.trace.json.gz is the trace viewer's copy; give the .xplane.pb beside it)";
	/* (JSON after white space decodes as a field or two first: white
	 * space is tag bytes) */
	if (n >= 1 && (p[0] == '{' || p[0] == '['))
		return "JSON text, not an XSpace protobuf";
	return NULL;
}

/* Why the XSpace's own fields do not decode: wire_next said rc of the
 * field f at at.  A first field that is none of an XSpace's means another
 * kind of file, said as such. */
static int xspace_error(const xpf_capture *c, int rc, const wire_field *f, const uint8_t *at,
			xpf_error *err)
{
	char where[64];
	if (f->num)
		snprintf(where, sizeof where, "XSpace, field %u", f->num);
	else /* the tag itself is bad */
		snprintf(where, sizeof where, "XSpace");
	/* the first field's tag is none of an XSpace's (planes, errors,
	 * warnings, hostnames): another kind of file */
	if (at == c->data && c->data[0] != TAG_XSPACE_PLANES && c->data[0] != TAG_XSPACE_ERRORS &&
	    c->data[0] != TAG_XSPACE_WARNINGS && c->data[0] != TAG_XSPACE_HOSTNAMES) {
		const char *kind = first_bytes_kind(c);
		if (kind)
			return xpf_fail(err, XPF_EMALFORMED, "%s: not a capture: %s", c->label, kind);
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: its first bytes do not decode as an XSpace (%s: %s, byte 0)",
				c->label, where, wire_strerror(rc));
	}
	if (rc == WIRE_PAST_END && f->data)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: malformed capture: XSpace, field %u: length %zu past end of file (byte %llu)%s",
				c->label, f->num, f->len, (unsigned long long)off_of(c, at),
				f->num == XSPACE_PLANES ?
					": the file ends inside a plane (cut short, or a corrupt length)" :
					"");
	return xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: %s (byte %llu)", c->label,
			where, wire_strerror(rc), (unsigned long long)off_of(c, at));
}

/* The XSpace's own fields: where each plane lies (c->heads), and its
 * errors, warnings and hostnames (c->str). */
static int read_xspace(xpf_capture *c, xpf_error *err)
{
	const uint8_t *q = c->data, *e = c->data + c->size;
	wire_field f;
	size_t cap = 0;
	for (;;) {
		const uint8_t *at = q;
		int rc = wire_next(&q, e, &f);
		if (rc == WIRE_END)
			return XPF_OK;
		if (rc != WIRE_OK)
			return xspace_error(c, rc, &f, at, err);
		if (f.num == XSPACE_PLANES && f.wt == WT_LEN) {
			if (c->nplanes == cap) {
				cap = cap ? cap * 2 : 8;
				c->heads = xpf_realloc_array(c->heads, cap, sizeof *c->heads);
			}
			xpf_plane_head *h = &c->heads[c->nplanes++];
			memset(h, 0, sizeof *h);
			h->offset = off_of(c, f.data);
			h->length = f.len;
		} else if (f.num >= XSPACE_ERRORS && f.num <= XSPACE_HOSTNAMES && f.wt == WT_LEN) {
			push_str(c, (int)f.num, f.data, f.len);
		}
	}
}

/* Plane i's id and name (h->name, "" when it has none), from its first
 * fields only.  Writers emit fields in number order: once the name is read
 * and the lines begin, the rest of the plane is validated when it is first
 * indexed (plane_build), so that opening a GB capture touches only its
 * plane headers. */
static int read_plane_name(xpf_capture *c, size_t i, xpf_error *err)
{
	xpf_plane_head *h = &c->heads[i];
	const uint8_t *r = c->data + h->offset, *re = r + h->length, *nm = NULL;
	size_t nm_n = 0;
	wire_field f;
	for (;;) {
		const uint8_t *at = r;
		int rc = wire_next(&r, re, &f);
		if (rc == WIRE_END)
			break;
		if (rc != WIRE_OK) {
			char where[400];
			h->name = xpf_strndup(nm ? nm : (const uint8_t *)"", nm_n);
			plane_where(c, i, where, sizeof where);
			if (rc == WIRE_PAST_END && f.data)
				return xpf_fail(err, XPF_EMALFORMED,
						"%s: malformed capture: %s: field %u: length %zu past end of plane (byte %llu)",
						c->label, where, f.num, f.len,
						(unsigned long long)off_of(c, at));
			return xpf_fail(err, XPF_EMALFORMED,
					"%s: malformed capture: %s: %s (byte %llu)", c->label,
					where, wire_strerror(rc), (unsigned long long)off_of(c, at));
		}
		if (f.num == XPLANE_ID && f.wt == WT_VARINT) {
			h->id = (int64_t)f.v;
		} else if (f.num == XPLANE_NAME && f.wt == WT_LEN) {
			nm = f.data;
			nm_n = f.len;
		}
		if (nm && f.num >= XPLANE_LINES)
			break;
	}
	if (nm && !wire_utf8(nm, nm_n))
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: plane %zu: name is not valid UTF-8 (byte %llu)",
				c->label, i, (unsigned long long)off_of(c, nm));
	if (nm && memchr(nm, '\0', nm_n))
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: plane %zu: name contains NUL (byte %llu)",
				c->label, i, (unsigned long long)off_of(c, nm));
	h->name = xpf_strndup(nm ? nm : (const uint8_t *)"", nm_n);
	return XPF_OK;
}

/* Whether the planes are an XSpace's: some named, one of them a host or
 * device plane.  Another protobuf message decodes as planes too. */
static int check_planes(const xpf_capture *c, xpf_error *err)
{
	size_t named = 0, known = 0;
	for (size_t i = 0; i < c->nplanes; i++) {
		named += c->heads[i].name[0] != '\0';
		known += known_plane(c->heads[i].name);
	}
	if (c->nplanes == 0)
		return xpf_fail(err, XPF_EMALFORMED, "%s: not a capture: no planes (not an XSpace)",
				c->label);
	if (named == 0)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: %zu plane(s), none named (a different protobuf message, not an XSpace)",
				c->label, c->nplanes);
	if (known == 0)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: no /host: or /device: plane (first plane '%s'%s)",
				c->label, c->heads[0].name,
				/* an HloProto reads as planes named after its entry computation */
				c->heads[0].name[0] != '/' ?
					"; an HloProto? xplanefs reads one named *.hlo.pb or *.hlo_proto.pb" :
					"");
	return XPF_OK;
}

/* The capture's framing: its planes' places and names, checked to be an
 * XSpace's, each plane's index made when first asked, the modules found. */
static int open_xspace(xpf_capture *c, xpf_error *err)
{
	if (c->size == 0)
		return xpf_fail(err, XPF_EMALFORMED, "%s: not a capture: empty file", c->label);
	int rc = read_xspace(c, err);
	for (size_t i = 0; rc == XPF_OK && i < c->nplanes; i++)
		rc = read_plane_name(c, i, err);
	if (rc == XPF_OK)
		rc = check_planes(c, err);
	if (rc != XPF_OK)
		return rc;
	c->planes = xpf_calloc(c->nplanes, sizeof *c->planes);
	c->firsts = xpf_calloc(c->nplanes, sizeof *c->firsts);
	for (size_t i = 0; i < c->nplanes; i++) {
		xpf_lazy_init(&c->planes[i]);
		xpf_lazy_init(&c->firsts[i]);
	}
	return index_modules(c, err);
}

static int index_modules(xpf_capture *c, xpf_error *err)
{
	size_t cap = 0;
	for (size_t pi = 0; pi < c->nplanes; pi++) {
		if (strcmp(c->heads[pi].name, "/host:metadata") != 0)
			continue;
		const xpf_plane *p;
		int rc = xpf_capture_plane(c, pi, &p, err);
		if (rc != XPF_OK)
			return rc;
		bool any_hlo = false; /* a plane without the stat has no modules */
		for (size_t k = 0; k < p->n_stat_md && !any_hlo; k++)
			any_hlo = strcmp(p->stat_md[k].name, "Hlo Proto") == 0;
		for (size_t k = 0; any_hlo && k < p->n_event_md; k++) {
			const xpf_event_md *md = &p->event_md[k];
			xpf_stat_iter it;
			xpf_stat st;
			bool has_hlo = false, has_pid = false;
			uint64_t pid = 0;
			const uint8_t *hlo = NULL;
			size_t hlo_len = 0;
			xpf_stats_of_event_md(p, md, &it);
			while ((rc = xpf_stats_next(&it, &st, err)) == 1) {
				if (strcmp(st.name, "Hlo Proto") == 0 &&
				    st.kind == XPF_STAT_BYTES && !has_hlo) {
					has_hlo = true;
					hlo = (const uint8_t *)st.s.p;
					hlo_len = st.s.n;
				} else if (strcmp(st.name, "program_id") == 0 && !has_pid) {
					has_pid = xpf_stat_u64(&st, &pid);
					if (!has_pid && st.kind == XPF_STAT_I64) {
						pid = (uint64_t)st.i;
						has_pid = true;
					}
				}
			}
			if (rc < 0)
				return err ? err->code : XPF_EMALFORMED;
			if (!has_hlo)
				continue;
			if (!has_pid)
				pid = (uint64_t)md->id;
			/* First entry per program id wins (reference §4.3). */
			bool dup = false;
			for (size_t j = 0; j < c->nmodules; j++)
				if (c->modules[j].program_id == pid) {
					dup = true;
					break;
				}
			if (dup)
				continue;
			if (!wire_utf8((const uint8_t *)md->name, strlen(md->name)))
				return xpf_fail(err, XPF_EMALFORMED,
						"%s: malformed capture: /host:metadata: module name is not valid UTF-8 (byte %llu)",
						c->label, (unsigned long long)md->offset);
			if (c->nmodules == cap) {
				cap = cap ? cap * 2 : 16;
				c->modules = xpf_realloc_array(c->modules, cap, sizeof *c->modules);
			}
			xpf_module_ref *m = &c->modules[c->nmodules++];
			m->name = md->name;
			m->program_id = pid;
			m->has_hlo = true;
			m->hlo = hlo;
			m->hlo_len = hlo_len;
			m->hlo_offset = off_of(c, hlo);
		}
	}
	return XPF_OK;
}

/* ---- a capture that shrinks under its mapping ---------------------------
 *
 * A file truncated while mapped (`cp new.pb capture.pb` truncates first)
 * raises SIGBUS on a read past its new end: the daemon would die and leave
 * a stale mount.  Our mappings are registered here; the handler maps zero
 * pages over the rest of the faulting mapping, counts the fault on its
 * capture and returns, so the read goes on over zeros.  The report layer
 * then refuses every file not made before (SPEC §6: EIO, a line in
 * capture/errors.txt).  mmap is async-signal-safe on Linux.
 *
 * Any number of captures are mapped at once (a run directory of a thousand
 * hosts, two of them with --base): the slots come in blocks, linked once
 * and never freed, so that the handler walks them without a lock while
 * another thread adds a block; a freed slot is used again. */

#define MAPPING_BLOCK 64
struct mapping {
	_Atomic uintptr_t lo, hi; /* [lo, hi) page-rounded; 0, 0: free slot */
	xpf_capture *_Atomic cap;
};
struct mapping_block {
	struct mapping slot[MAPPING_BLOCK];
	struct mapping_block *_Atomic next;
};
static struct mapping_block mappings; /* the first block; more follow */
static pthread_mutex_t mappings_mu = PTHREAD_MUTEX_INITIALIZER;

/* The mapping [lo, hi) holding address a, or NULL. */
static struct mapping *mapping_at(uintptr_t a)
{
	for (struct mapping_block *b = &mappings; b; b = atomic_load(&b->next))
		for (size_t i = 0; i < MAPPING_BLOCK; i++) {
			uintptr_t lo = atomic_load(&b->slot[i].lo), hi = atomic_load(&b->slot[i].hi);
			if (a >= lo && a < hi)
				return &b->slot[i];
		}
	return NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr, page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct mapping *m = mapping_at(a);
	if (m) {
		uintptr_t from = a & ~(page - 1), hi = atomic_load(&m->hi);
		if (mmap((void *)from, hi - from, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
			atomic_fetch_add(&atomic_load(&m->cap)->shrunk, 1);
			return;
		}
	}
	signal(sig, SIG_DFL); /* not ours: the default, a crash */
	raise(sig);
}

/* A free slot (mappings_mu held): in a block there, else in a new block. */
static struct mapping *free_slot(void)
{
	struct mapping_block *b = &mappings, *last = NULL;
	for (; b; last = b, b = atomic_load(&b->next))
		for (size_t i = 0; i < MAPPING_BLOCK; i++)
			if (atomic_load(&b->slot[i].hi) == 0)
				return &b->slot[i];
	b = xpf_calloc(1, sizeof *b); /* atomics of all-zero bytes: free slots */
	atomic_store(&last->next, b);
	return &b->slot[0];
}

static void mapping_add(xpf_capture *c)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_lock(&mappings_mu);
	/* Ours unless it is there already: a handler set since (a library's,
	 * a test harness's) would leave the new mapping unguarded. */
	struct sigaction sa;
	if (sigaction(SIGBUS, NULL, &sa) != 0 || !(sa.sa_flags & SA_SIGINFO) ||
	    sa.sa_sigaction != on_sigbus) {
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		(void)sigaction(SIGBUS, &sa, NULL);
	}
	struct mapping *m = free_slot();
	atomic_store(&m->cap, c);
	atomic_store(&m->lo, (uintptr_t)c->map);
	atomic_store(&m->hi, ((uintptr_t)c->map + c->map_len + page - 1) & ~(page - 1));
	pthread_mutex_unlock(&mappings_mu);
}

static void mapping_remove(const xpf_capture *c)
{
	pthread_mutex_lock(&mappings_mu);
	for (struct mapping_block *b = &mappings; b; b = atomic_load(&b->next))
		for (size_t i = 0; i < MAPPING_BLOCK; i++)
			if (atomic_load(&b->slot[i].cap) == c) {
				atomic_store(&b->slot[i].hi, 0);
				atomic_store(&b->slot[i].lo, 0);
				atomic_store(&b->slot[i].cap, NULL);
			}
	pthread_mutex_unlock(&mappings_mu);
}

unsigned xpf_capture_shrunk(xpf_capture *c) { return atomic_load(&c->shrunk); }

bool xpf_capture_changed_seen(xpf_capture *c)
{
	return atomic_load(&c->shrunk) || atomic_load(&c->changed);
}

bool xpf_capture_changed(xpf_capture *c)
{
	struct stat sb;
	if (xpf_capture_changed_seen(c))
		return true;
	int fd = c->gz_fd >= 0 ? c->gz_fd : c->fd; /* the file given, not its copy */
	if (fd < 0 || fstat(fd, &sb) != 0)
		return false;
	struct stat pb; /* the path: a file absent now is no change of ours */
	if ((uint64_t)sb.st_size != c->file_size || sb.st_mtim.tv_sec != c->opened_mtime.tv_sec ||
	    sb.st_mtim.tv_nsec != c->opened_mtime.tv_nsec ||
	    (c->real_path && stat(c->real_path, &pb) == 0 &&
	     (pb.st_dev != c->dev || pb.st_ino != c->ino))) {
		atomic_store(&c->changed, true);
		return true;
	}
	return false;
}

/* Map fd's first size bytes into c, fd kept for window reads: the file
 * itself, or the copy a gzip'd file decompressed to, by one path. */
static int map_fd(xpf_capture *c, int fd, uint64_t size, const char *path, xpf_error *err)
{
	c->size = (size_t)size;
	if (c->size > 0) {
		void *m = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			return xpf_fail(err, XPF_EIO, "%s: cannot map: %s", path, strerror(errno));
		c->map = m;
		c->map_len = c->size;
		c->data = m;
		mapping_add(c);
	} else {
		c->data = (const uint8_t *)"";
	}
	c->fd = fd;
	return XPF_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A gzip'd capture (by its first bytes, whatever its name): *fd becomes
 * its decompressed copy (gunzip.c), the file itself is kept in c->gz_fd to
 * be watched, and its label loses .gz: the report, and the byte offsets
 * of the decoder's messages, are those of the file it decompresses to. */
static int open_gzip(xpf_capture *c, int *fd, uint64_t *size, xpf_error *err)
{
	if (ends_with(c->label, ".json.gz"))
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: a gzip file (*.trace.json.gz is the trace viewer's copy; give the .xplane.pb beside it)",
				c->label);
	int copy;
	int rc = xpf_cap_gunzip(*fd, c->label, &copy, size, err);
	if (rc != XPF_OK)
		return rc;
	c->gz_fd = *fd;
	*fd = copy;
	if (ends_with(c->label, ".gz") && strlen(c->label) > 3)
		c->label[strlen(c->label) - 3] = '\0';
	return XPF_OK;
}

int xpf_cap_map_file(const char *path, xpf_capture *c, xpf_error *err)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is then
	 * refused below as not a regular file); no effect on a regular file */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return xpf_fail(err, XPF_EIO, "%s: cannot open: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		int e = errno;
		close(fd);
		return xpf_fail(err, XPF_EIO, "%s: cannot stat: %s", path, strerror(e));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return xpf_fail(err, XPF_EIO, "%s: not a regular file", path);
	}
	c->file_size = (uint64_t)sb.st_size;
	c->opened_mtime = sb.st_mtim;
	c->dev = sb.st_dev;
	c->ino = sb.st_ino;
	c->real_path = realpath(path, NULL);
	uint64_t size = c->file_size;
	int rc = xpf_cap_is_gzip(fd) ? open_gzip(c, &fd, &size, err) : XPF_OK;
	if (rc == XPF_OK)
		rc = map_fd(c, fd, size, path, err);
	if (rc != XPF_OK)
		close(fd); /* (a gzip'd file's own: xpf_capture_free) */
	return rc;
}

xpf_capture *xpf_cap_new(const char *label)
{
	xpf_capture *c = xpf_calloc(1, sizeof *c);
	c->fd = -1;
	c->gz_fd = -1;
	c->label = xpf_strdup(label);
	return c;
}

const char *xpf_cap_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

int xpf_capture_open_mem(const void *data, size_t len, const char *label, xpf_capture **out,
			 xpf_error *err)
{
	xpf_capture *c = xpf_cap_new(label);
	c->data = len ? data : (const uint8_t *)"";
	c->size = len;
	int rc = open_xspace(c, err);
	if (rc != XPF_OK) {
		xpf_capture_free(c);
		return rc;
	}
	*out = c;
	return XPF_OK;
}

int xpf_capture_open(const char *path, xpf_capture **out, xpf_error *err)
{
	xpf_capture *c = xpf_cap_new(xpf_cap_base_name(path));
	int rc = xpf_cap_map_file(path, c, err);
	if (rc == XPF_OK)
		rc = open_xspace(c, err);
	if (rc != XPF_OK) {
		xpf_capture_free(c);
		return rc;
	}
	*out = c;
	return XPF_OK;
}

void xpf_capture_free(xpf_capture *c)
{
	if (c == NULL)
		return;
	if (c->hlo_only && c->modules)
		free((char *)c->modules[0].name);
	free(c->modules);
	for (size_t i = 0; c->planes && i < c->nplanes; i++)
		xpf_lazy_release(&c->planes[i], xpf_cap_plane_free);
	free(c->planes);
	for (size_t i = 0; c->firsts && i < c->nplanes; i++)
		xpf_lazy_release(&c->firsts[i], xpf_cap_plane_free);
	free(c->firsts);
	for (size_t i = 0; i < c->nplanes; i++)
		free((char *)c->heads[i].name);
	free(c->heads);
	for (int w = 0; w < 5; w++) {
		for (size_t i = 0; i < c->nstr[w]; i++)
			free(c->str[w][i]);
		free(c->str[w]);
	}
	if (c->map) {
		mapping_remove(c);
		munmap(c->map, c->map_len);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->real_path);
	if (c->gz_fd >= 0)
		close(c->gz_fd);
	free(c->label);
	free(c);
}

/* ---- accessors -------------------------------------------------------- */

const char *xpf_capture_label(const xpf_capture *c) { return c->label; }
uint64_t xpf_capture_size(const xpf_capture *c) { return c->size; }
bool xpf_capture_is_hlo_only(const xpf_capture *c) { return c->hlo_only; }
size_t xpf_capture_nplanes(const xpf_capture *c) { return c->nplanes; }
size_t xpf_capture_nmodules(const xpf_capture *c) { return c->nmodules; }

const xpf_plane_head *xpf_capture_plane_head(const xpf_capture *c, size_t i)
{
	return i < c->nplanes ? &c->heads[i] : NULL;
}

long xpf_capture_find_plane(const xpf_capture *c, const char *name)
{
	for (size_t i = 0; i < c->nplanes; i++)
		if (strcmp(c->heads[i].name, name) == 0)
			return (long)i;
	return -1;
}

size_t xpf_capture_nstrings(const xpf_capture *c, int which)
{
	return which >= 2 && which <= 4 ? c->nstr[which] : 0;
}

const char *xpf_capture_string(const xpf_capture *c, int which, size_t i)
{
	return which >= 2 && which <= 4 && i < c->nstr[which] ? c->str[which][i] : NULL;
}

const xpf_module_ref *xpf_capture_module(const xpf_capture *c, size_t i)
{
	return i < c->nmodules ? &c->modules[i] : NULL;
}

int xpf_capture_time_base(xpf_capture *c, int64_t *out, xpf_error *err)
{
	bool any = false;
	int64_t best = 0;
	for (size_t i = 0; i < c->nplanes; i++) {
		bool has;
		int64_t ts;
		int rc = xpf_capture_plane_first_ts(c, i, &has, &ts, err);
		if (rc != XPF_OK)
			return rc;
		if (has && (!any || ts < best)) {
			best = ts;
			any = true;
		}
	}
	*out = any ? best : 0;
	return XPF_OK;
}

/* Every stat and event of plane i, its lines read through w: pread is
 * cheaper than the mapping for a pass over the whole file (xpf_window). */
static int validate_plane(xpf_capture *c, size_t i, xpf_window *w, xpf_error *err)
{
	const xpf_plane *p;
	int rc = xpf_capture_plane(c, i, &p, err);
	if (rc != XPF_OK)
		return rc;
	xpf_stat_iter sit;
	xpf_stat st;
	xpf_stats_of_plane(p, &sit);
	while ((rc = xpf_stats_next(&sit, &st, err)) == 1)
		;
	if (rc < 0)
		return err->code;
	for (size_t k = 0; k < p->n_event_md; k++) {
		xpf_stats_of_event_md(p, &p->event_md[k], &sit);
		while ((rc = xpf_stats_next(&sit, &st, err)) == 1)
			;
		if (rc < 0)
			return err->code;
	}
	for (size_t l = 0; l < p->nlines; l++) {
		xpf_event_iter it;
		xpf_event ev;
		xpf_events_begin(p, l, w, &it);
		while ((rc = xpf_events_next(&it, &ev, err)) == 1) {
			xpf_stats_of_event(p, &ev, NULL, &sit);
			while ((rc = xpf_stats_next(&sit, &st, err)) == 1)
				;
			if (rc < 0)
				return err->code;
		}
		if (rc < 0)
			return err->code;
	}
	return XPF_OK;
}

int xpf_capture_validate(xpf_capture *c, xpf_error *err)
{
	xpf_window w = { 0 };
	int rc = XPF_OK;
	for (size_t i = 0; i < c->nplanes && rc == XPF_OK; i++)
		rc = validate_plane(c, i, &w, err);
	xpf_window_release(&w);
	for (size_t i = 0; i < c->nmodules && rc == XPF_OK; i++)
		rc = xpf_capture_module_check(c, i, err);
	return rc;
}
