// bench.mjs: the browser's side of bench/web (make bench): key-to-echo
// through a page, and a flood to one page with the wall open. Debian's
// chromium via puppeteer-core, as the tests.
//   node bench.mjs key LINK N FILE       N keys; each echo's ms appended to FILE
//   node bench.mjs flood FLOOD PROBE WALL BYTES PID
//       BYTES of output in FLOOD's shell with WALL open; meanwhile a key on
//       PROBE (another session) is timed and vmux web's (PID) RSS sampled
import puppeteer from "puppeteer-core";
import { appendFileSync, readFileSync } from "node:fs";

const [mode, ...args] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  protocolTimeout: 600000,
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows"],
});

async function page(link, size = { width: 1000, height: 600 }) {
  const p = await browser.newPage();
  await p.setViewport(size);
  await p.goto(link);
  await p.waitForFunction(() => document.getElementById("status")?.textContent === "connected" ||
    document.querySelectorAll(".tile").length > 0, { timeout: 60000 });
  return p;
}

// time from a key's message sent to the output message carrying its echo
async function hook(p) {
  await p.evaluate(() => {
    const t = window.vmuxTerm, orig = t.message.bind(t);
    window.echoWaiters = [];
    t.message = (m) => {
      orig(m);
      if (m[0] !== 0x6f) return;
      const s = new TextDecoder().decode(m.subarray(9));
      for (const w of window.echoWaiters.splice(0)) w(s);
    };
    window.echoOf = (ch) => new Promise((res, rej) => {
      const t0 = performance.now();
      const want = (s) => (s.includes(ch) ? res(performance.now() - t0) : window.echoWaiters.push(want));
      window.echoWaiters.push(want);
      setTimeout(() => rej(new Error("no echo in 10 s")), 10000);
      window.vmuxTerm.type(ch);
    });
  });
  await p.keyboard.type("\n");
  await new Promise((r) => setTimeout(r, 500));
}

async function key(p) {
  const ms = await p.evaluate(() => window.echoOf("a"));
  await p.evaluate(() => window.echoOf("\b").catch(() => {})); // DEL's echo, untimed
  return ms;
}

const rss = (pid) => Number((readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/) || [0, 0])[1]);

if (mode === "key") {
  const [link, n, file] = args;
  const p = await page(link);
  await hook(p);
  for (let i = 0; i < Number(n); i++) appendFileSync(file, (await key(p)).toFixed(3) + "\n");
} else if (mode === "flood") {
  const [flood, probe, wall, bytes, pid] = args;
  const w = await page(wall, { width: 1600, height: 1000 });
  await w.waitForFunction(() => [...window.vmuxWall.tiles.values()].every((t) => t.el.dataset.link === "ok"),
    { timeout: 120000, polling: 500 });
  const tiles = await w.evaluate(() => window.vmuxWall.tiles.size);
  const f = await page(flood), q = await page(probe);
  await hook(q);
  const before = rss(pid);
  let peak = before;
  const echoes = [];
  await f.keyboard.type(`head -c ${bytes} /dev/zero | tr '\\0' x; echo; echo FLOOD-$((40+2))\n`);
  const t0 = Date.now();
  const done = f.waitForFunction(() => {
    const b = window.vmuxTerm.term.buffer.active;
    for (let i = b.length - 1; i >= Math.max(0, b.length - 10); i--)
      if (b.getLine(i).translateToString(true) === "FLOOD-42") return true;
    return false;
  }, { timeout: 590000, polling: 200 });
  let finished = false;
  done.then(() => { finished = true; });
  while (!finished) {
    echoes.push(await key(q));
    peak = Math.max(peak, rss(pid));
    await new Promise((r) => setTimeout(r, 200));
  }
  await done;
  const ms = Date.now() - t0;
  echoes.sort((a, b) => a - b);
  const med = echoes[Math.floor(echoes.length / 2)], max = echoes[echoes.length - 1];
  console.log(`web flood: ${(bytes / 1048576).toFixed(0)} MiB to one page, the wall's ${tiles} tiles open: ${ms} ms`);
  console.log(`web flood: a key on another session's page meanwhile: median ${med.toFixed(1)} ms, max ${max.toFixed(1)} ms (n=${echoes.length}; target < 100 ms)`);
  console.log(`web flood: vmux web's RSS ${(before / 1024).toFixed(1)} MiB before, ${(peak / 1024).toFixed(1)} MiB at its peak`);
}
await browser.close();
