/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx segment: sizing, creating, publishing and destroying my shared-memory segment
 * (its layout in btl_smx_types.h; docs/design.md, "The segment").
 */
#include "opal_config.h"

#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/shmem/base/base.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
#include "opal/util/sys_limits.h"

#include "btl_smx.h"
#include "btl_smx_chunks.h"
#include "btl_smx_pages.h"
#include "btl_smx_segment.h"
#include "btl_smx_types.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Entries of a receive queue: room for every sender to have a few messages waiting. */
static uint32_t smx_queue_entries_for(int num_local)
{
    uint32_t n = 256;

    while (n < 4u * (uint32_t) num_local && n < (1u << 20)) {
        n *= 2;
    }
    return n;
}

/* Bytes before the area: the header and the queue, in whole pages. */
static uint64_t smx_area_offset(int num_local)
{
    const uint64_t page = (uint64_t) opal_getpagesize();
    const uint64_t bytes = sizeof(struct smx_segment_header)
                           + (uint64_t) smx_queue_entries_for(num_local)
                                 * sizeof(struct smx_queue_entry);
    return (bytes + page - 1) / page * page;
}

/* Bytes the segments of my job's processes made before mine hold in the backing
 * directory: each reserves its first part when it is made, and the free space I size
 * mine by must be what every process of the job saw before any did (the same sizes for
 * all). Their files are all still there: the last peer to map one unlinks it, after
 * every process has made its own. */
static uint64_t smx_job_reserved(const char *dir)
{
    char prefix[64];
    uint64_t bytes = 0;
    struct dirent *e;
    struct stat st;
    DIR *d = opendir(dir);

    if (NULL == d) {
        return 0;
    }
    snprintf(prefix, sizeof(prefix), "smx.%x.", (unsigned) OPAL_PROC_MY_NAME.jobid);
    while (NULL != (e = readdir(d))) {
        if (0 == strncmp(e->d_name, prefix, strlen(prefix))
            && 0 == fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
            bytes += (uint64_t) st.st_blocks * 512u;
        }
    }
    closedir(d);
    return bytes;
}

/*
 * My segment: a file in the backing directory named after the job id, my rank and my
 * pid (concurrent jobs never collide). The peer that maps it last unlinks it
 * (smx_attach); the memory then lives on through the mappings alone and goes with the
 * last process, kill -9 included. PMIx's cleanup list removes it if the job dies early.
 */
int mca_btl_smx_segment_create(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct statvfs vfs;
    uint64_t have = UINT64_MAX, area_offset;
    char *name;
    int rc;

    c->local_rank = opal_process_info.my_local_rank;
    c->num_local = (int) opal_process_info.num_local_peers + 1;
    if (0 == statvfs(c->backing_directory, &vfs)) {
        have = (uint64_t) vfs.f_bavail * (uint64_t) vfs.f_frsize
               + smx_job_reserved(c->backing_directory);
    }
    area_offset = smx_area_offset(c->num_local);
    /* The chunk area ('auto'): 16 MiB shared by the node's processes, at least what five
     * fragments need; halved, down to that least, while all N segments would not fit in
     * the backing directory (a container's /dev/shm of 64 MiB, say). */
    const uint64_t least = mca_btl_smx_area_min();
    /* room for a ring to every peer at most */
    const int most_rings = c->pair_rings_max < c->num_local - 1 ? c->pair_rings_max
                                                                 : c->num_local - 1;
    /* 'auto' rings: 512 KiB for the first SMX_RINGS_LARGE rings a process makes (its
     * busiest pairs: the ring carries up to 16 KiB inline), 128 KiB for later ones
     * (docs/design.md, "The pair ring"). */
    c->ring_size = c->ring_size_rest = (uint32_t) c->pair_ring_size;
    if (SMX_AUTO == c->pair_ring_size) {
        c->ring_size = 512 * 1024;
        c->ring_size_rest = most_rings > SMX_RINGS_LARGE ? 128 * 1024 : c->ring_size;
    }
    const uint64_t rings = mca_btl_smx_rings_bytes(most_rings);
    if (!c->area_fixed) {
        c->area_max = ((uint64_t) 16 << 20) / (uint64_t) c->num_local;
        c->area_max = c->area_max < least ? least : c->area_max;
        while (c->area_max / 2 >= least
               && (area_offset + c->area_max + rings) * (uint64_t) c->num_local > have) {
            c->area_max /= 2;
        }
    }
    c->area_max = (c->area_max + SMX_CACHE_LINE - 1) & ~(uint64_t) (SMX_CACHE_LINE - 1);
    c->segment_size = (size_t) (area_offset + c->area_max + rings);
    /* A full tmpfs kills its writer with SIGBUS mid-run. No room for my segment: refuse.
     * No room for all of them: run, but say what may happen and how to avoid it. */
    if (UINT64_MAX != have) {
        uint64_t all = (uint64_t) c->segment_size * (uint64_t) c->num_local;
        if (all > have) {
            char mib_one[32], mib_all[32], mib_have[32];
            bool refuse = c->segment_size > have;
            snprintf(mib_one, sizeof(mib_one), "%.1f", (double) c->segment_size / 1048576.0);
            snprintf(mib_all, sizeof(mib_all), "%.1f", (double) all / 1048576.0);
            snprintf(mib_have, sizeof(mib_have), "%.1f", (double) have / 1048576.0);
            opal_show_help("help-btl-smx.txt", refuse ? "no-shm-space" : "little-shm-space",
                           true, c->backing_directory, opal_process_info.nodename, mib_have,
                           mib_one, mib_all, c->num_local);
            if (refuse) {
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
        }
    }
    /* opal_shmem makes the segment (a file in btl_smx_backing_directory with its mmap
     * component). No shell-pattern characters in the name: PMIx's cleanup matches it as a
     * pattern. */
    if (0 > asprintf(&name, "%s/smx.%x.%u.%d", c->backing_directory,
                     (unsigned) OPAL_PROC_MY_NAME.jobid, OPAL_PROC_MY_NAME.vpid, (int) getpid())) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = opal_shmem_segment_create(&c->seg_ds, name, c->segment_size);
    if (OPAL_SUCCESS == rc) {
        opal_pmix_register_cleanup(name, false, false, false);
        c->segment = opal_shmem_segment_attach(&c->seg_ds);
        if (NULL == c->segment) {
            opal_shmem_unlink(&c->seg_ds);
        } else {
            /* Processes of jobs that come later find the file unlinked: they open it
             * through this descriptor (smx_attach); -1 leaves them to another BTL. */
            c->segment_fd = open(name, O_RDWR | O_CLOEXEC);
            if (1 == c->num_local && c->segment_fd >= 0) {
                opal_shmem_unlink(&c->seg_ds); /* no peer of my job to open it by name */
            }
        }
    }
    if (NULL == c->segment) {
        opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                            "btl:smx: cannot create a segment of %zu bytes as %s",
                            c->segment_size, name);
        free(name);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* Every page takes its blocks from the file system before it is first written, so
     * that a full one is an error, never a SIGBUS: the header (but the names of processes
     * of other jobs, a page each reserves as it writes there: smx_attach) and the queue,
     * which my peers write to, now; the chunks my area must always have at the end of
     * init (mca_btl_smx_chunks_start); a chunk's other pages when it is first used for as
     * many bytes (btl_smx_chunks.c), a pair ring's when it is made (btl_smx_send.c). So
     * what a process takes of the directory is what it has used, not its budget. */
    mca_btl_smx_pages_have(have);
    const uint64_t queue_at = sizeof(struct smx_segment_header);
    const uint64_t queue_bytes = (uint64_t) smx_queue_entries_for(c->num_local)
                                 * sizeof(struct smx_queue_entry);
    c->area_used = 0;
    c->area_ready = area_offset; /* (nothing of the area yet) */
    c->area_full = false;
    rc = mca_btl_smx_reserve(0, offsetof(struct smx_segment_header, guest_name));
    if (0 == rc) {
        rc = mca_btl_smx_reserve(queue_at, queue_bytes);
    }
    if (0 != rc) {
        mca_btl_smx_reserve_refused(offsetof(struct smx_segment_header, guest_name) + queue_bytes,
                                    rc);
        free(name);
        mca_btl_smx_segment_destroy();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    free(name);

    struct smx_segment_header *h = c->segment;
    h->num_local = (uint32_t) c->num_local;
    h->queue_entries = smx_queue_entries_for(c->num_local);
    c->queue_head = 0;
    c->queue_mask = h->queue_entries - 1;
    h->area_offset = area_offset;
    h->rings_offset = area_offset + c->area_max;
    h->size = c->segment_size;
    __atomic_store_n(&h->magic, SMX_SEGMENT_MAGIC, __ATOMIC_RELEASE);
    c->num_hot = c->num_active = 0;
    /* (zeroed pages: memory only for the entries in use) */
    const size_t most_peers = (size_t) c->num_local + SMX_GUESTS_MAX;
    c->num_peers = c->num_local;
    c->peers = calloc(most_peers, sizeof(*c->peers));
    c->hot = calloc(most_peers, sizeof(*c->hot));
    c->ringed = calloc(most_peers, sizeof(*c->ringed));
    c->num_ringed = 0;
    c->active = calloc(most_peers, sizeof(*c->active));
    c->guests = calloc(SMX_GUESTS_MAX, sizeof(*c->guests));
    if (NULL == c->peers || NULL == c->hot || NULL == c->ringed || NULL == c->active
        || NULL == c->guests) {
        mca_btl_smx_segment_destroy();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

/* Tell the peers where my segment is: the last step of init, so that no peer maps the
 * segment of a process that then gave up on smx (struct smx_modex). */
int mca_btl_smx_segment_publish(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const size_t fixed = offsetof(struct smx_modex, data);
    const size_t ds_size = opal_shmem_sizeof_shmem_ds(&c->seg_ds);
    struct smx_modex *modex;
    char *cpuset = NULL;
    size_t size;
    int rc;

    if (NULL != c->my_cpuset && !hwloc_bitmap_iszero((hwloc_bitmap_t) c->my_cpuset)) {
        (void) hwloc_bitmap_list_asprintf(&cpuset, (hwloc_bitmap_t) c->my_cpuset);
    }
    size = fixed + ds_size + (NULL != cpuset ? strlen(cpuset) : 0) + 1;
    modex = calloc(1, size);
    if (NULL == modex) {
        free(cpuset);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    modex->fd = c->segment_fd;
    modex->ds_size = (uint32_t) ds_size;
    memcpy(modex->data, &c->seg_ds, ds_size);
    memcpy(modex->data + ds_size, NULL != cpuset ? cpuset : "", size - fixed - ds_size);
    free(cpuset);
    /* Global scope, though only this node reads it: PMIx gives a process of another job
     * (a spawned child) the values of local scope of some processes and not others, and
     * a get of those then waits forever (PMIx 5.0, Open MPI 5.0.7). */
    OPAL_MODEX_SEND(rc, PMIX_GLOBAL, &c->super.btl_version, modex, size);
    free(modex);
    return rc;
}

/* Undo segment_create (and the binding smx_find_classes kept): at finalize, or when init
 * gives up. */
void mca_btl_smx_segment_destroy(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    mca_btl_smx_chunks_fini(); /* (before the endpoints' chunks are out of reach) */
    free(c->peers);
    free(c->hot);
    free(c->ringed);
    free(c->active);
    free(c->guests);
    c->peers = c->hot = c->ringed = c->active = c->guests = NULL;
    c->num_ringed = 0;
    c->num_hot = c->num_active = c->num_peers = 0;
    if (c->segment_fd >= 0) {
        close(c->segment_fd);
        c->segment_fd = -1;
    }
    if (NULL != c->segment) {
        (void) opal_shmem_unlink(&c->seg_ds); /* normally gone already */
        (void) opal_shmem_segment_detach(&c->seg_ds);
        c->segment = NULL;
    }
    if (NULL != c->my_cpuset) {
        hwloc_bitmap_free((hwloc_bitmap_t) c->my_cpuset);
        c->my_cpuset = NULL;
    }
}
