/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx pages: the pages of my segment taken from the file system (posix_fallocate: a
 * full tmpfs refuses here, at init, rather than killing a writer with SIGBUS mid-run)
 * and mapped at once.
 */
#include "opal_config.h"

#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "opal/util/sys_limits.h"

#include "btl_smx.h"
#include "btl_smx_pages.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

/*
 * Map every page of [addr, addr + len) now, writable or for reading: a chunk area's pages
 * would otherwise fault one by one in the middle of the first transfers through them
 * (tmpfs allocates a page at its first write, and each process maps it at its first
 * touch), and those first transfers would look dearer than they are to the choice of way
 * (btl_smx_choice.h). Kernels before 5.14 have no MADV_POPULATE_*: each page is touched.
 */
static void smx_prefault(void *addr, size_t len, bool write)
{
    const uintptr_t page = (uintptr_t) opal_getpagesize();
    uintptr_t first = ((uintptr_t) addr + page - 1) & ~(page - 1);
    const uintptr_t end = ((uintptr_t) addr + len) & ~(page - 1);

    if (end <= first) {
        return;
    }
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
    if (0 == madvise((void *) first, end - first, write ? MADV_POPULATE_WRITE
                                                        : MADV_POPULATE_READ)) {
        return;
    }
#endif
    for (; first < end; first += page) {
        if (write) {
            *(volatile char *) first = 0;
        } else {
            (void) *(volatile char *) first;
        }
    }
}

/* The free space in the backing directory that init sized my segment by (bytes;
 * UINT64_MAX: unknown), for the message of a reservation that failed. */
static uint64_t smx_have = UINT64_MAX;

void mca_btl_smx_pages_have(uint64_t bytes)
{
    smx_have = bytes;
}

int mca_btl_smx_reserve(uint64_t offset, uint64_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const uint64_t page = (uint64_t) opal_getpagesize();
    const uint64_t first = offset & ~(page - 1);
    uint64_t end = (offset + len + page - 1) & ~(page - 1);
    int rc;

    if (end > c->segment_size) {
        end = c->segment_size;
    }
    if (end <= first) {
        return 0;
    }
    if (c->segment_fd < 0) {
        return EBADF;
    }
    rc = posix_fallocate(c->segment_fd, (off_t) first, (off_t) (end - first));
    if (0 == rc) {
        /* mapped here at once (one call, not a fault a page in the first messages) */
        smx_prefault((char *) c->segment + first, end - first, true);
    }
    return rc;
}

uint64_t mca_btl_smx_reserved_bytes(void)
{
    const int fd = mca_btl_smx_component.segment_fd;
    struct stat st;

    return fd >= 0 && 0 == fstat(fd, &st) ? (uint64_t) st.st_blocks * 512u : 0;
}

void mca_btl_smx_reserve_refused(uint64_t bytes, int rc)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    char kib[32], mib_have[32];

    snprintf(kib, sizeof(kib), "%.0f", (double) bytes / 1024.0);
    snprintf(mib_have, sizeof(mib_have), "%.1f",
             UINT64_MAX == smx_have ? -1.0 : (double) smx_have / 1048576.0);
    opal_show_help("help-btl-smx.txt", "no-shm-reserve", true, kib, c->backing_directory,
                   opal_process_info.nodename, strerror(rc), mib_have);
}
