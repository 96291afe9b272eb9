// protocol.mjs: vmux web's socket refuses what it must, for
// tests/e2e/49-web.sh: `node protocol.mjs SCENARIO`, exit 0 when every
// assertion held. WEB is the server's base URL; LINK_S1, LINK_S2 and
// LINK_EXPIRED are links from vmux grant --web.
import { RawWS } from "./ws.mjs";

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
    ws = await RawWS.open(WSURL, { Origin: ORIGIN });
    assert(ws.status === 101, `the page's own Origin: status ${ws.status}`);
    ws.end();
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
    const ws = await hello(tok(process.env.LINK_S2));
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
    console.log(`figure: input flood: ${(sent / 1048576).toFixed(0)} MiB offered, ` +
      `${(ws.sock.writableLength / 1048576).toFixed(1)} MiB still unread by the server`);
    ws.end();
    const again = await hello(tok(process.env.LINK_S2));
    await again.json("hello");
    await again.binary("i", "\x03"); // the spaces the line kept: gone
    again.end();
  },
};

try {
  await scenarios[scenario]();
  process.exit(0);
} catch (e) {
  console.log(`${scenario}: ${e.message}`);
  process.exit(1);
}
