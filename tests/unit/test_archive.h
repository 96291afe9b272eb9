/*
 * test_archive.h: helpers shared by the archive module's unit tests.
 *
 * A scratch directory per test holds "dest" (where extraction goes) and
 * "outside" (a sibling that must stay empty: anything in it escaped).
 * Archives are made with GNU tar or crafted header by header here,
 * independently of the module's own header code.
 */
#ifndef VMUX_TEST_ARCHIVE_H
#define VMUX_TEST_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "archive/archive.h"

struct scratch {
	char root[256];
	char dest[300];
	char outside[300];
};

/* A growing byte buffer for crafted archives. */
struct tbuf {
	unsigned char *p;
	size_t len;
};

void scratch_new(struct scratch *);
void scratch_free(struct scratch *);
int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned char *slurp(const char *path, size_t *len);
int dir_entries(const char *path);
int tree_diff(const char *a, const char *b, char **why);
int make_tree(const char *dir, int long_names);
int extract_mem(const char *dest, const void *buf, size_t len, size_t chunk,
    int flags, struct tar_result *res, char **cause);
unsigned char *export_mem(const char *path, const char *arcname, size_t chunk,
    size_t *len, char **cause);

void tb_header(struct tbuf *, const char *name, char type, uint64_t size,
    const char *link, unsigned mode);
void tb_data(struct tbuf *, const void *data, size_t len);
void tb_file(struct tbuf *, const char *name, const char *content);
void tb_end(struct tbuf *);
void tb_append(struct tbuf *, const void *data, size_t len);
void tb_free(struct tbuf *);

#endif
