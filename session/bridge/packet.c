/*
 * packet.c: virtio-vsock packet headers and the scatter-gather helpers
 * used to read and write them in guest buffers.
 *
 * A header is 44 little-endian bytes; struct vsock_hdr holds it decoded in
 * host order. Guest buffers arrive as iovec arrays of any shape (a header
 * may straddle descriptors), so every access goes through the iov_* copies,
 * which never touch more than the iovecs describe.
 */
#include <endian.h>
#include <string.h>
#include <sys/types.h>

#include "common/common.h"
#include "proto/attach.h" /* vmux_get_u*, vmux_put_u* */
#include "bridge.h"

/* Decode a little-endian header. */
void
vsock_hdr_decode(struct vsock_hdr *h, const uint8_t *p)
{
	h->src_cid = vmux_get_u64(p + 0);
	h->dst_cid = vmux_get_u64(p + 8);
	h->src_port = vmux_get_u32(p + 16);
	h->dst_port = vmux_get_u32(p + 20);
	h->len = vmux_get_u32(p + 24);
	h->type = vmux_get_u16(p + 28);
	h->op = vmux_get_u16(p + 30);
	h->flags = vmux_get_u32(p + 32);
	h->buf_alloc = vmux_get_u32(p + 36);
	h->fwd_cnt = vmux_get_u32(p + 40);
}

/* Encode a header as 44 little-endian bytes. */
void
vsock_hdr_encode(uint8_t *p, const struct vsock_hdr *h)
{
	vmux_put_u64(p + 0, h->src_cid);
	vmux_put_u64(p + 8, h->dst_cid);
	vmux_put_u32(p + 16, h->src_port);
	vmux_put_u32(p + 20, h->dst_port);
	vmux_put_u32(p + 24, h->len);
	vmux_put_u16(p + 28, h->type);
	vmux_put_u16(p + 30, h->op);
	vmux_put_u32(p + 32, h->flags);
	vmux_put_u32(p + 36, h->buf_alloc);
	vmux_put_u32(p + 40, h->fwd_cnt);
}

/* Bytes in an iovec array. */
size_t
iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copy up to len bytes out of iov starting at off; bytes copied. */
size_t
iov_copy_from(const struct iovec *iov, int n, size_t off, void *dst, size_t len)
{
	size_t done = 0;

	for (int i = 0; i < n && done < len; i++) {
		size_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		k = iov[i].iov_len - off;
		if (k > len - done)
			k = len - done;
		memcpy((char *)dst + done, (char *)iov[i].iov_base + off, k);
		done += k;
		off = 0;
	}
	return done;
}

/* Copy up to len bytes into iov starting at off; bytes copied. */
size_t
iov_copy_to(
    const struct iovec *iov, int n, size_t off, const void *src, size_t len)
{
	size_t done = 0;

	for (int i = 0; i < n && done < len; i++) {
		size_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		k = iov[i].iov_len - off;
		if (k > len - done)
			k = len - done;
		memcpy(
		    (char *)iov[i].iov_base + off, (const char *)src + done, k);
		done += k;
		off = 0;
	}
	return done;
}

/* The pieces of iov covering [off, off + len), at most max; count. */
int
iov_slice(const struct iovec *iov, int n, size_t off, size_t len,
    struct iovec *out, int max)
{
	int k = 0;

	for (int i = 0; i < n && len > 0 && k < max; i++) {
		size_t take;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		take = iov[i].iov_len - off;
		if (take > len)
			take = len;
		out[k].iov_base = (char *)iov[i].iov_base + off;
		out[k].iov_len = take;
		k++;
		len -= take;
		off = 0;
	}
	return k;
}
