// term.js: one terminal of vmux web: an xterm.js Terminal joined to a
// WebSocket (subprotocol vmux.v1; the protocol is described in web/web.h).
//
// VmuxTerm keeps the cursor of the next output byte, so after a network
// drop it reconnects by itself and asks for exactly what it missed (the
// agent replays it from the shell's scrollback, or says what it no longer
// has). It retries only when the VM or the network went, never after a
// refusal (a revoked or wrong link, bad input). Used by shell.html (a
// student's page) and wall.html (each tile, and the zoomed terminal).
"use strict";

const VMUX_RETRY = new Set([1006, 4010, 4011]); // network drop, VM gone or down

function vmuxSocketURL() {
  const u = new URL("ws", location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  u.hash = "";
  return u.href;
}

class VmuxTerm {
  // opts: {token, session (teacher), shell, fontSize, readOnly (drop keys
  // here too), noResize (type but never size: the teacher), fit (fill the
  // element), onStatus(text, kind), onClients(msg),
  // onHello(msg), onOutput()}
  constructor(el, opts) {
    this.el = el;
    this.opts = opts;
    this.cursor = null; // the next byte wanted, once known
    this.closed = false; // for good: no retry
    this.retryMs = 500;
    this.enc = new TextEncoder();
    this.attached = false; // the server said hello on this socket
    this.pending = []; // keys typed before it did (a little of them)
    this.pendingBytes = 0;
    this.term = new Terminal({
      fontSize: opts.fontSize || 14,
      scrollback: 5000,
      cursorBlink: !opts.readOnly,
      disableStdin: !!opts.readOnly,
      convertEol: false,
      fontFamily: "DejaVu Sans Mono, Liberation Mono, monospace",
    });
    if (opts.fit) {
      this.fitter = new FitAddon.FitAddon();
      this.term.loadAddon(this.fitter);
    }
    this.term.open(el);
    if (this.fitter && !this.watching()) this.fitter.fit();
    // copy and paste as in a desktop terminal: Ctrl+Shift+C copies the
    // selection, Ctrl+Shift+V (or the browser's menu) pastes
    this.term.attachCustomKeyEventHandler((e) => {
      if (e.type !== "keydown" || !e.ctrlKey || !e.shiftKey) return true;
      if (e.code === "KeyC" && this.term.hasSelection()) {
        navigator.clipboard?.writeText(this.term.getSelection()).catch(() => {});
        return false;
      }
      return e.code !== "KeyV"; // the browser's paste event brings it
    });
    this.term.onData((d) => this.type(d));
    this.term.onBinary((d) => {
      const b = new Uint8Array(d.length);
      for (let i = 0; i < d.length; i++) b[i] = d.charCodeAt(i) & 255;
      this.sendBytes("i", b);
    });
    this.term.onResize(({ cols, rows }) => this.resize(cols, rows));
    this.connect();
  }

  status(text, kind) {
    if (this.opts.onStatus) this.opts.onStatus(text, kind || "info");
  }

  connect() {
    this.attached = false;
    const ws = new WebSocket(vmuxSocketURL(), "vmux.v1");
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => {
      const hello = {
        token: this.opts.token,
        cols: this.term.cols,
        rows: this.term.rows,
      };
      if (this.opts.session) hello.session = this.opts.session;
      if (this.opts.shell) hello.shell = this.opts.shell;
      if (this.cursor !== null) hello.cursor = this.cursor;
      ws.send(JSON.stringify(hello));
    };
    ws.onmessage = (ev) => this.message(new Uint8Array(ev.data));
    ws.onclose = (ev) => this.onclose(ev);
  }

  message(m) {
    if (m.length === 0) return;
    const type = String.fromCharCode(m[0]);
    if (type === "o") {
      const v = new DataView(m.buffer, m.byteOffset + 1, 8);
      const at = Number(v.getBigUint64(0, true));
      const bytes = m.subarray(9);
      if (this.cursor !== null && at + bytes.length <= this.cursor) return;
      const skip = this.cursor !== null && at < this.cursor ? this.cursor - at : 0;
      this.term.write(bytes.subarray(skip));
      this.cursor = at + bytes.length;
      if (this.opts.onOutput) this.opts.onOutput();
      return;
    }
    if (type !== "j") return;
    const msg = JSON.parse(new TextDecoder().decode(m.subarray(1)));
    switch (msg.type) {
      case "hello":
        this.retryMs = 500;
        this.attached = true;
        if (msg.reset && this.cursor !== null) { // the VM started again: a new shell
          this.term.write("\r\n\x1b[7m[vmux web: the shell started again]\x1b[0m\r\n");
          this.cursor = null;
        }
        if (this.cursor !== null && msg.cursor > this.cursor)
          this.marker(msg.cursor - this.cursor);
        if (this.cursor === null) this.cursor = msg.cursor;
        this.status("connected", "ok");
        if (this.opts.onHello) this.opts.onHello(msg);
        for (const b of this.pending.splice(0)) this.sendBytes("i", b);
        this.pendingBytes = 0;
        if (msg.read_only) this.setReadOnly(true);
        if (this.watching() && msg.cols > 0 && msg.rows > 0)
          this.follow(msg.cols, msg.rows);
        else if (!this.watching())
          this.resize(this.term.cols, this.term.rows);
        break;
      case "resize":
        if (this.watching()) this.follow(msg.cols, msg.rows);
        break;
      case "truncated":
        this.marker(msg.to - msg.from);
        this.cursor = msg.to;
        break;
      case "clients":
        if (this.opts.onClients) this.opts.onClients(msg);
        break;
      case "exit":
        this.status("the shell ended", "end");
        break;
      case "notice":
        this.status(msg.text, "info");
        break;
    }
  }

  marker(n) {
    this.term.write(`\r\n\x1b[7m[vmux web: ${n} bytes of output were skipped]\x1b[0m\r\n`);
  }

  onclose(ev) {
    if (this.closed) return;
    const why = ev.reason || (ev.code === 1006 ? "the connection dropped" : `closed (${ev.code})`);
    if (VMUX_RETRY.has(ev.code)) {
      this.status(`${why}: reconnecting...`, "warn");
      setTimeout(() => { if (!this.closed) this.connect(); }, this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 5000);
    } else {
      this.closed = true;
      this.status(why, "end");
    }
  }

  sendBytes(type, bytes) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const m = new Uint8Array(1 + bytes.length);
    m[0] = type.charCodeAt(0);
    m.set(bytes, 1);
    this.ws.send(m);
  }

  type(text) {
    if (this.opts.readOnly) return;
    const b = this.enc.encode(text);
    if (this.attached) this.sendBytes("i", b);
    else if (this.pendingBytes + b.length <= 4096) {
      this.pending.push(b);
      this.pendingBytes += b.length;
    }
  }

  // a watcher takes the shell's size (within what a page can draw)
  follow(cols, rows) {
    this.term.resize(Math.min(Math.max(cols, 2), 500), Math.min(Math.max(rows, 1), 200));
  }

  // A watcher (read-only, or the teacher's tile) follows the shell's size
  // and never sets it.
  watching() { return !!(this.opts.readOnly || this.opts.noResize); }

  resize(cols, rows) {
    if (this.watching()) return;
    this.sendBytes("r", this.enc.encode(JSON.stringify({ cols, rows })));
  }

  // keys typed here go to the shell or not (the wall's zoom while it holds
  // the keyboard; a link that turned out read-only)
  setReadOnly(ro) {
    this.opts.readOnly = ro;
    this.term.options.disableStdin = ro;
  }

  take() { this.sendBytes("t", new Uint8Array(0)); }
  giveBack() { this.sendBytes("g", new Uint8Array(0)); }

  fit() { if (this.fitter && !this.watching()) this.fitter.fit(); }

  close() {
    this.closed = true;
    if (this.ws) this.ws.close(1000);
    this.term.dispose();
  }
}
