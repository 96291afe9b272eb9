// protocol.mjs: vmux web's socket refuses what it must, for
// tests/e2e/49-web.sh: `node protocol.mjs SCENARIO`, exit 0 when every
// assertion held. WEB is the server's base URL; LINK_S1, LINK_S2,
// LINK_S2_FLOOD (s2's shell "flood", which the input flood leaves full of
// spaces) and LINK_EXPIRED are links from vmux grant --web.
import { RawWS } from "./ws.mjs";
import net from "node:net";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const WEB = process.env.WEB;
const WSURL = WEB.replace(/^http/, "ws") + "/ws";
const ORIGIN = new URL(WEB).origin;
const tok = (link) => link.slice(link.indexOf("#") + 1);
const [scenario] = process.argv.slice(2);

function assert(cond, msg) { if (!cond) throw new Error(msg); }

async function hello(token, extra = {}) {
  const ws = await RawWS.open(WSURL, { Origin: ORIGIN });
  assert(ws.status === 101, `upgrade: status ${ws.status}`);
  await ws.text(JSON.stringify({ token, cols: 80, rows: 24, ...extra }));
  return ws;
}

async function expectClose(ws, code, re, what) {
  const c = await ws.close();
  assert(c.code === code && re.test(c.reason), `${what}: closed ${c.code} '${c.reason}', want ${code} /${re.source}/`);
  return c;
}

const scenarios = {
  // another site's page cannot open a socket; the page's own can
  async origin() {
    let ws = await RawWS.open(WSURL, { Origin: "http://evil.example" });
    assert(ws.status !== 101, "a forged Origin was upgraded");
    ws.end();
    ws = await RawWS.open(WSURL, { Origin: "http://127.0.0.1.evil.example:1" });
    assert(ws.status !== 101, "a look-alike Origin was upgraded");
    ws.end();
    // DNS rebinding: another name that resolves here, Origin and Host alike
    const port = new URL(WEB).port;
    ws = await RawWS.open(WSURL, { Origin: `http://rebound.example:${port}`, Host: `rebound.example:${port}` });
    assert(ws.status !== 101, "a rebound name was upgraded");
    ws.end();
    for (const o of [ORIGIN, `http://localhost:${port}`]) {
      ws = await RawWS.open(WSURL, { Origin: o });
      assert(ws.status === 101, `Origin ${o}: status ${ws.status}`);
      ws.end();
    }
  },
  // an upgrade to any protocol but vmux.v1 (the server's internal ones,
  // plain http, one it does not know, or none) is refused before it opens,
  // whatever its Origin
  async upgrades() {
    for (const proto of [null, "http", "vmux-agent", "vmux-watch", "chat"])
      for (const o of ["http://evil.example", ORIGIN]) {
        const ws = await RawWS.open(WSURL, { Origin: o, "Sec-WebSocket-Protocol": proto });
        assert(ws.status !== 101, `protocol ${proto} from ${o} was upgraded`);
        ws.end();
      }
  },
  // a CONNECT (which libwebsockets would make a raw socket of the first
  // protocol, with no timeout) and an h2c upgrade are hung up on
  async connect() {
    const u = new URL(WEB);
    for (const req of [`CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n`,
      `GET / HTTP/1.1\r\nHost: ${u.host}\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
      `Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`]) {
      const got = await new Promise((resolve) => {
        const s = net.connect(Number(u.port), u.hostname);
        let data = "";
        const t = setTimeout(() => { s.destroy(); resolve({ open: true, data }); }, 5000);
        s.on("data", (d) => { data += d; });
        s.on("close", () => { clearTimeout(t); resolve({ open: false, data }); });
        s.on("error", () => {});
        s.on("connect", () => s.write(req));
      });
      assert(!got.open, `${req.split(" ")[0]} ${req.includes("h2c") ? "h2c" : ""}: the socket stayed open`);
      assert(!/^HTTP\/1\.1 101/.test(got.data), `switched protocols: ${got.data.slice(0, 40)}`);
    }
  },
  // one address holds a bounded number of sockets that owe their hello:
  // the next is refused, and room comes back as they close
  async peer() {
    const open = [];
    for (let i = 0; i < 64; i++) {
      const ws = await RawWS.open(WSURL, { Origin: ORIGIN });
      assert(ws.status === 101, `socket ${i + 1}: status ${ws.status}`);
      open.push(ws);
    }
    let ws = await RawWS.open(WSURL, { Origin: ORIGIN });
    assert(ws.status !== 101, "a 65th socket without a hello was upgraded");
    ws.end();
    for (const w of open) w.end();
    const end = Date.now() + 10000;
    for (;;) {
      ws = await RawWS.open(WSURL, { Origin: ORIGIN });
      ws.end();
      if (ws.status === 101) break;
      assert(Date.now() < end, "no room after the sockets closed");
      await new Promise((r) => setTimeout(r, 200));
    }
  },
  // the teacher's token reaches the wall's sessions only, and no shell
  // that is not there yet
  async teacher() {
    const wall = tok(process.env.WALL);
    let ws = await hello(wall, { session: "s3" });
    await expectClose(ws, 4005, /not on this wall|no such/, "a session outside -l");
    ws = await hello(wall, { session: "nosuch" });
    await expectClose(ws, 4005, /no such session/, "no such session");
    ws = await hello(wall, { session: "s1", shell: "never-opened" });
    await expectClose(ws, 4011, /no shell never-opened/, "a shell not there yet");
    ws = await hello(wall, { session: "s1" });
    const h = await ws.json("hello");
    assert(h.teacher === true && h.session === "s1", `teacher's tile: ${JSON.stringify(h)}`);
    ws.end();
  },
  // one link holds a bounded number of pages open
  async many() {
    const open = [];
    for (let i = 0; i < 8; i++) {
      const ws = await hello(tok(process.env.LINK_S2));
      await ws.json("hello");
      open.push(ws);
    }
    const ws = await hello(tok(process.env.LINK_S2));
    await expectClose(ws, 4013, /open in 8 pages/, "a ninth page");
    for (const w of open) w.end();
  },
  // a page that stops reading: vmux web stops reading the agent (its queue
  // is bounded), the shell's ring drops the oldest output, and the page is
  // told what it missed (TRUNCATED) before the rest
  async slow() {
    const ws = await hello(tok(process.env.LINK_S2));
    await ws.json("hello");
    const outputBytes = () => JSON.parse(execFileSync(process.env.VMUX, ["shells", "s2", "--json"]))
      .find((x) => x.shell_id === "main").output_bytes;
    const start = outputBytes();
    ws.sock.pause();
    const n = Math.floor(Math.random() * 1e6), mark = `SLOW-${n + 1}`; // not in any replay
    await ws.binary("i", `head -c 12582912 /dev/zero | tr '\\0' y; echo; echo SLOW-$((${n}+1))\r`);
    // the guest is done once the shell's output is all there
    for (let i = 0; outputBytes() < start + 12582912; i++) {
      assert(i < 1200, "the guest never finished its output");
      await new Promise((r) => setTimeout(r, 100));
    }
    const rss = readFileSync(`/proc/${process.env.WEB_PID}/status`, "utf8").match(/VmRSS:\s+(\d+)/)[1];
    console.log(`figure: vmux web's RSS with a page that read nothing of 12 MiB: ${(rss / 1024).toFixed(1)} MiB`);
    ws.sock.resume();
    let trunc = null, tail = "";
    while (!tail.includes(mark)) {
      const m = await ws.next(60000);
      assert(m !== null, `closed (${ws.closed && ws.closed.reason}) before the end`);
      if (m[0] === 0x6a) {
        const o = JSON.parse(m.subarray(1).toString());
        if (o.type === "truncated") trunc = o;
      } else if (m[0] === 0x6f) tail = (tail + m.subarray(9).toString()).slice(-64);
    }
    assert(trunc !== null, "no truncated message: the output was buffered whole");
    console.log(`figure: skipped for the slow page: ${((trunc.to - trunc.from) / 1048576).toFixed(1)} MiB`);
    ws.end();
  },
  // a page whose cursor is past the shell's end (the VM started again)
  // is told to start over, from the oldest byte kept
  async reset() {
    const ws = await hello(tok(process.env.LINK_S2), { cursor: 2 ** 40 });
    const h = await ws.json("hello");
    assert(h.reset === true && h.cursor < 2 ** 40, `hello ${JSON.stringify(h)}`);
    ws.end();
    const bad = await hello(tok(process.env.LINK_S2), { cursor: 1.5 });
    await expectClose(bad, 4000, /cursor/, "a fractional cursor");
  },
  // a wrong token waits a second and is refused; so are an expired one,
  // a malformed one and the teacher's shape without the teacher's token
  async tokens() {
    for (const [what, t] of [["random", "A".repeat(32)], ["expired", tok(process.env.LINK_EXPIRED)],
      ["malformed", "../../etc/passwd"], ["empty", ""]]) {
      const start = Date.now();
      const ws = await hello(t);
      const c = await expectClose(ws, 4003, /not valid/, what);
      assert(c.at - start >= 900, `${what}: refused after ${c.at - start} ms, want >= 1 s`);
    }
  },
  // a link reaches its own session whatever the hello asks for
  async other() {
    const ws = await hello(tok(process.env.LINK_S1), { session: "s2", shell: "other" });
    const h = await ws.json("hello");
    assert(h.session === "s1" && h.shell === "main", `attached to ${h.session}:${h.shell}`);
    ws.end();
  },
  // bad input: each closes its socket with a reason, the server stays up
  async bad() {
    const cases = [
      ["binary hello", async (ws) => ws.binary("i", "x"), 4000, /JSON hello/, false],
      ["no token", async (ws) => ws.text('{"cols":80}'), 4000, /token/, false],
      ["oversized", async (ws) => ws.binary("i", Buffer.alloc(70 * 1024, 32)), 1009, /KiB/, true],
      ["unknown type", async (ws) => ws.binary("z"), 4000, /unknown message type 0x7a/, true],
      ["resize 0", async (ws) => ws.binary("r", '{"cols":0,"rows":24}'), 4000, /1-4096/, true],
      ["resize 65535", async (ws) => ws.binary("r", '{"cols":65535,"rows":24}'), 4000, /1-4096/, true],
      ["resize junk", async (ws) => ws.binary("r", "{nope"), 4000, /1-4096/, true],
      ["bad signal", async (ws) => ws.binary("s", "kill -9"), 4000, /signal/, true],
      ["text after hello", async (ws) => ws.text("hi"), 4000, /binary/, true],
      ["invalid UTF-8", async (ws) => ws.frame(1, Buffer.from([0xff, 0xfe, 0x41])), 1007, /.*/, true],
    ];
    for (const [what, send, code, re, after] of cases) {
      let ws;
      if (after) {
        ws = await hello(tok(process.env.LINK_S2));
        await ws.json("hello");
      } else {
        ws = await RawWS.open(WSURL, { Origin: ORIGIN });
      }
      await send(ws);
      await expectClose(ws, code, re, what);
    }
    const ws = await hello(tok(process.env.LINK_S2));
    await ws.json("hello");
    ws.end();
  },
  // a flood of input is taken at the shell's pace, not buffered: the
  // server reads no more than it can pass on, and answers after
  async flood() {
    const ws = await hello(tok(process.env.LINK_S2_FLOOD));
    await ws.json("hello");
    const chunk = Buffer.alloc(60 * 1024, 0x20);
    const end = Date.now() + 8000;
    let sent = 0;
    // not awaited one by one: the socket's buffer fills when vmux web
    // stops reading, which is the point
    while (Date.now() < end && sent < 64 * 1024 * 1024) {
      const w = ws.binary("i", chunk);
      sent += chunk.length;
      if (ws.sock.writableLength > 8 * 1024 * 1024)
        await Promise.race([w, new Promise((r) => setTimeout(r, 100))]);
    }
    const unread = ws.sock.writableLength;
    console.log(`figure: input flood: ${(sent / 1048576).toFixed(0)} MiB offered, ` +
      `${(unread / 1048576).toFixed(1)} MiB still unread by the server`);
    // had vmux web read ahead of the shell, all 64 MiB would have gone in
    // and nothing would wait unread: it reads at the shell's pace
    assert(sent < 64 * 1024 * 1024 && unread >= 2 * 1024 * 1024,
      `${(sent / 1048576).toFixed(0)} MiB taken, ${(unread / 1048576).toFixed(1)} MiB unread: ` +
      "vmux web read ahead of the shell");
    ws.end();
    const again = await hello(tok(process.env.LINK_S2_FLOOD));
    await again.json("hello");
    await again.binary("i", "\x03"); // the spaces the line kept: gone
    again.end();
  },
  // hostile agents (tests/e2e/65-hostile.sh): a RESIZE of 65535x65535
  // reaches the page as a size a page can draw, and the text after it
  async "hostile-size"() {
    const ws = await hello(tok(process.env.LINK_HSIZE));
    await ws.json("hello");
    const r = await ws.json("resize");
    assert(r.cols <= 4096 && r.rows <= 4096, `resize ${JSON.stringify(r)}`);
    let text = "";
    while (!text.includes("hostile-still-alive")) {
      const m = await ws.next();
      assert(m !== null, "closed before the text");
      if (m[0] === 0x6f) text += m.subarray(9).toString();
    }
    ws.end();
  },
  // a frame of 4 GiB and a flood after it: the page is closed at once and
  // nothing of it is kept
  async "hostile-frame"() {
    const ws = await hello(tok(process.env.LINK_HFRAME));
    await ws.json("hello").catch(() => {});
    await expectClose(ws, 4010, /broken/, "a 4 GiB frame");
  },
  // an attach ERROR full of escapes is a notice without them
  async "hostile-error"() {
    const ws = await hello(tok(process.env.LINK_H));
    const n = await ws.json("notice");
    assert(!/[\x00-\x1f\x7f-\x9f]/.test(n.text), `notice keeps control characters: ${JSON.stringify(n.text)}`);
    ws.end();
  },
};

try {
  await scenarios[scenario]();
  process.exit(0);
} catch (e) {
  console.log(`${scenario}: ${e.message}`);
  process.exit(1);
}
