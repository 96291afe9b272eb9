/*
 * pump.c: moves packets between the device's rings and the vsock engine.
 *
 * tx (queue 1) is always drained, whatever the state of rx, as the spec's
 * deadlock rule asks: the engine keeps what it owes the guest in bounded
 * state. rx (queue 0) is filled while the engine has something and the
 * guest has buffers; a buffer the engine turned out not to need goes back
 * to the avail ring untouched. Each pump signals its call eventfd once per
 * batch.
 */
#include <sys/types.h>

#include "common/common.h"
#include "bridge.h"

/*
 * Hand up to budget guest packets to the engine. 1 if the budget ran out
 * with packets left (call again soon), else 0.
 */
int
pump_tx(struct vhu *d, struct vsock *vs, uint64_t now, int budget)
{
	struct vring *vr = &d->vq[1];
	struct vring_chain ch;
	int n = 0, r = 0;

	while (n < budget && (r = vring_pop(vr, &d->mem, &ch)) == 1) {
		vsock_tx(vs, ch.out, ch.nout, now);
		vring_push(vr, ch.head, 0);
		n++;
	}
	vring_notify(vr);
	return n == budget && r == 1;
}

/*
 * Fill up to budget guest rx buffers with the engine's packets. 1 if the
 * budget ran out with more to send, else 0.
 */
int
pump_rx(struct vhu *d, struct vsock *vs, uint64_t now, int budget)
{
	struct vring *vr = &d->vq[0];
	struct vring_chain ch;
	int n = 0;

	while (n < budget && vsock_rx_pending(vs)) {
		size_t len;

		if (vring_pop(vr, &d->mem, &ch) != 1)
			break;
		if (ch.in_len < VSOCK_HDR_LEN) {
			vring_push(vr, ch.head, 0); /* useless buffer */
			continue;
		}
		len = vsock_rx(vs, ch.in, ch.nin, now);
		if (len == 0) {
			vring_unpop(vr);
			break;
		}
		vring_push(vr, ch.head, (uint32_t)len);
		n++;
	}
	vring_notify(vr);
	return n == budget && vsock_rx_pending(vs);
}
