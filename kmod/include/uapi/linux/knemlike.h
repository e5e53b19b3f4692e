/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * knemlike: single copy between the address spaces of processes on one node.
 *
 * The only contract between the kernel module and user space. A process declares a
 * vector of its memory as a region and gets a cookie; a peer that holds the cookie asks
 * the kernel to copy between its own memory and the region. Both sides include this
 * header; KNEMLIKE_ABI_VERSION changes whenever a structure or a meaning changes, and
 * user space must check it with KNEMLIKE_IOC_GET_INFO before anything else.
 *
 * Errors (negated errno values from ioctl):
 *   EINVAL  malformed request: unknown flag or direction, nonzero reserved field,
 *           zero-length or overflowing segment, no segment
 *   E2BIG   more segments than the module's max_segments, or a region larger than
 *           max_region_mb
 *   EMFILE  this open file already holds max_regions_per_file regions (or the
 *           module's 2^24 - 1 region slots are all taken)
 *   ENOENT  no such region: unknown cookie, destroyed, closed, used up (single-use),
 *           or created through another open file (DESTROY); a copy under way when its
 *           region is destroyed or closed stops with it (part of the data moved)
 *   EPERM   the region belongs to another user and was not created KNEMLIKE_FLAG_ANY_USER;
 *           DESTROY by a process of another effective uid than the region's creator,
 *           even through the creator's own open file (inherited or passed)
 *   EACCES  the region's protection forbids this direction
 *   ERANGE  offset + length runs past the end of the region
 *   EFAULT  a local address (segment vector or data) is not accessible
 *   ESTALE  the owner no longer has memory mapped where the region says, or its
 *           mapping there no longer allows this access (read-only, PROT_NONE)
 *   ESRCH   the owner's address space is gone (the owner exited or exec'd)
 *   EINTR   a signal arrived during the copy; knemlike_copy.bytes says how many bytes
 *           moved, in order from the start: the caller resumes with offset + bytes and
 *           its local vector advanced by bytes (KNEMLIKE_IOC_COPY is not restarted by
 *           SA_RESTART)
 *   ENOSPC  the regions of this effective uid would take more kernel memory than the
 *           module's max_user_kb
 *   EDQUOT  KNEMLIKE_FLAG_HOLD_PAGES: holding the region's pages would take the owner's
 *           pinned memory (VmPin) past its RLIMIT_MEMLOCK
 *   EOPNOTSUPP  KNEMLIKE_FLAG_HOLD_PAGES on a kernel without MMU notifiers (the feature
 *           bit is then clear)
 *   ENOMEM  the kernel (or the caller's memory cgroup) is out of memory
 *   ENOTTY  unknown ioctl command (including a known one with the wrong size)
 * The export ioctls (ABI 3) list their errors at their structures below.
 *
 * A copy that fails part way with another error may have moved some of the data; it
 * reports no count. A copy that succeeds may be short, as read() may: it moves at most
 * KNEMLIKE_MAX_COPY_BYTES per call, and knemlike_copy.bytes says how much.
 */
#ifndef _UAPI_LINUX_KNEMLIKE_H
#define _UAPI_LINUX_KNEMLIKE_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* 2: EINTR on any signal, short copies, DESTROY by euid; 3: exports (the ioctls of 2 kept) */
#define KNEMLIKE_ABI_VERSION	3
#define KNEMLIKE_DEVICE_NAME	"knemlike"

/* The most one KNEMLIKE_IOC_COPY moves (read() and write() stop at the same). */
#define KNEMLIKE_MAX_COPY_BYTES	0x7ffff000ULL

/* One piece of memory: user-space address and length in bytes. */
struct knemlike_segment {
	__u64 addr;
	__u64 len;
};

/* Feature bits of knemlike_info.features. */
#define KNEMLIKE_FEATURE_VECTOR_COPY	(1U << 0)	/* vectors on both sides */
#define KNEMLIKE_FEATURE_FOLLOWS_MAPPING	(1U << 1)	/* copies see the owner's current mapping */
#define KNEMLIKE_FEATURE_HOLD_PAGES	(1U << 2)	/* KNEMLIKE_FLAG_HOLD_PAGES is available */
#define KNEMLIKE_FEATURE_ATTACH		(1U << 3)	/* KNEMLIKE_IOC_ATTACH is available */
#define KNEMLIKE_FEATURE_EXPORT		(1U << 4)	/* the KNEMLIKE_IOC_EXPORT* ioctls (ABI 3) */

struct knemlike_info {
	__u32 abi_version;		/* out: KNEMLIKE_ABI_VERSION of the module */
	__u32 features;			/* out: KNEMLIKE_FEATURE_* */
	__u32 max_segments;		/* out: per region and per local vector */
	__u32 max_regions_per_file;	/* out */
	__u64 max_region_bytes;		/* out */
	__u64 reserved[4];		/* out: zero */
};

/* Protection of a region: what peers may do with it. */
#define KNEMLIKE_PROT_READ	(1U << 0)	/* peers may copy from the region */
#define KNEMLIKE_PROT_WRITE	(1U << 1)	/* peers may copy into the region */

/* Flags of a region. */
/*
 * SINGLE_USE: the region serves one copy at a time, and the first that succeeds destroys
 * it: the cookie then names nothing (ENOENT), for the owner's DESTROY too, and the region
 * no longer counts against max_regions_per_file. A copy that fails leaves it usable.
 * ANY_USER: processes of any user may copy (by default only the creator's effective uid);
 * the protection still applies. Hand such a cookie only to processes you trust with it.
 * HOLD_PAGES: the region pins its pages at creation and keeps them between copies, so
 * that a copy walks no page table and pins nothing of the owner's (a registration that
 * is worth caching). The pages count in the creator's pinned memory (VmPin) against its
 * RLIMIT_MEMLOCK (EDQUOT over it; no limit with CAP_IPC_LOCK). Copies still follow the
 * mapping: any change of the owner's mapping over the span of the segments drops the
 * pages, and the next copy takes them again from the current mapping (for reading only
 * if the owner made it read-only; or, when it cannot, copies as a region without the
 * flag does, with the same errors). CREATE needs the memory mapped, and writable for
 * PROT_WRITE (EFAULT otherwise).
 */
#define KNEMLIKE_FLAG_SINGLE_USE	(1U << 0)
#define KNEMLIKE_FLAG_ANY_USER		(1U << 1)
#define KNEMLIKE_FLAG_HOLD_PAGES	(1U << 2)

struct knemlike_create {
	__u64 segments;		/* in: address of an array of struct knemlike_segment */
	__u32 nr_segments;	/* in: 1 .. max_segments */
	__u32 prot;		/* in: KNEMLIKE_PROT_*, at least one */
	__u32 flags;		/* in: KNEMLIKE_FLAG_* */
	__u32 reserved;		/* in: zero */
	__u64 cookie;		/* out: names the region; never a kernel address */
};

struct knemlike_destroy {
	__u64 cookie;		/* in: a region created through this open file */
};

/* Directions of a copy. */
#define KNEMLIKE_COPY_FROM_REGION	0	/* region -> local memory (needs PROT_READ) */
#define KNEMLIKE_COPY_TO_REGION		1	/* local memory -> region (needs PROT_WRITE) */

struct knemlike_copy {
	__u64 cookie;		/* in: the remote region */
	__u64 offset;		/* in: byte offset into the region */
	__u64 local_segments;	/* in: address of an array of struct knemlike_segment */
	__u32 nr_local_segments;/* in: 0 .. max_segments; zero-length segments allowed */
	__u32 direction;	/* in: KNEMLIKE_COPY_* */
	__u32 flags;		/* in: zero */
	__u32 reserved;		/* in: zero */
	__u64 bytes;		/* out: bytes copied (less than asked: see above) */
};

/*
 * ATTACH: map a peer's region into the caller's address space, so that the caller reads
 * (and, where allowed, writes) the owner's memory with plain loads and stores, no system
 * call per copy. The region must hold its pages (KNEMLIKE_FLAG_HOLD_PAGES) and have one
 * segment; the same checks as a copy apply (uid unless ANY_USER, protection), once, here.
 * The module chooses the address: map_addr and map_len describe the whole mapping (page
 * aligned, for munmap()), addr is the region's first byte in it. Detach with munmap();
 * the mapping is not inherited by fork() (madvise(MADV_DOFORK) on it fails with EINVAL)
 * and cannot be made writable or executable by mprotect() when it was not attached so.
 *
 * The mapping follows the owner: when the owner's mapping of the region changes (munmap,
 * mremap, MADV_DONTNEED, mprotect, fork's copy-on-write, migration), the module unmaps
 * the pages from every attachment before the owner's old pages can be reused, and the
 * next touch maps the owner's current pages. A touch gets SIGBUS (BUS_ADRERR) when there
 * is nothing to map: the region was destroyed, closed or used up (no touch reaches the
 * owner's memory once DESTROY or close has returned, in any attachment of any process),
 * the owner exited, or no longer has readable memory at the page touched (what a copy
 * reports as ENOENT, ESRCH or ESTALE), or, for a store through a writable attachment,
 * no longer writable memory (loads go on), or holding the pages again would pass the
 * owner's RLIMIT_MEMLOCK.
 * Pages of the region where the owner still has memory stay readable when other pages of
 * it are gone (a buffer freed and a smaller one allocated at its address).
 *
 * Errors, and no others: EINVAL (prot without READ, unknown bits, a region without
 * HOLD_PAGES or of more than one segment), ENOENT, ESRCH (the owner's address space is
 * gone), EPERM (another user; or a security module refused the mapping), EACCES (WRITE
 * on a region without PROT_WRITE), E2BIG (a region over 512 GiB), ENOMEM (no room in the
 * address space, or vm.max_map_count reached), EAGAIN (the caller's mlockall(MCL_FUTURE)
 * would take it past its RLIMIT_MEMLOCK), EINTR (a fatal signal while waiting for the
 * caller's mmap lock). Another thread of the caller that maps the device meanwhile
 * cannot make ATTACH fail: only ATTACH's own thread can take what it grants.
 */
struct knemlike_attach {
	__u64 cookie;		/* in: the region */
	__u32 prot;		/* in: KNEMLIKE_PROT_READ, with KNEMLIKE_PROT_WRITE to store */
	__u32 flags;		/* in: zero */
	__u64 addr;		/* out: where the region's first byte is mapped */
	__u64 map_addr;		/* out: start of the mapping (page aligned) */
	__u64 map_len;		/* out: its length in bytes */
};

/*
 * EXPORTS (ABI 3): XPMEM's mapping with KNEM's checks. A process exports a page-aligned
 * range of its address space, up to all of its user space; nothing in it is pinned or
 * walked then, and it need not be mapped. It gets a cookie with 128 random bits that no
 * other process can predict; a peer that holds the cookie maps any page-aligned part of
 * the range (KNEMLIKE_IOC_EXPORT_ATTACH) and reads or writes the owner's memory with
 * plain loads and stores.
 *
 * A touch maps the owner's memory as it is at that moment (up to 1 MiB around the page
 * touched); no page stays pinned once mapped. A load takes the owner's pages for reading
 * only, so it never writes them (no copy-on-write broken, no page dirtied, userfaultfd
 * write protection respected); a store takes its window's pages for writing, as the
 * owner's own store would. Before the owner's mapping changes over a part of the range
 * (munmap, mremap, mprotect, MADV_DONTNEED, fork's copy-on-write, migration, reclaim,
 * exit, exec), that part is unmapped from every attachment, so a peer sees the owner's
 * current memory or SIGBUS (BUS_ADRERR), never pages the owner has let go. SIGBUS: no
 * memory at the page touched, whatever the pages around it are (or memory that cannot be
 * shared: a device's, PROT_NONE; or a page missing under userfaultfd, which the module
 * cannot wait for); a store where the owner's memory is read-only (or write-protected
 * under userfaultfd); the export destroyed (no touch reaches the owner's memory once
 * KNEMLIKE_IOC_EXPORT_DESTROY or close has returned), orphaned or revoked (below); or
 * the toucher's max_user_kb reached by the bookkeeping of what is mapped.
 *
 * An export is made only by the effective uid that opened the file it is made through,
 * and belongs to that file (DESTROY through it, by the same effective uid; close
 * destroys it); it dies with the owner's address space: then attaching gives ESRCH and
 * touches SIGBUS, until DESTROY or close frees it. Exports count against
 * max_regions_per_file with the regions. Their kernel memory counts against
 * max_user_kb (ENOSPC) of the user who causes it: an export its creator's until it is
 * destroyed, closed, orphaned or revoked; an attachment, and the bookkeeping of what its
 * touches map, its attacher's; once the export is gone, what an attachment still keeps
 * of it its attacher's, until unmapped (counted even past the limit).
 *
 * An export serves only while the process that made it still runs on the address space
 * it was made in, with the ids it had then (real, effective and saved uid and gid, of
 * every thread) and the same dumpability: what the kernel's ptrace access check compares
 * of a target, which process_vm_readv() runs at every call. The module checks them again
 * where the kernel would: at each ATTACH, and at each touch that maps pages. Once one has
 * changed (setresuid(), which also makes the process non-dumpable; PR_SET_DUMPABLE), the
 * export is revoked: every attachment is unmapped, touches get SIGBUS and ATTACH EPERM;
 * once the process has exec'd or exited while another keeps the address space (a
 * CLONE_VM sibling, the parent of a vfork child that exported), the same with ESRCH; both
 * until DESTROY or close. Pages an attachment mapped before the change stay readable
 * until one of those checks finds it (the next ATTACH or mapping touch, by any peer), as
 * a tracer attached before a process changes its credentials stays attached.
 *
 * An attachment is never inherited (fork: MADV_DOFORK on it fails with EINVAL), never
 * executable, cannot be made writable by mprotect() when attached read-only (EACCES),
 * cannot be grown by mremap(), and is not reachable by get_user_pages: vmsplice,
 * process_vm_readv/writev and ptrace through it fail (EFAULT, EIO) and move no byte, and
 * so does O_DIRECT I/O where the file system does direct I/O. Where it does O_DIRECT as
 * buffered I/O (tmpfs since 6.6), the kernel copies through the mapping as for read()
 * and write(): within the attachment's protection, as the caller's own loads and stores
 * would (into a read-only attachment EFAULT, into a writable one the bytes). Detach with
 * munmap().
 */

/* 128 random bits (secret) beside the export's index (id): never a kernel address. The
 * module compares all of it; a cookie that names nothing gives ENOENT, counted in the
 * sysfs counter export_cookie_misses.
 */
struct knemlike_export_cookie {
	__u64 id;		/* the export's index (low 32 bits) and 32 random bits */
	__u64 secret[2];	/* 128 random bits */
};

/* Flags of an export. */
#define KNEMLIKE_EXPORT_ANY_USER	(1U << 0)	/* any effective uid may attach */
#define KNEMLIKE_EXPORT_READ_ONLY	(1U << 1)	/* attachments are read-only (EACCES) */

/*
 * KNEMLIKE_IOC_EXPORT. Errors: EINVAL (addr or len not page aligned, len 0, unknown
 * flag, nonzero reserved, addr + len overflows), EFAULT (the range is not all user
 * space), EPERM (the caller's effective uid is not the one that opened the file, as
 * when a descriptor is passed to another user; or another thread of the caller has other
 * ids than the caller), EMFILE (max_regions_per_file, or the module's 2^31 - 1 export slots), ENOSPC
 * (this effective uid's exports and regions would take more than max_user_kb of kernel
 * memory), EOPNOTSUPP (a kernel without MMU notifiers: KNEMLIKE_FEATURE_EXPORT clear),
 * ENOMEM.
 */
struct knemlike_export_create {
	__u64 addr;		/* in: first byte, page aligned */
	__u64 len;		/* in: bytes, page aligned, not 0 */
	__u32 flags;		/* in: KNEMLIKE_EXPORT_* */
	__u32 reserved;		/* in: zero */
	struct knemlike_export_cookie cookie;	/* out */
};

/*
 * KNEMLIKE_IOC_EXPORT_DESTROY: unmaps the export from every attachment before it
 * returns; touches afterwards get SIGBUS. Errors: ENOENT (no such export, or created
 * through another open file), EPERM (a process of another effective uid than the
 * creator's, even through the creator's own open file).
 */
struct knemlike_export_destroy {
	struct knemlike_export_cookie cookie;	/* in */
};

/*
 * KNEMLIKE_IOC_EXPORT_ATTACH: map [offset, offset + len) of an export into the caller.
 * Errors: EINVAL (prot without READ or with unknown bits, nonzero flags, offset or len
 * not page aligned, len 0), ENOENT (no such export: unknown cookie, destroyed, closed),
 * ERANGE (offset + len runs past the export), EPERM (the export belongs to another
 * effective uid and was not created KNEMLIKE_EXPORT_ANY_USER; or it was revoked: its
 * owner's ids or dumpability changed since EXPORT, above; or a security module refused
 * the mapping), EACCES (KNEMLIKE_PROT_WRITE on a KNEMLIKE_EXPORT_READ_ONLY export),
 * ESRCH (the owner's address space is gone, or the process that made the export exited
 * or exec'd), ENOSPC (the caller's effective uid is at its max_user_kb), ENOMEM (no
 * room in the caller's address space, vm.max_map_count, or out of memory), EAGAIN (the
 * caller's mlockall(MCL_FUTURE) would pass its RLIMIT_MEMLOCK), EINTR (a fatal signal
 * while waiting for the caller's mmap lock), EOPNOTSUPP (no MMU notifiers).
 */
struct knemlike_export_attach {
	struct knemlike_export_cookie cookie;	/* in */
	__u64 offset;		/* in: into the export, page aligned */
	__u64 len;		/* in: bytes, page aligned, not 0 */
	__u32 prot;		/* in: KNEMLIKE_PROT_READ, with KNEMLIKE_PROT_WRITE to store */
	__u32 flags;		/* in: zero */
	__u64 addr;		/* out: where offset is mapped; munmap(addr, len) detaches */
};

#define KNEMLIKE_IOC_MAGIC	0xB7
#define KNEMLIKE_IOC_GET_INFO	_IOR(KNEMLIKE_IOC_MAGIC, 0x00, struct knemlike_info)
#define KNEMLIKE_IOC_CREATE	_IOWR(KNEMLIKE_IOC_MAGIC, 0x01, struct knemlike_create)
#define KNEMLIKE_IOC_DESTROY	_IOW(KNEMLIKE_IOC_MAGIC, 0x02, struct knemlike_destroy)
#define KNEMLIKE_IOC_COPY	_IOWR(KNEMLIKE_IOC_MAGIC, 0x03, struct knemlike_copy)
#define KNEMLIKE_IOC_ATTACH	_IOWR(KNEMLIKE_IOC_MAGIC, 0x04, struct knemlike_attach)
#define KNEMLIKE_IOC_EXPORT	_IOWR(KNEMLIKE_IOC_MAGIC, 0x05, struct knemlike_export_create)
#define KNEMLIKE_IOC_EXPORT_DESTROY \
	_IOW(KNEMLIKE_IOC_MAGIC, 0x06, struct knemlike_export_destroy)
#define KNEMLIKE_IOC_EXPORT_ATTACH \
	_IOWR(KNEMLIKE_IOC_MAGIC, 0x07, struct knemlike_export_attach)

#endif /* _UAPI_LINUX_KNEMLIKE_H */
