/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl/smx module: the segment, peers (add_procs / del_procs), descriptors, progress.
 */
#include "opal_config.h"

#include "opal/mca/hwloc/base/base.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/shmem/base/base.h"
#include "opal/mca/smsc/smsc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/sys_limits.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "btl_smx.h"
#include "btl_smx_fifo.h"
#include "btl_smx_policy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static void smx_endpoint_construct(mca_btl_smx_endpoint_t *ep)
{
    OBJ_CONSTRUCT(&ep->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ep->push_in_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
    OBJ_CONSTRUCT(&ep->serving, opal_list_t);
    ep->pulling = 0;
    ep->pull_since = ep->pull_bytes = 0;
    ep->pull_size = 0;
    ep->pull_work = 0;
    smx_adapt_init(&ep->adapt);
    smx_store_init(&ep->store);
    ep->short_eager = false;
    ep->skew_late = ep->skew_told = false;
    ep->skew_get_end = ep->skew_idle_seen = 0;
    ep->skew_waited = ep->skew_late_gets = 0;
    ep->push_token = ep->push_in = 0;
    ep->push_armed = false;
    ep->push_serve = NULL;
    ep->push_in_size = ep->push_in_arrived = 0;
    ep->push_in_parked = NULL;
    ep->push_in_op = NULL;
    ep->module = NULL;
    ep->peer_segment = NULL;
    ep->peer_ds = NULL;
    ep->smsc_endpoint = NULL;
    ep->queue_seen = 0;
    ep->queued = 0;
    ep->stalled = NULL;
    ep->out = ep->in = NULL;
    ep->out_head = ep->out_seen = ep->in_tail = 0;
    ep->chunks_out = 0;
    ep->ref_first = ep->ref_last = NULL;
    ep->active = false;
    ep->described = false;
}

static void smx_endpoint_destruct(mca_btl_smx_endpoint_t *ep)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(&ep->serving))) {
        mca_btl_smx_serve_drop(item);
    }
    OBJ_DESTRUCT(&ep->serving);
    mca_btl_smx_push_fini(ep);
    /* Fragments never posted (finalize with no room at the peer): back to the pool. */
    while (NULL != (item = opal_list_remove_first(&ep->pending))) {
        mca_btl_smx_frag_release((mca_btl_smx_frag_t *) item);
    }
    OBJ_DESTRUCT(&ep->pending);
    if (NULL != ep->smsc_endpoint) {
        MCA_SMSC_CALL(return_endpoint, ep->smsc_endpoint);
    }
    if (NULL != ep->peer_segment) {
        (void) opal_shmem_segment_detach(ep->peer_ds);
    }
    free(ep->peer_ds);
    OBJ_DESTRUCT(&ep->lock);
    OBJ_DESTRUCT(&ep->push_in_lock);
}

OBJ_CLASS_INSTANCE(mca_btl_smx_endpoint_t, opal_list_item_t, smx_endpoint_construct,
                   smx_endpoint_destruct);

/* Entries of a receive queue: room for every sender to have a few messages waiting. */
static uint32_t smx_queue_entries_for(int num_local)
{
    uint32_t n = 256;

    while (n < 4u * (uint32_t) num_local && n < (1u << 20)) {
        n *= 2;
    }
    return n;
}

/*
 * Map every page of [addr, addr + len) now, writable or for reading: a chunk area's pages
 * would otherwise fault one by one in the middle of the first transfers through them
 * (tmpfs allocates a page at its first write, and each process maps it at its first
 * touch), and those first transfers would look dearer than they are to the adaptive copy
 * (btl_smx_adapt.h). Kernels before 5.14 have no MADV_POPULATE_*: each page is touched.
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
    /* The header, the queue and the chunk area (written whole below, smx_prefault) take
     * their blocks from the file system now, so that a full one is an error here, never a
     * SIGBUS later; a pair ring takes its own when it is made (btl_smx_send.c). */
    rc = EBADF;
    if (c->segment_fd >= 0) {
        rc = posix_fallocate(c->segment_fd, 0, (off_t) (area_offset + c->area_max));
    }
    if (0 != rc) {
        char mib_area[32], mib_have[32];
        snprintf(mib_area, sizeof(mib_area), "%.1f",
                 (double) (area_offset + c->area_max) / 1048576.0);
        snprintf(mib_have, sizeof(mib_have), "%.1f",
                 UINT64_MAX == have ? -1.0 : (double) have / 1048576.0);
        opal_show_help("help-btl-smx.txt", "no-shm-reserve", true, mib_area,
                       c->backing_directory, opal_process_info.nodename, strerror(rc), mib_have);
        free(name);
        mca_btl_smx_segment_destroy();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    free(name);

    struct smx_segment_header *h = c->segment;
    h->num_local = (uint32_t) c->num_local;
    h->queue_entries = smx_queue_entries_for(c->num_local);
    h->area_offset = area_offset;
    h->rings_offset = area_offset + c->area_max;
    h->size = c->segment_size;
    smx_prefault((char *) c->segment + area_offset, c->area_max, true);
    __atomic_store_n(&h->magic, SMX_SEGMENT_MAGIC, __ATOMIC_RELEASE);
    /* Until local rank 0 is attached, count my own transfers in my own header. */
    c->transfers_in_flight = &h->transfers_in_flight;
    c->num_hot = c->num_active = 0;
    /* (zeroed pages: memory only for the entries in use) */
    const size_t most_peers = (size_t) c->num_local + SMX_GUESTS_MAX;
    c->num_peers = c->num_local;
    c->peers = calloc(most_peers, sizeof(*c->peers));
    c->hot = calloc(most_peers, sizeof(*c->hot));
    c->active = calloc(most_peers, sizeof(*c->active));
    c->guests = calloc(SMX_GUESTS_MAX, sizeof(*c->guests));
    if (NULL == c->peers || NULL == c->hot || NULL == c->active || NULL == c->guests) {
        mca_btl_smx_segment_destroy();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

/* Tell the peers where my segment is: the last step of init, so that no peer maps the
 * segment of a process that then gave up on smx. The modex carries the size of
 * opal_shmem's descriptor, the descriptor (the part in use), the file descriptor I keep
 * open to it (int32_t) and my cpuset as a string (empty: not bound). */
int mca_btl_smx_segment_publish(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const uint32_t ds_size = (uint32_t) opal_shmem_sizeof_shmem_ds(&c->seg_ds);
    char *cpuset = NULL;
    unsigned char *blob;
    size_t size;
    int rc;

    if (NULL != c->my_cpuset && !hwloc_bitmap_iszero((hwloc_bitmap_t) c->my_cpuset)) {
        (void) hwloc_bitmap_list_asprintf(&cpuset, (hwloc_bitmap_t) c->my_cpuset);
    }
    const int32_t fd = c->segment_fd;
    size = sizeof(ds_size) + ds_size + sizeof(fd) + (NULL != cpuset ? strlen(cpuset) : 0) + 1;
    blob = malloc(size);
    if (NULL == blob) {
        free(cpuset);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(blob, &ds_size, sizeof(ds_size));
    memcpy(blob + sizeof(ds_size), &c->seg_ds, ds_size);
    memcpy(blob + sizeof(ds_size) + ds_size, &fd, sizeof(fd));
    strcpy((char *) blob + sizeof(ds_size) + ds_size + sizeof(fd), NULL != cpuset ? cpuset : "");
    free(cpuset);
    /* Global scope, though only this node reads it: PMIx gives a process of another job
     * (a spawned child) the values of local scope of some processes and not others, and
     * a get of those then waits forever (PMIx 5.0, Open MPI 5.0.7). */
    OPAL_MODEX_SEND(rc, PMIX_GLOBAL, &c->super.btl_version, blob, size);
    free(blob);
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
    free(c->active);
    free(c->guests);
    c->peers = c->hot = c->active = c->guests = NULL;
    c->num_hot = c->num_active = c->num_peers = 0;
    if (c->segment_fd >= 0) {
        close(c->segment_fd);
        c->segment_fd = -1;
    }
    if (NULL != c->segment) {
        c->transfers_in_flight = NULL;
        (void) opal_shmem_unlink(&c->seg_ds); /* normally gone already */
        (void) opal_shmem_segment_detach(&c->seg_ds);
        c->segment = NULL;
    }
    if (NULL != c->my_cpuset) {
        hwloc_bitmap_free((hwloc_bitmap_t) c->my_cpuset);
        c->my_cpuset = NULL;
    }
}

/* The locality class of a peer with this cpuset (btl_smx_locality.c). Not the runtime's
 * locality flags (OPAL_PROC_ON_L2CACHE...): init creates a module per class that can
 * occur here from my binding and hwloc alone, before any peer is known, and a pair's
 * class must come from the same rule applied to the same two cpusets. */
static int smx_peer_class(const char *peer_cpuset)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int cls = SMX_CLASS_REMOTE;

    if (NULL != opal_hwloc_topology) {
        hwloc_bitmap_t peer = hwloc_bitmap_alloc();
        if (NULL != peer) {
            if (NULL == peer_cpuset || '\0' == *peer_cpuset
                || 0 != hwloc_bitmap_list_sscanf(peer, peer_cpuset)) {
                hwloc_bitmap_zero(peer);
            }
            cls = smx_locality_class(opal_hwloc_topology, (hwloc_bitmap_t) c->my_cpuset, peer);
            hwloc_bitmap_free(peer);
        }
    }
    return cls;
}

/* Present classes cover every peer (btl_smx_locality.h); should a topology ever
 * disagree, the nearest class that has a module takes the peer, a wider one first. */
static int smx_module_class(int cls)
{
    for (int d = 0; d < 2 * SMX_CLASS_COUNT; ++d) {
        int k = d < SMX_CLASS_COUNT ? cls + d : cls - (d - SMX_CLASS_COUNT) - 1;
        if (k >= 0 && k < SMX_CLASS_COUNT && NULL != mca_btl_smx_component.modules[k]) {
            return k;
        }
    }
    return 0; /* init creates at least one module */
}

/* Map the segment of a peer (local_rank -1: a process of another job on this node) and
 * take a slot in its queue. */
static int smx_attach(mca_btl_smx_endpoint_t *ep, opal_proc_t *proc, int peer_local_rank)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const bool guest = peer_local_rank < 0;
    char *blob = NULL, *cpuset;
    size_t blob_size = 0;
    uint32_t ds_size;
    int32_t fd;
    int rc;

    if (peer_local_rank == c->local_rank) {
        return OPAL_ERR_UNREACH;
    }
    /* Another job's values are not in my job's local store: PMIx fetches them. */
    if (guest) {
        OPAL_MODEX_RECV(rc, &c->super.btl_version, &proc->proc_name, (void **) &blob,
                        &blob_size);
    } else {
        OPAL_MODEX_RECV_IMMEDIATE(rc, &c->super.btl_version, &proc->proc_name,
                                  (void **) &blob, &blob_size);
    }
    if (OPAL_SUCCESS != rc || NULL == blob || blob_size < sizeof(ds_size)
        || (memcpy(&ds_size, blob, sizeof(ds_size)), ds_size > sizeof(opal_shmem_ds_t))
        || blob_size <= sizeof(ds_size) + ds_size + sizeof(fd) || '\0' != blob[blob_size - 1]
        || NULL == (ep->peer_ds = calloc(1, sizeof(opal_shmem_ds_t)))) {
        free(blob);
        return OPAL_ERR_UNREACH;
    }
    memcpy(ep->peer_ds, blob + sizeof(ds_size), ds_size);
    memcpy(&fd, blob + sizeof(ds_size) + ds_size, sizeof(fd));
    cpuset = blob + sizeof(ds_size) + ds_size + sizeof(fd);
    ep->peer_ds->seg_name[sizeof(ep->peer_ds->seg_name) - 1] = '\0';
    if (guest) {
        /* Its file went once its own job had mapped it: the descriptor its creator keeps
         * open reaches the same memory (for a process of the same user, as CMA). */
        int probe = -1;
        if (fd >= 0) {
            snprintf(ep->peer_ds->seg_name, sizeof(ep->peer_ds->seg_name), "/proc/%d/fd/%d",
                     (int) ep->peer_ds->seg_cpid, (int) fd);
            probe = open(ep->peer_ds->seg_name, O_RDWR | O_CLOEXEC);
        }
        if (probe < 0) {
            opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                                "btl:smx: cannot open the segment of %s, of "
                                "another job, as %s: %s", OPAL_NAME_PRINT(proc->proc_name),
                                fd >= 0 ? ep->peer_ds->seg_name : "(none kept open)",
                                fd >= 0 ? strerror(errno) : "");
            free(blob);
            return OPAL_ERR_UNREACH;
        }
        close(probe);
    }
    ep->peer_segment = opal_shmem_segment_attach(ep->peer_ds);
    if (NULL == ep->peer_segment) {
        opal_output_verbose(MCA_BASE_VERBOSE_COMPONENT, SMX_OUTPUT,
                            "btl:smx: cannot map the segment of %s (%s)",
                            OPAL_NAME_PRINT(proc->proc_name), ep->peer_ds->seg_name);
        free(blob);
        return OPAL_ERR_UNREACH;
    }
    struct smx_segment_header *h = ep->peer_segment;
    if (SMX_SEGMENT_MAGIC != __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE)
        || (!guest && h->num_local != (uint32_t) c->num_local) || h->num_local < 1
        || h->num_local > (1u << 20) || h->size > ep->peer_ds->seg_size
        || h->queue_entries < 2 || 0 != (h->queue_entries & (h->queue_entries - 1))
        || h->area_offset < sizeof(*h) + (uint64_t) h->queue_entries * sizeof(struct smx_queue_entry)
        || h->area_offset > h->rings_offset || h->rings_offset > h->size) {
        free(blob);
        return OPAL_ERR_UNREACH;
    }
    if (guest) {
        /* A slot in its queue, my name in it before any message of mine names the slot. */
        const uint32_t k = __atomic_fetch_add(&h->guests, 1, __ATOMIC_RELAXED);
        uint64_t name;
        if (k >= SMX_GUESTS_MAX) {
            opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                                "btl:smx: %s has taken %d processes of other "
                                "jobs already, the most it can", OPAL_NAME_PRINT(proc->proc_name),
                                SMX_GUESTS_MAX);
            free(blob);
            return OPAL_ERR_UNREACH;
        }
        memcpy(&name, &OPAL_PROC_MY_NAME, sizeof(name));
        __atomic_store_n(&h->guest_name[k], name, __ATOMIC_RELEASE);
        ep->slot_there = h->num_local + k;
    } else {
        ep->slot_there = (uint32_t) c->local_rank;
        /* Every other local process of the job maps this file once; the last one unlinks
         * it. */
        if (__atomic_add_fetch(&h->attached, 1, __ATOMIC_ACQ_REL) == (uint32_t) c->num_local - 1) {
            (void) opal_shmem_unlink(ep->peer_ds);
        }
    }
    ep->cls = smx_module_class(smx_peer_class(cpuset));
    ep->module = c->modules[ep->cls];
    free(blob);
    /* the pieces of its double copies come from its chunk area */
    smx_prefault((char *) ep->peer_segment + h->area_offset, h->rings_offset - h->area_offset,
                 false);

    ep->proc = proc;
    ep->peer_local_rank = peer_local_rank;
    if (0 == peer_local_rank) {
        c->transfers_in_flight = &h->transfers_in_flight;
    }
    if (NULL != mca_smsc && !c->smsc_forbidden) {
        /* NULL is fine: this peer then gets double copy only (btl_smx_get.c) */
        ep->smsc_endpoint = MCA_SMSC_CALL(get_endpoint, proc);
    }
    return OPAL_SUCCESS;
}

/* The policy from the node's numbers, as local rank 0 found them at init (its segment,
 * which the first add_procs maps with the others: btl_smx_calibrate.c). */
static void smx_build_policy(void)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const mca_btl_smx_endpoint_t *first = c->peers[0];
    const struct smx_segment_header *h = 0 == c->local_rank ? c->segment
                                         : NULL != first ? first->peer_segment : NULL;

    mca_btl_smx_policy_build_for_node(h);
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        if (NULL != c->modules[cls]) {
            mca_btl_smx_policy_apply(c->modules[cls]);
        }
    }
}

/* The local rank of a peer of this job on this node, other than me; SMX_GUEST for a
 * process of another job on this node; -1 if none. */
#define SMX_GUEST (-2)
static int smx_local_rank_of(opal_proc_t *proc)
{
    uint16_t peer_local_rank, *rank_ptr = &peer_local_rank;
    int rc;

    /* btl/self carries messages to myself */
    if (proc == opal_proc_local_get() || !OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)) {
        return -1;
    }
    if (proc->proc_name.jobid != OPAL_PROC_MY_NAME.jobid) {
        return SMX_GUEST;
    }
    OPAL_MODEX_RECV_VALUE(rc, PMIX_LOCAL_RANK, &proc->proc_name, &rank_ptr, PMIX_UINT16);
    if (OPAL_SUCCESS != rc || peer_local_rank >= mca_btl_smx_component.num_local) {
        return -1;
    }
    return peer_local_rank;
}

/* The endpoint of a peer (local rank, or SMX_GUEST), attached on first sight (for every
 * module); NULL if it cannot be reached. A process of another job may be attached from
 * add_procs and from progress (its first message) at once: under the lock. */
static mca_btl_smx_endpoint_t *smx_endpoint_of(opal_proc_t *proc, int local_rank)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    mca_btl_smx_endpoint_t *ep = NULL;

    if (SMX_GUEST != local_rank) {
        if (NULL == c->peers[local_rank]) {
            ep = OBJ_NEW(mca_btl_smx_endpoint_t);
            if (NULL != ep && OPAL_SUCCESS != smx_attach(ep, proc, local_rank)) {
                OBJ_RELEASE(ep);
                ep = NULL;
            }
            c->peers[local_rank] = ep;
        }
        return c->peers[local_rank];
    }
    OPAL_THREAD_LOCK(&c->lock);
    for (int at = c->num_local; NULL == ep && at < c->num_peers; ++at) {
        if (0 == opal_compare_proc(c->peers[at]->proc->proc_name, proc->proc_name)) {
            ep = c->peers[at];
        }
    }
    if (NULL == ep && c->num_peers < c->num_local + SMX_GUESTS_MAX
        && NULL != (ep = OBJ_NEW(mca_btl_smx_endpoint_t))) {
        if (OPAL_SUCCESS != smx_attach(ep, proc, -1)) {
            OBJ_RELEASE(ep);
            ep = NULL;
        } else {
            c->peers[c->num_peers++] = ep;
        }
    }
    OPAL_THREAD_UNLOCK(&c->lock);
    return ep;
}

/* The peer of another job that took slot k of my queue, from the name it left in my
 * header: the first message of a spawned process may arrive before my own add_procs
 * for it. NULL if it cannot be reached. */
static mca_btl_smx_endpoint_t *smx_guest(uint32_t k)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_segment_header *h = c->segment;
    opal_process_name_t name;
    opal_proc_t *proc;
    uint64_t raw;

    if (k >= SMX_GUESTS_MAX) {
        return NULL;
    }
    if (NULL == c->guests[k]) {
        raw = __atomic_load_n(&h->guest_name[k], __ATOMIC_ACQUIRE);
        memcpy(&name, &raw, sizeof(name));
        /* (on this node, as it wrote here; of another job, or it would not use a slot) */
        proc = 0 == raw || name.jobid == OPAL_PROC_MY_NAME.jobid ? NULL : opal_proc_for_name(name);
        if (NULL == proc) {
            return NULL;
        }
        c->guests[k] = smx_endpoint_of(proc, SMX_GUEST);
    }
    return c->guests[k];
}

/* bml/r2 offers every peer to every module; each module takes only its class's peers
 * (NULL endpoint, reachable bit clear for the others), so a peer is reached by exactly
 * one smx module, whose limits ob1 then uses. reachability is NULL on the single-peer
 * path (add_proc), where the NULL endpoint alone says "not mine". */
static int smx_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                         struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                         opal_bitmap_t *reachability)
{
    mca_btl_smx_module_t *module = (mca_btl_smx_module_t *) btl;

    /* The first add_procs attaches local rank 0 first (its segment holds the node's
     * single-copy cost), then builds the policy, before any peer is reachable. */
    if (!mca_btl_smx_policy.built) {
        for (size_t i = 0; i < nprocs; ++i) {
            if (0 == smx_local_rank_of(procs[i])) {
                (void) smx_endpoint_of(procs[i], 0);
            }
        }
        smx_build_policy();
    }
    for (size_t i = 0; i < nprocs; ++i) {
        const int local_rank = smx_local_rank_of(procs[i]);
        mca_btl_smx_endpoint_t *ep = -1 == local_rank ? NULL
                                                      : smx_endpoint_of(procs[i], local_rank);

        peers[i] = NULL;
        if (NULL == ep) {
            continue;
        }
        if (!ep->described) {
            ep->described = true;
            opal_output_verbose(MCA_BASE_VERBOSE_TRACE, SMX_OUTPUT,
                                "btl:smx: peer %s (local rank %d): class %s%s",
                                OPAL_NAME_PRINT(ep->proc->proc_name), local_rank,
                                smx_locality_class_name(ep->cls),
                                NULL == ep->smsc_endpoint ? ", no single-copy endpoint" : "");
        }
        if (ep->module != module) {
            continue;
        }
        peers[i] = ep;
        if (NULL != reachability) {
            int rc = opal_bitmap_set_bit(reachability, (int) i);
            if (OPAL_SUCCESS != rc) {
                return rc;
            }
        }
    }
    mca_btl_smx_policy_publish();
    return OPAL_SUCCESS;
}

/* Endpoints stay until finalize: del_procs comes when another BTL won the peer or while
 * MPI shuts down, with progress still to run (queued fragments still go out, due
 * completions name a live endpoint, local rank 0's segment stays mapped, and no peer is
 * mapped, or counted in 'attached', twice). */
static int smx_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                         struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    (void) btl;
    (void) nprocs;
    (void) procs;
    (void) peers;
    return OPAL_SUCCESS;
}

/* The peers and the modules share state (an endpoint names its module, a queued
 * completion its endpoint, and progress serves them all): the last module's finalize
 * releases everything at once, after progress is unregistered. */
static int smx_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;

    (void) btl;
    if (++c->modules_finalized < c->num_modules) {
        return OPAL_SUCCESS;
    }
    if (c->progress_registered) {
        opal_progress_unregister(mca_btl_smx_progress);
        c->progress_registered = false;
    }
    opal_output_verbose(MCA_BASE_VERBOSE_INFO, SMX_OUTPUT,
                        "btl:smx: %s: %llu gets by single copy, %llu by double copy, %llu "
                        "exchange pushes, %llu pushed ahead (%llu of peers' came before "
                        "their receive), %llu changes between single and double copy as "
                        "measured, %llu sends queued for room, at most %llu of "
                        "btl_smx_max_frags %d descriptors out at once; %llu pair rings, %.0f "
                        "KiB of chunks made",
                        OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), c->stats.gets_single_copy,
                        c->stats.gets_double_copy, c->stats.exchange_pushes,
                        c->stats.pushes_ahead, c->stats.pushes_parked, c->stats.copy_switches,
                        c->stats.sends_queued, c->stats.frags_peak, c->max_frags,
                        c->stats.pair_rings, (double) c->area_used / 1024.0);
    /* Completions nobody progressed any more: their fragments are ours to free. */
    for (opal_list_item_t *item; NULL != (item = opal_list_remove_first(&c->completed));) {
        mca_btl_smx_frag_release((mca_btl_smx_frag_t *) item);
    }
    mca_btl_smx_chunks_fini(); /* the endpoints hold some */
    for (int p = 0; NULL != c->peers && p < c->num_peers; ++p) {
        if (NULL != c->peers[p]) {
            OBJ_RELEASE(c->peers[p]);
            c->peers[p] = NULL;
        }
    }
    for (int cls = 0; cls < SMX_CLASS_COUNT; ++cls) {
        free(c->modules[cls]);
        c->modules[cls] = NULL;
    }
    mca_btl_smx_segment_destroy();
    free(c->gather);
    c->gather = NULL;
    c->gather_size = 0;
    mca_btl_smx_frag_lists_fini();
    mca_btl_smx_get_lists_fini();
    return OPAL_SUCCESS;
}

static mca_btl_base_descriptor_t *smx_alloc(struct mca_btl_base_module_t *btl,
                                            struct mca_btl_base_endpoint_t *endpoint,
                                            uint8_t order, size_t size, uint32_t flags)
{
    mca_btl_smx_frag_t *frag;

    /* (above a fragment: an eager message to a late receiver, btl_smx_skew.c) */
    if (size > btl->btl_max_send_size && size > btl->btl_eager_limit) {
        return NULL;
    }
    frag = mca_btl_smx_frag_alloc(endpoint, size);
    if (NULL == frag) {
        return NULL;
    }
    frag->segment.seg_len = size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    return &frag->base;
}

static int smx_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_smx_frag_release((mca_btl_smx_frag_t *) des);
    return OPAL_SUCCESS;
}

/* Pack up to max_send_size - reserve bytes after 'reserve' bytes of header room. */
static mca_btl_base_descriptor_t *smx_prepare_src(struct mca_btl_base_module_t *btl,
                                                  struct mca_btl_base_endpoint_t *endpoint,
                                                  struct opal_convertor_t *convertor,
                                                  uint8_t order, size_t reserve, size_t *size,
                                                  uint32_t flags)
{
    mca_btl_smx_frag_t *frag;
    struct iovec iov;
    uint32_t iov_count = 1;

    if (reserve > btl->btl_max_send_size) {
        return NULL;
    }
    if (*size > btl->btl_max_send_size - reserve) {
        *size = btl->btl_max_send_size - reserve;
    }
    frag = mca_btl_smx_frag_alloc(endpoint, reserve + *size);
    if (NULL == frag) {
        return NULL;
    }
    iov.iov_base = frag->data + reserve;
    iov.iov_len = *size;
    if (opal_convertor_pack(convertor, &iov, &iov_count, size) < 0) {
        mca_btl_smx_frag_release(frag);
        return NULL;
    }
    frag->segment.seg_len = reserve + *size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    return &frag->base;
}

/* An eager message in several chunks of the peer's (SMX_KIND_MULTI), each checked to
 * lie within its segment (the list read once: the peer may write it meanwhile), gathered
 * into one buffer of mine, to be handed over as one segment; its length. ob1 takes
 * several segments, but its matched receive then counts the message as the first
 * segment's bytes plus one per further segment, and would let a message too large for
 * its receive through without MPI_ERR_TRUNCATE (pml_ob1_recvfrag.c in 5.0.x). */
static size_t smx_gather_multi(mca_btl_smx_endpoint_t *ep, const void *payload, size_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    const struct smx_chunk_list *list = payload;
    const struct smx_segment_header *h = ep->peer_segment;
    struct smx_chunk_part part[SMX_MULTI_MAX];
    const uint32_t count = len >= sizeof(*list) ? __atomic_load_n(&list->count, __ATOMIC_RELAXED)
                                                : 0;
    size_t total = 0;

    if (0 == count || count > SMX_MULTI_MAX || len < sizeof(*list) + count * sizeof(part[0])) {
        mca_btl_smx_fatal(ep, "a malformed list of chunks");
    }
    memcpy(part, list->part, count * sizeof(part[0]));
    for (uint32_t i = 0; i < count; ++i) {
        if (part[i].offset < h->area_offset || part[i].offset > h->size
            || part[i].len > h->size - part[i].offset) {
            mca_btl_smx_fatal(ep, "a message outside its segment");
        }
        total += part[i].len;
    }
    if (total > c->gather_size) {
        void *grown = realloc(c->gather, total);
        if (NULL == grown) {
            mca_btl_smx_fatal(ep, "no memory for a message in several chunks");
        }
        c->gather = grown;
        c->gather_size = total;
    }
    total = 0;
    for (uint32_t i = 0; i < count; ++i) {
        memcpy(c->gather + total, (char *) ep->peer_segment + part[i].offset, part[i].len);
        total += part[i].len;
    }
    return total;
}

/* A message from a peer: upper-layer fragments go to the registered callback, with the
 * module of the peer's class (ob1 looks its RDMA BTL up by that pointer). */
static void smx_deliver(mca_btl_smx_endpoint_t *ep, uint8_t kind, uint8_t tag, void *payload,
                        size_t len)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    /* skew (btl_smx_skew.c): a get ob1 starts from here is one the receive waited for; a
     * message from a sender I am late to is one I took (not a piece of a get of mine: I
     * wait for those whatever) */
    c->delivering = ep;
    if (OPAL_UNLIKELY(ep->skew_late) && (SMX_KIND_AM == kind || SMX_KIND_MULTI == kind)) {
        mca_btl_smx_skew_heard(ep);
    }
    if (SMX_KIND_MULTI == kind) {
        len = smx_gather_multi(ep, payload, len);
        payload = c->gather;
        kind = SMX_KIND_AM;
    }
    switch (kind) {
    case SMX_KIND_AM: {
        const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
        mca_btl_base_segment_t seg = {.seg_addr.pval = payload, .seg_len = len};
        mca_btl_base_receive_descriptor_t desc = {.endpoint = ep,
                                                  .des_segments = &seg,
                                                  .des_segment_count = 1,
                                                  .tag = tag,
                                                  .cbdata = reg->cbdata};
        reg->cbfunc(&ep->module->super, &desc);
        break;
    }
    case SMX_KIND_GET_REQ:
        mca_btl_smx_get_request_arrived(ep, payload, len);
        break;
    case SMX_KIND_GET_DATA:
        mca_btl_smx_get_piece_arrived(ep, payload, len);
        break;
    case SMX_KIND_SKEW:
        mca_btl_smx_skew_told(ep, payload, len);
        break;
    default: /* SMX_KIND_SKIP: nothing */
        break;
    }
    c->delivering = NULL;
}

/* The peer's chunk at 'offset' of its segment, checked to lie within it. */
static struct smx_chunk *smx_peer_chunk(mca_btl_smx_endpoint_t *ep, uint64_t offset)
{
    const struct smx_segment_header *h = ep->peer_segment;
    struct smx_chunk *chunk = (struct smx_chunk *) ((char *) ep->peer_segment + offset);

    if (offset < h->area_offset || offset > h->size - sizeof(*chunk)
        || 0 != (offset & (SMX_CACHE_LINE - 1)) || chunk->len > h->size - offset - sizeof(*chunk)) {
        mca_btl_smx_fatal(ep, "a message outside its segment");
    }
    smx_prefetch(chunk, sizeof(*chunk) + chunk->len);
    return chunk;
}

/* A chunk from the peer, through my queue; marked done once delivered. */
static void smx_deliver_chunk(mca_btl_smx_endpoint_t *ep, uint64_t offset)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    struct smx_chunk *chunk = smx_peer_chunk(ep, offset);

    if (SMX_KIND_RING == chunk->kind && NULL == ep->in
        && chunk->len >= sizeof(struct smx_ring_offer)) {
        /* From now on the peer writes to me through this ring (btl_smx_send.c). */
        const struct smx_ring_offer *offer = (const struct smx_ring_offer *) (chunk + 1);
        const struct smx_segment_header *h = ep->peer_segment;
        const uint64_t bytes = sizeof(struct smx_pair_ring) + (uint64_t) offer->lines * SMX_CACHE_LINE;
        if (offer->lines < 64 || 0 != (offer->lines & (offer->lines - 1))
            || offer->offset < h->area_offset || offer->offset > h->size
            || bytes > h->size - offer->offset) {
            mca_btl_smx_fatal(ep, "a ring outside its segment");
        }
        ep->in = (struct smx_pair_ring *) ((char *) ep->peer_segment + offer->offset);
        ep->in_tail = 0;
        ep->in_key = offer->key;
        ep->in_lines = offer->lines;
        c->hot[c->num_hot++] = ep;
    } else if (SMX_KIND_REF == chunk->kind || SMX_KIND_RING == chunk->kind) {
        mca_btl_smx_fatal(ep, "a message of a kind that cannot come this way");
    } else {
        smx_deliver(ep, chunk->kind, chunk->tag, chunk + 1, chunk->len);
    }
    __atomic_store_n(&chunk->done, 1, __ATOMIC_RELEASE);
}

/* Up to 'most' records of the peer's ring to me; the count delivered. */
static int smx_poll_ring(mca_btl_smx_endpoint_t *ep, int most)
{
    struct smx_pair_ring *ring = ep->in;
    int n = 0;

    for (; n < most; ++n) {
        struct smx_record *rec = smx_ring_next(ring, ep->in_lines, ep->in_tail, ep->in_key);
        if (NULL == rec) {
            break;
        }
        const uint32_t at = (uint32_t) (ep->in_tail & (ep->in_lines - 1));
        const uint32_t lines = rec->nlines;
        if (0 == lines || at + lines > ep->in_lines
            || (SMX_KIND_SKIP != rec->kind && smx_record_lines(rec->len) > lines)) {
            mca_btl_smx_fatal(ep, "a malformed record");
        }
        smx_prefetch(rec, sizeof(*rec) + rec->len);
        if (SMX_KIND_REF == rec->kind) {
            const struct smx_chunk_ref *ref = (const struct smx_chunk_ref *) (rec + 1);
            const struct smx_segment_header *h = ep->peer_segment;
            if (ref->offset < h->area_offset || ref->offset > h->size
                || ref->len > h->size - ref->offset || SMX_KIND_REF == ref->kind
                || SMX_KIND_RING == ref->kind) {
                mca_btl_smx_fatal(ep, "a message outside its segment");
            }
            if (0 == n) { /* (the first this poll found) */
                smx_prefetch_away((char *) ep->peer_segment + ref->offset, ref->len);
            }
            smx_deliver(ep, ref->kind, rec->tag, (char *) ep->peer_segment + ref->offset,
                        ref->len);
        } else {
            smx_deliver(ep, rec->kind, rec->tag, rec + 1, rec->len);
        }
        ep->in_tail += lines;
        smx_ring_consumed(ring, ep->in_tail);
    }
    return n;
}

/* Fragments progress posts for a peer before it hands them to the completed list. */
#define SMX_POSTED_BATCH 16

/* Deliver what my queue and the rings to me hold, feed the gets I serve, retry fragments
 * waiting for room, then complete the fragments already sent. Only the peers that use a
 * ring to me, or have work waiting here, are visited: idle peers cost nothing. */
int mca_btl_smx_progress(void)
{
    mca_btl_smx_component_t *c = &mca_btl_smx_component;
    int events = 0;

    if (NULL == c->peers) {
        return 0;
    }
    /* One reader of my queue and rings: another thread already polling is enough. */
    if (!opal_using_threads() || !opal_mutex_trylock(&c->poll_lock)) {
        for (int i = 0; i < c->num_hot; ++i) {
            events += smx_poll_ring(c->hot[i], 8); /* a few per peer: fairness */
        }
        for (int n = 0; n < 32; ++n) {
            const uint64_t id = smx_queue_pop(c->segment);
            const uint32_t slot = SMX_CHUNK_RANK(id);
            if (0 == id) {
                break;
            }
            /* Only a process that mapped my segment writes to it, and I map it back in
             * the same add_procs (my job) or here (another's): a message from no peer
             * is a broken segment or an unreachable sender. */
            mca_btl_smx_endpoint_t *from = slot < (uint32_t) c->num_local ? c->peers[slot]
                                                                       : smx_guest(slot - (uint32_t) c->num_local);
            if (NULL == from) {
                opal_output(0, "btl:smx: %s: a message from queue slot %u, which is not a "
                            "peer that can be reached; the job cannot go on",
                            OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), slot);
                abort();
            }
            smx_deliver_chunk(from, SMX_CHUNK_OFFSET(id));
            events++;
        }
        if (OPAL_UNLIKELY(c->skew_late_count > 0) && 0 == events) {
            c->skew_idle++; /* waited for messages (btl_smx_skew.c) */
        }
        if (opal_using_threads()) {
            opal_mutex_unlock(&c->poll_lock);
        }
    }
    /* Each active peer under its own lock (one another thread holds is left to it); the
     * list under the component's, which another thread may change in between: a peer
     * moved under my index waits for the next call. */
    for (int i = 0;; ++i) {
        mca_btl_smx_endpoint_t *ep;

        OPAL_THREAD_LOCK(&c->lock);
        ep = i < c->num_active ? c->active[i] : NULL;
        OPAL_THREAD_UNLOCK(&c->lock);
        if (NULL == ep) {
            break;
        }
        if (opal_using_threads() && 0 != opal_mutex_trylock(&ep->lock)) {
            continue;
        }
        if (!opal_list_is_empty(&ep->serving)) {
            events += mca_btl_smx_get_serve_locked(ep);
        }
        (void) mca_btl_smx_unstall(ep);
        /* The fragments posted go to the completed list a batch at a time, with the
         * peer's leaving of the active list: one hold of the component's lock. */
        for (bool full = true; full;) {
            mca_btl_smx_frag_t *posted[SMX_POSTED_BATCH];
            int n = 0;

            while (n < SMX_POSTED_BATCH && !opal_list_is_empty(&ep->pending)
                   && mca_btl_smx_try_post(
                       (mca_btl_smx_frag_t *) opal_list_get_first(&ep->pending))) {
                posted[n++] = (mca_btl_smx_frag_t *) opal_list_remove_first(&ep->pending);
            }
            full = SMX_POSTED_BATCH == n;
            const bool idle = !full && ep->active && NULL == ep->stalled
                              && opal_list_is_empty(&ep->pending)
                              && opal_list_is_empty(&ep->serving);
            if (0 == n && !idle) {
                break;
            }
            OPAL_THREAD_LOCK(&c->lock);
            for (int k = 0; k < n; ++k) {
                opal_list_append(&c->completed, &posted[k]->base.super.super);
            }
            if (idle) { /* off the list: the last one takes its place */
                ep->active = false;
                int k = i < c->num_active && c->active[i] == ep ? i : 0; /* (where I found it) */
                while (k < c->num_active && c->active[k] != ep) {
                    ++k;
                }
                if (k < c->num_active) {
                    c->active[k] = c->active[--c->num_active];
                    i -= k == i; /* (the one moved here is visited next) */
                }
            }
            OPAL_THREAD_UNLOCK(&c->lock);
        }
        if (opal_using_threads()) {
            opal_mutex_unlock(&ep->lock);
        }
    }
    if (opal_list_is_empty(&c->completed)) {
        return events;
    }
    for (;;) {
        OPAL_THREAD_LOCK(&c->lock);
        mca_btl_smx_frag_t *frag = (mca_btl_smx_frag_t *) opal_list_remove_first(&c->completed);
        OPAL_THREAD_UNLOCK(&c->lock);
        if (NULL == frag) {
            break;
        }
        /* The callback may free a descriptor it owns: read the flags first. One the BTL
         * releases below leaves the count of fragments out now, so that a send ob1
         * retries from the callback (held back at btl_smx_max_frags) finds room. */
        const uint32_t flags = frag->base.des_flags;
        if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
            mca_btl_smx_frag_uncount(frag);
        }
        if (NULL != frag->base.des_cbfunc) {
            frag->base.des_cbfunc(&frag->endpoint->module->super, frag->endpoint, &frag->base,
                                  OPAL_SUCCESS);
        }
        if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
            mca_btl_smx_frag_release(frag);
        }
        events++;
    }
    return events;
}

/* ob1's mca_pml_ob1_dump (a debugger's or a hung job's "where is my message?") calls
 * this for every peer without checking for NULL: what stands between us and the peer. */
static void smx_dump(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                     int verbose)
{
    const mca_btl_smx_component_t *c = &mca_btl_smx_component;

    (void) btl;
    (void) verbose;
    if (NULL == ep) {
        return;
    }
    opal_output(0,
                "btl:smx: %s -> local rank %d (class %s): %" PRIu32 " messages through its "
                "queue, %s; %s; %d chunks of mine in flight to it; %zu fragments waiting for "
                "room, %zu gets being served, %d pulled; %d of btl_smx_max_frags %d "
                "descriptors out",
                OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), ep->peer_local_rank,
                smx_locality_class_name(ep->cls), ep->queued,
                NULL != ep->out ? "then a ring of mine" : "no ring of mine",
                NULL != ep->in ? "a ring of its own to me" : "no ring of its own to me",
                ep->chunks_out, opal_list_get_size(&ep->pending), opal_list_get_size(&ep->serving),
                __atomic_load_n(&ep->pulling, __ATOMIC_RELAXED), c->frags_out, c->max_frags);
}

static int smx_register_error(struct mca_btl_base_module_t *btl,
                              mca_btl_base_module_error_cb_fn_t cbfunc)
{
    (void) btl;
    mca_btl_smx_component.error_cb = cbfunc; /* ob1 registers the same one on every module */
    return OPAL_SUCCESS;
}

/* An error that leaves a peer waiting for ever: the upper layer's error callback ends
 * the job (ob1's aborts it), naming the peer and what went wrong. */
void mca_btl_smx_fatal(mca_btl_smx_endpoint_t *ep, const char *what)
{
    mca_btl_base_module_error_cb_fn_t cb = mca_btl_smx_component.error_cb;
    char info[160];

    snprintf(info, sizeof(info), "btl/smx on %s: %s from %s", opal_process_info.nodename, what,
             OPAL_NAME_PRINT(ep->proc->proc_name));
    if (NULL != cb) {
        cb(&ep->module->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc, info);
    }
    opal_output(0, "%s: no error handler to end the job, aborting", info);
    abort();
}

mca_btl_base_module_t mca_btl_smx_module_template = {
    .btl_component = &mca_btl_smx_component.super,
    .btl_add_procs = smx_add_procs,
    .btl_del_procs = smx_del_procs,
    .btl_finalize = smx_finalize,
    .btl_alloc = smx_alloc,
    .btl_free = smx_free,
    .btl_prepare_src = smx_prepare_src,
    .btl_send = mca_btl_smx_send,
    .btl_sendi = mca_btl_smx_sendi,
    .btl_get = mca_btl_smx_get,
    .btl_put = NULL, /* set at init where an smsc component is selected */
    .btl_register_mem = mca_btl_smx_register_mem,
    .btl_deregister_mem = mca_btl_smx_deregister_mem,
    .btl_dump = smx_dump,
    .btl_register_error = smx_register_error,
};
