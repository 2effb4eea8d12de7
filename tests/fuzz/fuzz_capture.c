/* libFuzzer target over the decoder and every renderer.
 *
 * The input bytes are opened as a capture in memory (xpf_capture_open_mem),
 * validated as --check would, then wrapped in a one-host xpf_input and
 * report, and the whole tree is walked: every directory listed, every file
 * and symlink rendered.  A render may fail (that is a late error, EIO on the
 * mount), but it must never crash, hang, leak or trip a sanitizer.
 *
 * The first byte selects how the rest is opened, so one corpus exercises
 * every entry point: odd → a bare HloProto (plan-only tree), even → an
 * XSpace; an XSpace with bit 1 set (mode 2) is opened from a file, as the
 * HloProto is, so that a gzip'd one is decompressed first (gunzip.c).
 * (The quick HloProto reader against protobuf-c has a target of its own,
 * fuzz_pb_quick.c.)  Build with -Dfuzz=true (clang,
 * -fsanitize=fuzzer); run with scripts/fuzz. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "tree/report.h"
#include "capture/capture.h"
#include "capture/input.h"

static void walk(xpf_node *dir, int depth)
{
	xpf_node **kids;
	size_t n;
	xpf_error err = { 0 };
	if (depth > 32 || xpf_node_children(dir, &kids, &n, &err) != XPF_OK)
		return;
	for (size_t i = 0; i < n; i++) {
		xpf_node *k = kids[i];
		if (k->type == XPF_NODE_DIR) {
			walk(k, depth + 1);
		} else {
			const char *data;
			size_t len;
			xpf_error e2 = { 0 };
			if (xpf_node_content(k, &data, &len, &e2) == XPF_OK && len) {
				/* Touch every byte so ASan sees a short buffer. */
				volatile unsigned char sink = 0;
				for (size_t b = 0; b < len; b++)
					sink ^= (unsigned char)data[b];
				(void)sink;
			}
		}
	}
}

/* A bare HloProto is only opened from a path (it is mapped), and a gzip'd
 * capture is decompressed only when read from one: go through a memfd so
 * no file is written. */
static int open_file_bytes(const uint8_t *p, size_t n, bool hlo, xpf_capture **out,
			   xpf_error *err)
{
	static int fd = -1;
	char path[64];
	if (fd < 0)
		fd = memfd_create("fuzz.pb", 0);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, p, n, 0) != (ssize_t)n)
		return xpf_fail(err, XPF_EIO, "memfd");
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	return hlo ? xpf_capture_open_hlo(path, out, err) : xpf_capture_open(path, out, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool hlo = data[0] & 1, file = hlo || (data[0] & 2);
	/* The capture keeps pointers into the bytes: give it its own copy so
	 * ASan catches reads one past the end. */
	uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data + 1, size - 1);

	xpf_error err = { 0 };
	xpf_capture *cap = NULL;
	int rc;
	if (file)
		rc = open_file_bytes(copy, size - 1, hlo, &cap, &err);
	else
		rc = xpf_capture_open_mem(copy, size - 1, "fuzz.xplane.pb", &cap, &err);
	if (rc != XPF_OK) {
		free(copy);
		return 0;
	}
	xpf_error verr = { 0 };
	(void)xpf_capture_validate(cap, &verr);

	xpf_input *in = calloc(1, sizeof *in);
	if (in == NULL)
		abort();
	in->kind = xpf_capture_is_hlo_only(cap) ? XPF_INPUT_HLO : XPF_INPUT_FILE;
	in->path = strdup("fuzz.xplane.pb");
	in->nhosts = 1;
	in->hosts = calloc(1, sizeof *in->hosts);
	if (in->hosts == NULL || in->path == NULL)
		abort();
	in->hosts[0].name = strdup("fuzz");
	in->hosts[0].path = strdup("fuzz.xplane.pb");
	in->hosts[0].cap = cap;

	xpf_options opt = XPF_OPTIONS_INIT;
	xpf_report *r = NULL;
	if (xpf_report_open(in, &opt, &r, &err) == XPF_OK) {
		walk(xpf_report_root(r), 0);
		xpf_report_free(r);
	}
	xpf_input_free(in);
	free(copy);
	return 0;
}
