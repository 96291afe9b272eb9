/*
 * mem.c: the guest memory table (SET_MEM_TABLE) and address translation.
 *
 * Each region is mmap()ed from the memfd QEMU sends, from file offset 0 to
 * mmap_offset + size, so several regions may share one fd. The table owns
 * the mappings; mem_add does not keep the fd (the caller closes it).
 * Translations never return a pointer outside a mapped region, and report
 * how many bytes are contiguous from there, so callers clamp every access.
 * Mappings are always MAP_SHARED (never MADV_REMOVE: that would punch holes
 * in the guest's RAM).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <sys/types.h>

#include "common/common.h"
#include "bridge.h"

/* Empty table. */
void
mem_init(struct mem *m)
{
	memset(m, 0, sizeof *m);
}

/* Map one region; 0 or -errno (-EINVAL for nonsense sizes, -ENOSPC full). */
int
mem_add(struct mem *m, uint64_t gpa, uint64_t size, uint64_t uva,
    uint64_t offset, int fd)
{
	struct mem_region *r;
	struct stat st;
	uint64_t len;
	void *p;

	if (m->n == MEM_MAX_REGIONS)
		return -ENOSPC;
	if (size == 0 || offset > UINT64_MAX - size ||
	    gpa > UINT64_MAX - size || uva > UINT64_MAX - size)
		return -EINVAL;
	len = offset + size;
	if (len > (uint64_t)SIZE_MAX / 2)
		return -EINVAL;
	/* Pages past the end of the file would SIGBUS when touched. */
	if (fstat(fd, &st) != 0)
		return -errno;
	if (S_ISREG(st.st_mode) && len > (uint64_t)st.st_size)
		return -EINVAL;
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r = &m->r[m->n++];
	r->gpa = gpa;
	r->size = size;
	r->uva = uva;
	r->map = p;
	r->map_len = (size_t)len;
	r->host = (uint8_t *)p + offset;
	return 0;
}

/*
 * Drop our page-table entries for guest memory (MADV_DONTNEED on a shared
 * mapping keeps the contents: the pages stay in QEMU's memfd). Guest pages
 * the bridge touched otherwise stay in its RSS although they are the
 * guest's RAM, not the bridge's; the next access simply faults them back.
 */
void
mem_trim(const struct mem *m)
{
	for (int i = 0; i < m->n; i++)
		madvise(m->r[i].map, m->r[i].map_len, MADV_DONTNEED);
}

/* Unmap everything. */
void
mem_clear(struct mem *m)
{
	for (int i = 0; i < m->n; i++)
		munmap(m->r[i].map, m->r[i].map_len);
	mem_init(m);
}

/*
 * Guest-physical address to host pointer; *avail gets the bytes contiguous
 * from there to the end of its region. NULL if unmapped.
 */
void *
mem_gpa(const struct mem *m, uint64_t gpa, uint64_t *avail)
{
	for (int i = 0; i < m->n; i++) {
		const struct mem_region *r = &m->r[i];

		if (gpa >= r->gpa && gpa - r->gpa < r->size) {
			*avail = r->size - (gpa - r->gpa);
			return r->host + (gpa - r->gpa);
		}
	}
	*avail = 0;
	return NULL;
}

/* QEMU virtual address to host pointer, all len bytes in one region. */
void *
mem_uva(const struct mem *m, uint64_t uva, uint64_t len)
{
	for (int i = 0; i < m->n; i++) {
		const struct mem_region *r = &m->r[i];

		if (uva >= r->uva && uva - r->uva < r->size &&
		    len <= r->size - (uva - r->uva))
			return r->host + (uva - r->uva);
	}
	return NULL;
}
