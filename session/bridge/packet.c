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
#include "bridge.h"

/* Decode a little-endian header. */
void
vsock_hdr_decode(struct vsock_hdr *h, const uint8_t *p)
{
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;

	memcpy(&v64, p + 0, 8);
	h->src_cid = le64toh(v64);
	memcpy(&v64, p + 8, 8);
	h->dst_cid = le64toh(v64);
	memcpy(&v32, p + 16, 4);
	h->src_port = le32toh(v32);
	memcpy(&v32, p + 20, 4);
	h->dst_port = le32toh(v32);
	memcpy(&v32, p + 24, 4);
	h->len = le32toh(v32);
	memcpy(&v16, p + 28, 2);
	h->type = le16toh(v16);
	memcpy(&v16, p + 30, 2);
	h->op = le16toh(v16);
	memcpy(&v32, p + 32, 4);
	h->flags = le32toh(v32);
	memcpy(&v32, p + 36, 4);
	h->buf_alloc = le32toh(v32);
	memcpy(&v32, p + 40, 4);
	h->fwd_cnt = le32toh(v32);
}

/* Encode a header as 44 little-endian bytes. */
void
vsock_hdr_encode(uint8_t *p, const struct vsock_hdr *h)
{
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;

	v64 = htole64(h->src_cid);
	memcpy(p + 0, &v64, 8);
	v64 = htole64(h->dst_cid);
	memcpy(p + 8, &v64, 8);
	v32 = htole32(h->src_port);
	memcpy(p + 16, &v32, 4);
	v32 = htole32(h->dst_port);
	memcpy(p + 20, &v32, 4);
	v32 = htole32(h->len);
	memcpy(p + 24, &v32, 4);
	v16 = htole16(h->type);
	memcpy(p + 28, &v16, 2);
	v16 = htole16(h->op);
	memcpy(p + 30, &v16, 2);
	v32 = htole32(h->flags);
	memcpy(p + 32, &v32, 4);
	v32 = htole32(h->buf_alloc);
	memcpy(p + 36, &v32, 4);
	v32 = htole32(h->fwd_cnt);
	memcpy(p + 40, &v32, 4);
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
