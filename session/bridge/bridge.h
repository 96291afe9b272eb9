/*
 * bridge.h: vmux-bridge, a vhost-user back end for QEMU's vhost-user-vsock
 * device that exposes Firecracker's hybrid-vsock Unix socket.
 *
 * Layers, bottom up, one file each:
 *   mem.c      the guest memory table and strictly bounded translation
 *   vring.c    split virtqueues over that memory (pop, push, notify)
 *   vhu.c      the vhost-user message codec and dispatcher
 *   packet.c   vsock packet headers, scatter-gather copies
 *   vsock.c    the virtio-vsock connection engine: pure, no I/O of its own
 *              (sockets through struct vsock_ops, time passed in)
 *   connect.c  the "CONNECT <port>\n" line parser
 *   pump.c     moves packets between the two rings and the engine
 *   loop.c     the epoll event loop that owns every file descriptor
 *   main.c     command line
 * Guest memory is untrusted: every guest-controlled number is checked before
 * use, and nothing the guest writes is read twice.
 */
#ifndef VMUX_BRIDGE_H
#define VMUX_BRIDGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

/* mem.c */
#define MEM_MAX_REGIONS 8

struct mem_region {
	uint64_t gpa;  /* guest-physical start */
	uint64_t size; /* bytes */
	uint64_t uva;  /* QEMU's virtual address of the start */
	uint8_t *host; /* our address of the start */
	void *map;     /* the mmap()ed range (starts mmap_offset before host) */
	size_t map_len;
};

struct mem {
	int n;
	struct mem_region r[MEM_MAX_REGIONS];
};

void mem_init(struct mem *);
int mem_add(struct mem *, uint64_t gpa, uint64_t size, uint64_t uva,
    uint64_t offset, int fd);
void mem_clear(struct mem *);
void mem_trim(const struct mem *);
void *mem_gpa(const struct mem *, uint64_t gpa, uint64_t *avail);
void *mem_uva(const struct mem *, uint64_t uva, uint64_t len);

/* vring.c */
#define VRING_MAX_NUM 32768
#define VRING_MAX_IOV 64

#define VRING_DESC_F_NEXT          1
#define VRING_DESC_F_WRITE         2
#define VRING_DESC_F_INDIRECT      4
#define VRING_AVAIL_F_NO_INTERRUPT 1

struct vring {
	unsigned num; /* 0 until SET_VRING_NUM */
	uint64_t desc_uva, avail_uva, used_uva;
	uint8_t *desc, *avail, *used; /* NULL until translated */
	uint16_t last_avail;          /* next avail slot to read */
	uint16_t used_idx;            /* next used slot to write */
	int kick, call, err;          /* eventfds or -1 */
	int started, enabled, broken, ever_started;
	int addr_set, need_notify;
	unsigned long nbad; /* malformed chains skipped */
};

struct vring_chain {
	uint16_t head;
	int nout, nin; /* device-readable, device-writable parts */
	size_t out_len, in_len;
	struct iovec out[VRING_MAX_IOV];
	struct iovec in[VRING_MAX_IOV];
};

void vring_init(struct vring *);
void vring_close(struct vring *);
int vring_map(struct vring *, const struct mem *);
int vring_ready(const struct vring *);
int vring_pop(struct vring *, const struct mem *, struct vring_chain *);
void vring_unpop(struct vring *);
void vring_push(struct vring *, uint16_t head, uint32_t len);
int vring_notify(struct vring *);
uint16_t vring_used_idx_now(const struct vring *);

/* vhu.c */
#define VHU_GET_FEATURES          1
#define VHU_SET_FEATURES          2
#define VHU_SET_OWNER             3
#define VHU_RESET_OWNER           4
#define VHU_SET_MEM_TABLE         5
#define VHU_SET_LOG_BASE          6
#define VHU_SET_LOG_FD            7
#define VHU_SET_VRING_NUM         8
#define VHU_SET_VRING_ADDR        9
#define VHU_SET_VRING_BASE        10
#define VHU_GET_VRING_BASE        11
#define VHU_SET_VRING_KICK        12
#define VHU_SET_VRING_CALL        13
#define VHU_SET_VRING_ERR         14
#define VHU_GET_PROTOCOL_FEATURES 15
#define VHU_SET_PROTOCOL_FEATURES 16
#define VHU_GET_QUEUE_NUM         17
#define VHU_SET_VRING_ENABLE      18
#define VHU_GET_CONFIG            24
#define VHU_SET_CONFIG            25

#define VHU_VERSION         0x1
#define VHU_FLAG_REPLY      0x4
#define VHU_FLAG_NEED_REPLY 0x8
#define VHU_HDR_LEN         12
#define VHU_MAX_PAYLOAD     512
#define VHU_MAX_FDS         8
#define VHU_NQUEUES         2
#define VHU_VRING_NOFD      (1u << 8)

#define VHU_F_LOG_ALL           (1ULL << 26)
#define VHU_F_PROTOCOL_FEATURES (1ULL << 30)
#define VHU_F_VERSION_1         (1ULL << 32)
#define VHU_PF_MQ               (1ULL << 0)
#define VHU_PF_LOG_SHMFD        (1ULL << 1)
#define VHU_PF_REPLY_ACK        (1ULL << 3)
#define VHU_PF_CONFIG           (1ULL << 9)
/* LOG_ALL and LOG_SHMFD offered, never done: see vhu.c's top comment */
#define VHU_FEATURES (VHU_F_VERSION_1 | VHU_F_PROTOCOL_FEATURES | VHU_F_LOG_ALL)
#define VHU_PROTOCOL_FEATURES                                                  \
	(VHU_PF_MQ | VHU_PF_LOG_SHMFD | VHU_PF_REPLY_ACK | VHU_PF_CONFIG)

/* The glue watches kick fds; vhu tells it before closing one. */
struct vhu_ops {
	void (*kick_changed)(void *arg, int idx, int oldfd, int newfd);
};

struct vhu {
	int fd;            /* connection to QEMU */
	uint64_t cid;      /* guest CID for GET_CONFIG */
	uint64_t features; /* acked by QEMU */
	uint64_t protocol; /* acked protocol features */
	struct mem mem;
	struct vring vq[VHU_NQUEUES];
	int reset; /* set: drop every connection (glue clears) */
	const struct vhu_ops *ops;
	void *arg;
};

void vhu_init(
    struct vhu *, int fd, uint64_t cid, const struct vhu_ops *, void *arg);
int vhu_dispatch(struct vhu *);
void vhu_free(struct vhu *);

/* vsock.c */
#define VSOCK_HDR_LEN     44
#define VSOCK_HOST_CID    2
#define VSOCK_TYPE_STREAM 1

#define VSOCK_OP_REQUEST        1
#define VSOCK_OP_RESPONSE       2
#define VSOCK_OP_RST            3
#define VSOCK_OP_SHUTDOWN       4
#define VSOCK_OP_RW             5
#define VSOCK_OP_CREDIT_UPDATE  6
#define VSOCK_OP_CREDIT_REQUEST 7

#define VSOCK_SHUT_RCV  1
#define VSOCK_SHUT_SEND 2

#define VSOCK_BUF_ALLOC     (64 * 1024)  /* per-connection host-bound window */
#define VSOCK_BUF_ALLOC_MAX (256 * 1024) /* a bulk stream's window */
#define VSOCK_MAX_PKT       (64 * 1024)  /* payload per packet */
#define VSOCK_MAX_CONNS     512
#define VSOCK_RST_QUEUE     64 /* RSTs for unknown connections */
#define VSOCK_HASH          256
#define VSOCK_GRACE_MS      2000       /* wait for the guest's RST */
#define VSOCK_LINGER_MS     60000      /* flushing to a stalled client */
#define VSOCK_PORT_MIN      (1u << 30) /* local ports for CONNECT */
#define VSOCK_PORT_MAX      (1u << 31)

/* socket event bits for vsock_sock_event */
#define VSOCK_EV_IN  1
#define VSOCK_EV_OUT 2
#define VSOCK_EV_HUP 4 /* peer closed both ways */
#define VSOCK_EV_ERR 8

/* One packet header, host byte order. */
struct vsock_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port;
	uint32_t len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
};

/*
 * Socket operations the engine asks of its owner. Sockets are opaque ids.
 * readv/writev return bytes, 0 at EOF (readv), or -errno (-EAGAIN: would
 * block). open connects to the host port and returns a new id or -errno.
 */
struct vsock_ops {
	ssize_t (*readv)(void *arg, int id, const struct iovec *, int);
	ssize_t (*writev)(void *arg, int id, const struct iovec *, int);
	int (*open)(void *arg, uint32_t port);
	void (*shutdown_wr)(void *arg, int id);
	void (*close)(void *arg, int id);
};

struct vsock_cfg {
	uint64_t guest_cid;
	uint32_t buf_alloc; /* 0 = VSOCK_BUF_ALLOC */
	uint32_t connect_timeout_ms;
	int max_conns;         /* 0 = VSOCK_MAX_CONNS */
	const uint32_t *allow; /* host ports the guest may connect to */
	int nallow;
	uint32_t buf_alloc_max; /* 0 = VSOCK_BUF_ALLOC_MAX */
};

enum vconn_state { VC_CONNECTING, VC_ESTABLISHED };

struct vconn {
	uint32_t lport, pport; /* host (local) and guest (peer) ports */
	int sock;              /* socket id, -1 once closed */
	enum vconn_state state;
	int guest;     /* known to the guest (until RST either way) */
	unsigned pend; /* control packets owed to the guest */
	uint32_t shut_sent, peer_shut;
	uint32_t peer_buf_alloc, peer_fwd_cnt, tx_cnt; /* guest-bound credit */
	uint32_t rx_cnt, fwd_cnt, fwd_reported;        /* host-bound credit */
	uint32_t buf_alloc; /* the window we advertise; only grows */
	uint8_t *buf;       /* host-bound bytes the socket did not take */
	uint32_t buf_cap, buf_off, buf_len;
	char ok[24]; /* "OK <port>\n", not counted in fwd_cnt */
	uint8_t ok_len, ok_off;
	uint64_t deadline; /* 0 = none */
	unsigned readable : 1, writable : 1, eof : 1, hup : 1, active : 1,
	    shut_wr : 1, stalled : 1;
	struct vconn *pnext, *snext; /* port and socket hash chains */
	TAILQ_ENTRY(vconn) aentry;   /* has something for the guest */
	TAILQ_ENTRY(vconn) entry;    /* every connection */
};
TAILQ_HEAD(vconn_list, vconn);

struct vsock_stats {
	unsigned long tx_pkts, rx_pkts, dropped, rsts_dropped, overruns;
};

struct vsock {
	struct vsock_cfg cfg;
	uint32_t *allow;
	const struct vsock_ops *ops;
	void *arg;
	struct vconn *ports[VSOCK_HASH];
	struct vconn *socks[VSOCK_HASH];
	struct vconn_list all, active;
	int nconns;
	uint32_t next_port;
	struct {
		uint32_t lport, pport;
		uint16_t type;
	} rst[VSOCK_RST_QUEUE];
	int rst_head, rst_len;
	uint64_t alloc_total; /* every connection's buf_alloc, summed */
	struct vsock_stats stats;
};

/* packet.c (header codec for the vsock.c types above) */
void vsock_hdr_decode(struct vsock_hdr *, const uint8_t *);
void vsock_hdr_encode(uint8_t *, const struct vsock_hdr *);
size_t iov_copy_from(const struct iovec *, int, size_t off, void *, size_t);
size_t iov_copy_to(const struct iovec *, int, size_t off, const void *, size_t);
size_t iov_total(const struct iovec *, int);
int iov_slice(const struct iovec *, int, size_t off, size_t len,
    struct iovec *out, int max);

/* vsock.c (functions) */
struct vsock *vsock_new(
    const struct vsock_cfg *, const struct vsock_ops *, void *arg);
void vsock_free(struct vsock *);
void vsock_reset(struct vsock *);
int vsock_connect(struct vsock *, int sock, uint32_t port, uint64_t now);
void vsock_tx(struct vsock *, const struct iovec *, int, uint64_t now);
size_t vsock_rx(struct vsock *, const struct iovec *, int, uint64_t now);
int vsock_rx_pending(const struct vsock *);
void vsock_sock_event(struct vsock *, int sock, unsigned ev, uint64_t now);
void vsock_tick(struct vsock *, uint64_t now);
uint64_t vsock_deadline(const struct vsock *);
struct vconn *vsock_find(const struct vsock *, uint32_t lport, uint32_t pport);

/* connect.c */
#define CONNECT_MAX_LINE 64

enum { CONNECT_BAD = -1, CONNECT_MORE = 0, CONNECT_DONE = 1 };

int connect_parse(const char *, size_t, uint32_t *port, size_t *linelen);

/* fwdlimit.c: vmux-bridge --fwd-limit (allowed hosts' connections) */
#define FWD_LIMIT_MAX  1024
#define FWD_LIMIT_FULL 75 /* every slot taken: the connection is refused */

int fwd_slot_take(const char *dir, unsigned n);
int fwd_limit_main(int argc, char **argv);

/* pump.c */
int pump_tx(struct vhu *, struct vsock *, uint64_t now, int budget);
int pump_rx(struct vhu *, struct vsock *, uint64_t now, int budget);

/* loop.c */
#define BRIDGE_MAX_ALLOW               64
#define BRIDGE_MAX_PENDING             256 /* clients before CONNECT */
#define BRIDGE_FD_RESERVE              16  /* fds kept for QEMU's messages */
#define BRIDGE_DEFAULT_CONNECT_TIMEOUT 5000
#define BRIDGE_LINE_TIMEOUT            5000
#define BRIDGE_TRIM_IDLE_MS            1000 /* mem_trim after this quiet */
#define BRIDGE_TRIM_CHAINS             128  /* or after this many chains */
#define BRIDGE_BATCH                   64   /* chains per ring per pass */

struct bridge_cfg {
	const char *vhu_path, *uds_path;
	uint64_t guest_cid;
	uint32_t allow[BRIDGE_MAX_ALLOW];
	int nallow;
	uint32_t connect_timeout_ms;
	uint32_t line_timeout_ms;
	int ready_fd; /* -1 = none */
};

struct bridge;

struct bridge *bridge_open(const struct bridge_cfg *, char **cause);
int bridge_run(struct bridge *);
void bridge_close(struct bridge *);

#endif
