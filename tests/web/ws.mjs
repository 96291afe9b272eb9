// ws.mjs: a small WebSocket client over node:net for the protocol checks
// of tests/e2e/49-web.sh, because a browser cannot forge an Origin or send
// a malformed frame: it sets any header and sends any frame, masked as a
// client must. Not a general client: one connection, frames of any size,
// text, binary and close.
import net from "node:net";
import { randomBytes } from "node:crypto";

export class RawWS {
  // connect to ws://host:port/path with extra headers; resolves once the
  // server answered the upgrade (status: 101 or what it said instead)
  static open(url, headers = {}) {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const sock = net.connect(Number(u.port), u.hostname);
      const key = randomBytes(16).toString("base64");
      let buf = Buffer.alloc(0);
      const ws = new RawWS(sock);
      sock.on("error", reject);
      sock.on("connect", () => {
        const h = {
          Host: u.host, Upgrade: "websocket", Connection: "Upgrade",
          "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Protocol": "vmux.v1", ...headers,
        };
        let req = `GET ${u.pathname} HTTP/1.1\r\n`;
        for (const [k, v] of Object.entries(h)) if (v !== null) req += `${k}: ${v}\r\n`;
        sock.write(req + "\r\n");
      });
      const onData = (d) => {
        buf = Buffer.concat([buf, d]);
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        sock.off("data", onData);
        const head = buf.subarray(0, end).toString();
        ws.status = Number(head.split(" ")[1]);
        ws.feed(buf.subarray(end + 4));
        sock.on("data", (x) => ws.feed(x));
        resolve(ws);
      };
      sock.on("data", onData);
      sock.on("close", () => { if (ws.status === undefined) resolve(Object.assign(ws, { status: 0 })); });
    });
  }

  constructor(sock) {
    this.sock = sock;
    this.in = Buffer.alloc(0);
    this.messages = [];
    this.waiters = [];
    this.closed = null; // {code, reason, at}
    sock.on("close", () => {
      if (!this.closed) this.closed = { code: 1006, reason: "", at: Date.now() };
      this.wake();
    });
  }

  wake() { for (const w of this.waiters.splice(0)) w(); }

  feed(d) {
    this.in = Buffer.concat([this.in, d]);
    for (;;) {
      if (this.in.length < 2) return;
      const op = this.in[0] & 15;
      let len = this.in[1] & 127, off = 2;
      if (len === 126) { if (this.in.length < 4) return; len = this.in.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (this.in.length < 10) return; len = Number(this.in.readBigUInt64BE(2)); off = 10; }
      if (this.in.length < off + len) return;
      const p = this.in.subarray(off, off + len);
      this.in = this.in.subarray(off + len);
      if (op === 8) {
        this.closed = { code: p.length >= 2 ? p.readUInt16BE(0) : 1005,
          reason: p.subarray(2).toString(), at: Date.now() };
        this.sock.end();
      } else if (op === 1 || op === 2) this.messages.push(Buffer.from(p));
      this.wake();
    }
  }

  // send one frame: opcode 1 text, 2 binary (fin set, masked)
  frame(op, payload) {
    const p = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
    const mask = randomBytes(4);
    let head;
    if (p.length < 126) head = Buffer.from([0x80 | op, 0x80 | p.length]);
    else if (p.length < 65536) { head = Buffer.alloc(4); head[0] = 0x80 | op; head[1] = 0x80 | 126; head.writeUInt16BE(p.length, 2); }
    else { head = Buffer.alloc(10); head[0] = 0x80 | op; head[1] = 0x80 | 127; head.writeBigUInt64BE(BigInt(p.length), 2); }
    const m = Buffer.alloc(p.length);
    for (let i = 0; i < p.length; i++) m[i] = p[i] ^ mask[i & 3];
    return new Promise((r) => this.sock.write(Buffer.concat([head, mask, m]), () => r()));
  }

  text(s) { return this.frame(1, s); }
  binary(type, body = Buffer.alloc(0)) { return this.frame(2, Buffer.concat([Buffer.from(type), Buffer.from(body)])); }

  // the next message (a Buffer) or null once closed, within ms
  async next(ms = 20000) {
    const end = Date.now() + ms;
    while (this.messages.length === 0 && !this.closed) {
      if (Date.now() > end) throw new Error("no message within " + ms + " ms");
      await new Promise((r) => { this.waiters.push(r); setTimeout(r, 200); });
    }
    return this.messages.shift() || null;
  }

  // the next 'j' message of the given type
  async json(type, ms = 20000) {
    for (;;) {
      const m = await this.next(ms);
      if (m === null) throw new Error(`closed (${this.closed.code} ${this.closed.reason}) before '${type}'`);
      if (m[0] !== 0x6a) continue;
      const o = JSON.parse(m.subarray(1).toString());
      if (o.type === type) return o;
    }
  }

  // wait for the close; {code, reason, at}
  async close(ms = 20000) {
    const end = Date.now() + ms;
    while (!this.closed) {
      if (Date.now() > end) throw new Error("not closed within " + ms + " ms");
      this.messages.length = 0;
      await new Promise((r) => { this.waiters.push(r); setTimeout(r, 200); });
    }
    return this.closed;
  }

  end() { this.sock.destroy(); }
}
