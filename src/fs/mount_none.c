/* Built with -Dfuse=disabled: --cat, --export and --check still work. */
#include "fs/mount.h"

bool xpf_fs_available(void) { return false; }

int xpf_fs_mount(xpf_report *r, const xpf_mount_opts *opts, xpf_error *err)
{
	(void)r;
	(void)opts;
	return xpf_fail(err, XPF_EMOUNT,
			"this xplanefs was built without FUSE (-Dfuse=disabled); use --cat, --export or --check");
}

int xpf_fs_unmount(const char *mountpoint, xpf_error *err)
{
	return xpf_fail(err, XPF_EMOUNT, "%s: this xplanefs was built without FUSE", mountpoint);
}
