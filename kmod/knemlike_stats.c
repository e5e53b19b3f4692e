// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * knemlike: counters, read-only in /sys/class/misc/knemlike/stats/.
 */
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/errno.h>
#include <linux/sysfs.h>

#include "knemlike_internal.h"

DEFINE_PER_CPU(struct knemlike_stats, knemlike_stats);

int knemlike_refuse(int err)
{
	switch (err) {
	case -EINVAL:
	case -EFAULT:
	case -ENOTTY:
		knemlike_count(refused_bad_request);
		break;
	case -E2BIG:
	case -EMFILE:
	case -ENOSPC:
	case -EDQUOT:
		knemlike_count(refused_limit);
		break;
	case -ENOENT:
		knemlike_count(refused_no_region);
		break;
	case -EPERM:
	case -EACCES:
		knemlike_count(refused_permission);
		break;
	case -ERANGE:
		knemlike_count(refused_bounds);
		break;
	case -ESTALE:
		knemlike_count(refused_stale);
		break;
	case -ESRCH:
		knemlike_count(refused_owner_gone);
		break;
	}
	return err;
}

/* A counter's sum over the CPUs (off: its offset in struct knemlike_stats). */
static s64 knemlike_sum(size_t off)
{
	s64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *(s64 *)((char *)per_cpu_ptr(&knemlike_stats, cpu) + off);
	return sum;
}

#define KNEMLIKE_COUNTER_ATTR(name)						\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	return sysfs_emit(buf, "%lld\n",					\
			  (long long)knemlike_sum(offsetof(struct knemlike_stats, name))); \
}										\
static DEVICE_ATTR_RO(name)

KNEMLIKE_COUNTER_ATTR(regions_live);
KNEMLIKE_COUNTER_ATTR(regions_created);
KNEMLIKE_COUNTER_ATTR(regions_destroyed);
KNEMLIKE_COUNTER_ATTR(copies);
KNEMLIKE_COUNTER_ATTR(bytes_copied);
KNEMLIKE_COUNTER_ATTR(pages_pinned);
KNEMLIKE_COUNTER_ATTR(held_pages);
KNEMLIKE_COUNTER_ATTR(held_takes);
KNEMLIKE_COUNTER_ATTR(held_drops);
KNEMLIKE_COUNTER_ATTR(attachments);
KNEMLIKE_COUNTER_ATTR(attach_faults);
KNEMLIKE_COUNTER_ATTR(attach_revokes);
KNEMLIKE_COUNTER_ATTR(owners_live);
KNEMLIKE_COUNTER_ATTR(regions_orphaned);
KNEMLIKE_COUNTER_ATTR(exports_live);
KNEMLIKE_COUNTER_ATTR(exports_orphaned);
KNEMLIKE_COUNTER_ATTR(exports_revoked);
KNEMLIKE_COUNTER_ATTR(export_faults);
KNEMLIKE_COUNTER_ATTR(export_pages_mapped);
KNEMLIKE_COUNTER_ATTR(export_pages_pinned);
KNEMLIKE_COUNTER_ATTR(export_zaps);
KNEMLIKE_COUNTER_ATTR(export_cookie_misses);
KNEMLIKE_COUNTER_ATTR(refused_bad_request);
KNEMLIKE_COUNTER_ATTR(refused_limit);
KNEMLIKE_COUNTER_ATTR(refused_no_region);
KNEMLIKE_COUNTER_ATTR(refused_permission);
KNEMLIKE_COUNTER_ATTR(refused_bounds);
KNEMLIKE_COUNTER_ATTR(refused_stale);
KNEMLIKE_COUNTER_ATTR(refused_owner_gone);

static struct attribute *knemlike_stats_attrs[] = {
	&dev_attr_regions_live.attr,
	&dev_attr_regions_created.attr,
	&dev_attr_regions_destroyed.attr,
	&dev_attr_copies.attr,
	&dev_attr_bytes_copied.attr,
	&dev_attr_pages_pinned.attr,
	&dev_attr_held_pages.attr,
	&dev_attr_held_takes.attr,
	&dev_attr_held_drops.attr,
	&dev_attr_attachments.attr,
	&dev_attr_attach_faults.attr,
	&dev_attr_attach_revokes.attr,
	&dev_attr_owners_live.attr,
	&dev_attr_regions_orphaned.attr,
	&dev_attr_exports_live.attr,
	&dev_attr_exports_orphaned.attr,
	&dev_attr_exports_revoked.attr,
	&dev_attr_export_faults.attr,
	&dev_attr_export_pages_mapped.attr,
	&dev_attr_export_pages_pinned.attr,
	&dev_attr_export_zaps.attr,
	&dev_attr_export_cookie_misses.attr,
	&dev_attr_refused_bad_request.attr,
	&dev_attr_refused_limit.attr,
	&dev_attr_refused_no_region.attr,
	&dev_attr_refused_permission.attr,
	&dev_attr_refused_bounds.attr,
	&dev_attr_refused_stale.attr,
	&dev_attr_refused_owner_gone.attr,
	NULL,
};

static const struct attribute_group knemlike_stats_group = {
	.name = "stats",
	.attrs = knemlike_stats_attrs,
};

const struct attribute_group *knemlike_attr_groups[] = {
	&knemlike_stats_group,
	NULL,
};
