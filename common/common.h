/*
 * common.h: small helpers shared by every vmux program (host and guest).
 *
 * Allocation never fails: the x* functions abort with a message instead of
 * returning NULL (tmux's policy), so callers never check. User-facing errors
 * travel as `char **cause` strings the caller frees; system-level edges
 * return negative errno values (libuv's convention).
 */
#ifndef VMUX_COMMON_H
#define VMUX_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdint.h>

#define nitems(a) (sizeof(a) / sizeof((a)[0]))

/* A branch that cannot happen; abort loudly if it does (SQLite's NEVER). */
#define NEVER(msg) fatalx("%s:%d: can't happen: %s", __FILE__, __LINE__, (msg))

/* sha256.c: the digests that name image blobs. */
struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t n;
};
void sha256_init(struct sha256 *);
void sha256_update(struct sha256 *, const void *, size_t);
void sha256_hex(struct sha256 *, char hex[65]);
int sha256_fd(int fd, char hex[65]);

/* printable.c: guest text made safe to print on a terminal. */
/* The largest screen vmux draws of a guest's PTY (the TUI's panes, capture
 * --plain): a guest may say any size, and a screen costs cols x rows cells. */
#define SCREEN_MAX_COLS 512
#define SCREEN_MAX_ROWS 256

#define STR_KEEP_NL 0x1 /* keep newlines: the text is multi-line */
char *str_printable(const char *, int flags);
char *json_printable(const char *);

/* json_bound.c */
size_t json_values(const char *, size_t max);

/* headtail.c: output kept within a limit, its head and its tail. */
struct headtail {
	size_t limit;        /* the most bytes headtail_result gives */
	unsigned char *head; /* the first bytes, up to limit */
	size_t head_len;
	unsigned char *tail; /* a ring of the last bytes past the head */
	size_t tail_pos, tail_len;
	uint64_t total; /* every byte added */
};
void headtail_init(struct headtail *, size_t limit);
void headtail_add(struct headtail *, const void *, size_t);
int headtail_cut(const struct headtail *);
char *headtail_result(const struct headtail *, size_t *len, uint64_t *dropped);
void headtail_free(struct headtail *);

/* xmalloc.c */
void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xrealloc(void *, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
int xasprintf(char **, const char *, ...) __attribute__((format(printf, 2, 3)));
int xvasprintf(char **, const char *, va_list);

/* log.c */
void log_open(const char *name);
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
__attribute__((noreturn)) void fatal(const char *, ...)
    __attribute__((format(printf, 1, 2)));
__attribute__((noreturn)) void fatalx(const char *, ...)
    __attribute__((format(printf, 1, 2)));

/* util.c */
uint64_t mono_ms(void);
double wall_time(void);
char *time_rfc3339(double t);
int set_nonblock(int fd, int on);
int set_cloexec(int fd);
ssize_t write_all(int fd, const void *buf, size_t len);
ssize_t read_full(int fd, void *buf, size_t len);
int file_replace(const char *path, const void *data, size_t len, mode_t mode);
int mkdir_p(const char *path, mode_t mode);
int private_dir(const char *path);
int private_dir_make(const char *path, char **cause);
int rmtree(const char *path);
int oom_score_adj(const char *value);
char *base64_encode(const void *, size_t);
unsigned char *base64_decode(const char *, size_t *len);
int utf8_valid(const void *, size_t);
ssize_t getline_max(char **, size_t *, FILE *, size_t max, int *cut);

#endif
