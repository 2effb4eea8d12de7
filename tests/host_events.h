/* For the test programs: every event of a capture's /host:CPU plane, line by
 * line, read with the capture layer's event reader through the mapping
 * (xpf_events_next, no window), handed to fn.  Asserts that the plane is there
 * and that every event decodes.  Include after <cmocka.h>. */
#ifndef XPF_TESTS_HOST_EVENTS_H
#define XPF_TESTS_HOST_EVENTS_H

#include "capture/capture.h"

typedef void host_event_fn(const xpf_plane *p, size_t line, const xpf_event *ev, void *ctx);

static inline void each_host_event(xpf_capture *c, host_event_fn *fn, void *ctx)
{
	long pi = xpf_capture_find_plane(c, "/host:CPU");
	assert_true(pi >= 0);
	const xpf_plane *p;
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_plane(c, (size_t)pi, &p, &err), XPF_OK);
	for (size_t l = 0; l < p->nlines; l++) {
		xpf_event_iter it;
		xpf_event ev;
		int rc;
		xpf_events_begin(p, l, NULL, &it);
		while ((rc = xpf_events_next(&it, &ev, &err)) == 1)
			fn(p, l, &ev, ctx);
		if (rc != 0)
			fail_msg("/host:CPU line %zu: %s", l, err.msg);
	}
}

#endif
