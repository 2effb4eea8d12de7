/* gzip'd captures (SPEC §2: `*.xplane.pb.gz`, `*.hlo.pb.gz`).
 *
 * The stream is decompressed once, a chunk at a time, into an anonymous
 * file (memfd_create; where that is refused, an unlinked file in $TMPDIR)
 * that capture.c then maps exactly as it maps a plain capture.  So the
 * decoder reads the same bytes by the same path, and the decompressed
 * bytes are that file's pages, which the kernel may swap or write back,
 * never heap: a GB capture costs no GB malloc.  The copy is bounded by
 * what can hold it (memory for a memfd, the free space of $TMPDIR), and
 * refused with a message once it would pass that, rather than ending in
 * the OOM killer or a full disk. */
#include "capture/capture_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"

#define IN_CHUNK ((size_t)64 << 10)
#define OUT_CHUNK ((size_t)256 << 10)

/* Where the decompressed bytes go. */
struct sink {
	int fd;
	const char *tmpdir; /* NULL: a memfd */
	uint64_t n, room;   /* bytes written; the most there is room for */
};

bool xpf_cap_is_gzip(int fd)
{
	uint8_t m[2];
	return pread(fd, m, 2, 0) == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

/* Memory a memfd's pages can take (MemAvailable and SwapFree of
 * /proc/meminfo), less a quarter left to everything else; UINT64_MAX when
 * unknown. */
static uint64_t memory_room(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (f == NULL)
		return UINT64_MAX;
	char line[256];
	unsigned long long kb, avail = 0, swap = 0;
	bool seen = false;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			avail = kb;
			seen = true;
		} else if (sscanf(line, "SwapFree: %llu kB", &kb) == 1) {
			swap = kb;
		}
	}
	fclose(f);
	if (!seen)
		return UINT64_MAX;
	return (avail + swap) / 4 * 3 * 1024;
}

static int sink_open(struct sink *s, const char *label, xpf_error *err)
{
	memset(s, 0, sizeof *s);
	s->fd = memfd_create("xplanefs-gunzip", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->fd >= 0) {
		s->room = memory_room();
		return XPF_OK;
	}
	/* no memfd (an old kernel, a seccomp filter): a file nobody else sees */
	s->tmpdir = getenv("TMPDIR");
	if (s->tmpdir == NULL || s->tmpdir[0] == '\0')
		s->tmpdir = "/tmp";
	char *tmpl = xpf_malloc(strlen(s->tmpdir) + 32);
	sprintf(tmpl, "%s/xplanefs-gunzip-XXXXXX", s->tmpdir);
	s->fd = mkostemp(tmpl, O_CLOEXEC);
	int e = errno;
	if (s->fd >= 0)
		unlink(tmpl);
	free(tmpl);
	if (s->fd < 0)
		return xpf_fail(err, XPF_EIO,
				"%s: cannot decompress: no memfd, and no file in %s for the copy: %s",
				label, s->tmpdir, strerror(e));
	struct statvfs v;
	s->room = fstatvfs(s->fd, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : UINT64_MAX;
	return XPF_OK;
}

static int too_big(const struct sink *s, const char *label, const char *why, xpf_error *err)
{
	char h[32];
	xpf_human(s->room, h);
	if (s->tmpdir == NULL)
		return xpf_fail(err, XPF_EIO,
				"%s: cannot decompress: it holds more than the %llu bytes (%s) of memory free for its copy%s; decompress it onto a disk (zcat) and give that",
				label, (unsigned long long)s->room, h, why);
	return xpf_fail(err, XPF_EIO,
			"%s: cannot decompress: it holds more than the %llu bytes (%s) free in %s for its copy%s",
			label, (unsigned long long)s->room, h, s->tmpdir, why);
}

/* The first bytes out say what the stream holds: JSON is the trace
 * viewer's copy, never an XSpace (whose first byte is a field tag). */
static int sink_write(struct sink *s, const uint8_t *p, size_t n, const char *label, xpf_error *err)
{
	if (s->n == 0 && n > 0 && (p[0] == '{' || p[0] == '['))
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: gzip'd JSON text (*.trace.json.gz is the trace viewer's copy; give the .xplane.pb beside it)",
				label);
	if (s->n > s->room || n > s->room - s->n)
		return too_big(s, label, "", err);
	while (n > 0) {
		ssize_t w = write(s->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == ENOSPC || errno == EFBIG || errno == ENOMEM)) {
			char why[64];
			snprintf(why, sizeof why, " (%s)", strerror(errno));
			s->room = s->n;
			return too_big(s, label, why, err);
		}
		if (w <= 0)
			return xpf_fail(err, XPF_EIO, "%s: cannot decompress: writing its copy: %s",
					label, strerror(w < 0 ? errno : EIO));
		p += w;
		n -= (size_t)w;
		s->n += (uint64_t)w;
	}
	return XPF_OK;
}

/* The gzip reader's state between chunks of the compressed file. */
struct gz {
	z_stream z;
	uint64_t read; /* compressed bytes read so far */
	bool between;  /* a member ended: zeros (ignored, as gzip does) or another member */
	uint8_t *out;  /* OUT_CHUNK */
	const char *label;
};

/* The offset of the next compressed byte inflate would read. */
static uint64_t gz_at(const struct gz *g) { return g->read - g->z.avail_in; }

/* Past a member's end: skip zeros; a byte that begins no member is refused.
 * false when the chunk is used up. */
static int gz_between(struct gz *g, xpf_error *err)
{
	while (g->z.avail_in > 0 && *g->z.next_in == 0) {
		g->z.next_in++;
		g->z.avail_in--;
	}
	if (g->z.avail_in == 0)
		return 0;
	if (*g->z.next_in != 0x1f)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: bytes after the end of the gzip stream (compressed byte %llu)",
				g->label, (unsigned long long)gz_at(g));
	g->between = false;
	return 1;
}

/* Inflate the chunk in g->z into s, as far as it goes. */
static int gz_chunk(struct gz *g, struct sink *s, xpf_error *err)
{
	do {
		if (g->between) {
			int rc = gz_between(g, err);
			if (rc <= 0)
				return rc < 0 ? err->code : XPF_OK;
		}
		g->z.next_out = g->out;
		g->z.avail_out = (uInt)OUT_CHUNK;
		int zr = inflate(&g->z, Z_NO_FLUSH);
		if (zr == Z_MEM_ERROR)
			return xpf_fail(err, XPF_EIO, "%s: cannot decompress: out of memory",
					g->label);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return xpf_fail(err, XPF_EMALFORMED,
					"%s: not a capture: corrupt gzip stream at compressed byte %llu: %s",
					g->label, (unsigned long long)gz_at(g),
					g->z.msg ? g->z.msg : "bad data");
		int rc = sink_write(s, g->out, OUT_CHUNK - g->z.avail_out, g->label, err);
		if (rc != XPF_OK)
			return rc;
		if (zr == Z_STREAM_END) {
			g->between = true;
			inflateReset(&g->z);
		}
	} while (g->z.avail_in > 0 || g->z.avail_out == 0);
	return XPF_OK;
}

static int gz_run(int in, struct gz *g, struct sink *s, xpf_error *err)
{
	uint8_t *buf = xpf_malloc(IN_CHUNK);
	int rc = XPF_OK;
	for (;;) {
		ssize_t r = read(in, buf, IN_CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = xpf_fail(err, XPF_EIO, "%s: cannot read: %s", g->label, strerror(errno));
			break;
		}
		if (r == 0) {
			if (!g->between)
				rc = xpf_fail(err, XPF_EMALFORMED,
					      "%s: not a capture: gzip stream truncated at compressed byte %llu",
					      g->label, (unsigned long long)g->read);
			break;
		}
		g->read += (uint64_t)r;
		g->z.next_in = buf;
		g->z.avail_in = (uInt)r;
		if ((rc = gz_chunk(g, s, err)) != XPF_OK)
			break;
	}
	free(buf);
	return rc;
}

int xpf_cap_gunzip(int in, const char *label, int *out, uint64_t *size, xpf_error *err)
{
	struct sink s;
	struct gz g;
	memset(&g, 0, sizeof g);
	g.label = label;
	if (lseek(in, 0, SEEK_SET) != 0)
		return xpf_fail(err, XPF_EIO, "%s: cannot read: %s", label, strerror(errno));
	int rc = sink_open(&s, label, err);
	if (rc != XPF_OK)
		return rc;
	/* 15 + 16: a window of 2^15, the gzip wrapper (its CRC and length checked) */
	if (inflateInit2(&g.z, 15 + 16) != Z_OK) {
		close(s.fd);
		return xpf_fail(err, XPF_EIO, "%s: cannot decompress: out of memory", label);
	}
	g.out = xpf_malloc(OUT_CHUNK);
	rc = gz_run(in, &g, &s, err);
	inflateEnd(&g.z);
	free(g.out);
	if (rc != XPF_OK) {
		close(s.fd);
		return rc;
	}
	/* the copy never changes again: say so to the kernel (a memfd only) */
	if (s.tmpdir == NULL)
		(void)fcntl(s.fd, F_ADD_SEALS,
			    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	*out = s.fd;
	*size = s.n;
	return XPF_OK;
}
