// browser.mjs: vmux web's pages in a real Chromium (Debian's, driven by
// puppeteer-core) for tests/e2e/49-web.sh: `node browser.mjs SCENARIO`,
// exit 0 when every assertion held. The screen is read from xterm.js's
// own buffer. WEB is the server's base URL; LINK_S1 and LINK_S1_RO are
// read-write and read-only links to s1's shell, LINK_S1_REVOKE one the
// test revokes, LINK_S2 a link to s2, WALL the teacher's link; SHOTS, if
// set, is where the screenshots go.
import puppeteer from "puppeteer-core";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";

const env = process.env;
const [scenario] = process.argv.slice(2);

function assert(cond, msg) { if (!cond) throw new Error(msg); }

// a page's uncaught exception fails the scenario, not only the log
const pageErrors = [];

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  protocolTimeout: 60000,
  acceptInsecureCerts: true, // the HTTPS check's throwaway certificate
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update",
    // several pages at once: none is throttled as a background tab
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows"],
});

async function open(link, size = { width: 1000, height: 600 }) {
  const page = await browser.newPage();
  await page.setViewport(size);
  page.on("pageerror", (e) => {
    console.log("page error:", e.message);
    pageErrors.push(e.message);
  });
  await page.goto(link);
  return page;
}

// the lines of a terminal's buffer (the page's own, or a tile's)
function lines(page, which = "window.vmuxTerm") {
  return page.evaluate((w) => {
    const t = eval(w);
    if (!t) return [];
    const b = t.term.buffer.active, out = [];
    for (let i = 0; i < b.length; i++) out.push(b.getLine(i).translateToString(true));
    return out;
  }, which);
}

// wait until a line of the terminal matches re
async function waitLine(page, re, what, which = "window.vmuxTerm", ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const l = await lines(page, which);
    if (l.some((x) => re.test(x))) return l;
    if (Date.now() > end)
      throw new Error(`${what}: no line matching /${re.source}/ in:\n${l.filter(Boolean).slice(-12).join("\n")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitStatus(page, re, what, sel = "#status", ms = 30000) {
  try {
    await page.waitForFunction((s, src) => new RegExp(src).test(document.querySelector(s).textContent),
      { timeout: ms, polling: 100 }, sel, re.source);
  } catch {
    const t = await page.$eval(sel, (e) => e.textContent);
    throw new Error(`${what}: status '${t}', want /${re.source}/`);
  }
}

// connected, and the shell at a prompt (it may have been opened just now)
async function ready(page) {
  await waitStatus(page, /^connected$/, "connect");
  await page.keyboard.type("\n");
  await waitLine(page, /# $/, "a prompt");
}

function step(what) { if (env.STEPS) console.log("step:", what); }

async function run(page, cmd) {
  await page.keyboard.type(cmd + "\n");
}

const scenarios = {
  async type() {
    const p = await open(env.LINK_S1);
    await ready(p);
    await run(p, "echo $((6*7))");
    await waitLine(p, /^42$/, "the answer");
    const title = await p.title();
    assert(/^s1/.test(title), `title '${title}'`);
    // the token is not left in the address bar
    assert(!p.url().includes("#"), `the address keeps the token: ${p.url()}`);
  },

  async readonly() {
    const rw = await open(env.LINK_S1), ro = await open(env.LINK_S1_RO);
    await ready(rw);
    await waitStatus(ro, /^connected$/, "read-only connect");
    await run(rw, "echo shared-$((40+2))");
    await waitLine(ro, /^shared-42$/, "the watcher sees it");
    // who else is attached: the watcher is listed on the writer's page
    await rw.waitForFunction(() => /with /.test(document.title), { timeout: 10000 }).catch(() => {});
    assert(/with /.test(await rw.title()), `writer's title '${await rw.title()}' names no one else`);
    assert(/read-only/.test(await ro.$eval("#name", (e) => e.textContent)), "the watcher's bar says read-only");
    // keys typed on the page go nowhere, and bytes sent past the page's
    // own guard are dropped by the server too
    await ro.keyboard.type("echo ro-typed\n");
    await ro.evaluate(() => window.vmuxTerm.sendBytes("i", new TextEncoder().encode("echo ro-sneaked\r")));
    await ro.evaluate(() => window.vmuxTerm.sendBytes("r", new TextEncoder().encode('{"cols":20,"rows":5}')));
    await run(rw, "echo after-$((1+1)); stty size");
    const l = await waitLine(rw, /^after-2$/, "the writer goes on");
    assert(!l.some((x) => /ro-typed|ro-sneaked/.test(x)), "the read-only page's keys arrived");
    const size = await waitLine(rw, /^\d+ \d+$/, "stty size");
    const [rows, cols] = size.filter((x) => /^\d+ \d+$/.test(x)).pop().split(" ").map(Number);
    assert(cols !== 20 && rows !== 5, "the read-only page resized the shell");
  },

  async resize() {
    const p = await open(env.LINK_S1, { width: 900, height: 500 });
    await ready(p);
    for (const vp of [{ width: 900, height: 500 }, { width: 1300, height: 760 }]) {
      await p.setViewport(vp);
      // the page's resize event has fitted the terminal to the window
      await p.waitForFunction((w) => {
        const t = window.vmuxTerm, d = t.fitter.proposeDimensions();
        return window.innerWidth === w && d && t.term.cols === d.cols && t.term.rows === d.rows;
      }, { polling: 100 }, vp.width);
      const { cols, rows } = await p.evaluate(() => ({ cols: window.vmuxTerm.term.cols, rows: window.vmuxTerm.term.rows }));
      await p.keyboard.type("clear; stty size\n");
      await waitLine(p, new RegExp(`^${rows} ${cols}$`), `stty size at ${vp.width}x${vp.height}`);
    }
  },

  async reload() {
    const p = await open(env.LINK_S1);
    await ready(p);
    await run(p, "echo reload-mark-$((3*3))");
    await waitLine(p, /^reload-mark-9$/, "before the reload");
    await p.reload();
    await waitStatus(p, /^connected$/, "reconnect after reload");
    await waitLine(p, /^reload-mark-9$/, "the scrollback after the reload");
    // a network drop: the page reconnects and shows what it missed (held
    // away until the output is in the shell, so it is replayed, not live)
    await p.evaluate(() => { const t = window.vmuxTerm; t.closed = true; t.ws.onclose = null; t.ws.close(); });
    execFileSync(env.VMUX, ["send-keys", "s1", "main", "echo missed-$((4+4))", "Enter"]);
    for (let i = 0; ; i++) {
      const screen = execFileSync(env.VMUX, ["capture", "s1", "main"]).toString();
      if (/^missed-8$/m.test(screen)) break;
      assert(i < 100, "the shell never ran the line typed while the page was away");
      await new Promise((r) => setTimeout(r, 100));
    }
    await p.evaluate(() => { const t = window.vmuxTerm; t.closed = false; t.onclose({ code: 1006, reason: "" }); });
    await waitLine(p, /^missed-8$/, "output missed while away");
    await waitStatus(p, /^connected$/, "reconnected");
    const l = await lines(p);
    assert(l.filter((x) => x === "reload-mark-9").length === 1, "output repeated after the reconnect");
  },

  async revoke() {
    const keep = await open(env.LINK_S1), gone = await open(env.LINK_S1_REVOKE);
    await waitStatus(keep, /^connected$/, "connect");
    await waitStatus(gone, /^connected$/, "connect the link to revoke");
    const token = env.LINK_S1_REVOKE.slice(env.LINK_S1_REVOKE.indexOf("#") + 1);
    const id = createHash("sha256").update(token).digest("hex").slice(0, 12);
    const t0 = Date.now();
    execFileSync(env.VMUX, ["revoke", "s1", "--web", "--id", id]);
    await waitStatus(gone, /revoked/, "the revoked page", "#status", 3000);
    console.log(`figure: revoke to the page's close: ${Date.now() - t0} ms`);
    // it does not come back, and the other link is untouched
    await gone.reload();
    await waitStatus(gone, /not valid/, "the revoked link after a reload", "#status", 5000);
    assert(await keep.$eval("#status", (e) => e.textContent) === "connected", "another link was closed");
  },

  async wall() {
    step("open");
    const wall = await open(env.WALL, { width: 1400, height: 900 });
    const student = await open(env.LINK_S1);
    await ready(student);
    await wall.waitForFunction(() => document.querySelectorAll(".tile").length === 2, { timeout: 20000 });
    const names = await wall.$$eval(".tile", (ts) => ts.map((t) => t.dataset.session));
    assert(names.join() === "s1,s2", `tiles ${names}`);
    step("tiles");
    // a tile is live
    await run(student, "echo tile-live-$((5*5))");
    await waitLine(wall, /tile-live-25/, "s1's tile", 'window.vmuxWall.tiles.get("s1").term');
    step("live");
    // filter and sort as the TUI's wall
    await wall.type("#filter", "s2");
    await waitStatus(wall, /^1 of 2 shown$/, "filter", "#count");
    await wall.$eval("#filter", (e) => { e.value = ""; e.dispatchEvent(new Event("input")); });
    await waitStatus(wall, /^2 of 2 shown$/, "filter cleared", "#count");
    step("filtered");
    // zoom, take the keyboard: the student's keys do not arrive
    await wall.bringToFront(); // a click needs the page drawn
    await wall.click('.tile[data-session="s1"]');
    await waitStatus(wall, /^connected$/, "the zoomed terminal", "#zstatus");
    step("zoomed");
    await wall.click("#take");
    await wall.waitForSelector("#give:not([hidden])", { timeout: 10000 });
    await waitStatus(student, /teacher \(typing\)/, "the student sees who types", "#who", 10000);
    step("taken");
    await run(student, "echo student-blocked");
    await wall.keyboard.type("echo teacher-$((2*21))\n");
    await waitLine(student, /^teacher-42$/, "the teacher's line on the student's page");
    // hand it back: the student types again
    await wall.click("#give");
    await wall.waitForSelector("#take:not([hidden])", { timeout: 10000 });
    await run(student, "echo student-back");
    const l = await waitLine(student, /^student-back$/, "the student's keys after the hand-back");
    assert(!l.some((x) => /student-blocked/.test(x)), "the student's keys arrived during the takeover");
    await wall.click("#unzoom");
    step("given back");
    // broadcast a line to the shown tiles
    await wall.type("#line", "echo broadcast-$((1+1))");
    await wall.click("#broadcast button");
    await waitLine(wall, /^broadcast-2$/, "s1's tile after broadcast", 'window.vmuxWall.tiles.get("s1").term');
    await waitLine(wall, /^broadcast-2$/, "s2's tile after broadcast", 'window.vmuxWall.tiles.get("s2").term');
    step("broadcast");
    // check: the server's script on the shown tiles; results on the tiles
    await wall.click("#check");
    await wall.waitForFunction(() => [...document.querySelectorAll(".tile .check")].every((c) => /^pass/.test(c.textContent)),
      { timeout: 60000, polling: 200 }).catch(async () => {
      throw new Error("check results: " + await wall.$$eval(".tile .check", (cs) => cs.map((c) => c.textContent).join(" | ")));
    });
  },

  // a hostile guest: escapes and invalid UTF-8 through the page, then a
  // flood; the page stays usable and shows what was skipped, if anything
  async hostile() {
    const p = await open(env.LINK_S2);
    await ready(p);
    // the page answers a cursor report as a terminal does: read the answer
    // raw with echo off, or it races the next line onto the screen as input
    await run(p, "printf '\\033]0;evil\\007\\033[?1049h\\377\\376bad\\300\\033[?1049l\\n'; " +
      "stty -echo -icanon; printf '\\033[6n'; read -r -t 10 -d R cpr; stty echo icanon; echo alive-$((2+3)) cpr-${cpr#??}");
    await waitLine(p, /^alive-5 cpr-\d+;\d+$/, "after escapes and invalid UTF-8, a cursor report answered");
    const t0 = Date.now();
    await run(p, "head -c " + (env.FLOOD || 4194304) + " /dev/zero | tr '\\0' x; echo; echo flood-$((6+6))");
    await waitLine(p, /^flood-12$/, "after the flood", "window.vmuxTerm", 300000);
    console.log(`figure: flood through the page: ${Date.now() - t0} ms`);
    await run(p, "echo still-$((7*6))");
    await waitLine(p, /^still-42$/, "keys after the flood");
  },

  // the VM stops under the page: it says so and waits; the VM starts
  // again: the page comes back by itself, on the new shell, and says so
  // a pause under the page: its reattach wakes the session, and the
  // same shell goes on (its variable kept, no new shell started)
  async pause() {
    const p = await open(env.LINK_S3);
    await ready(p);
    await p.evaluate(() => {
      const s = document.querySelector("#status");
      window.seen = [];
      new MutationObserver(() => window.seen.push(s.textContent))
        .observe(s, { childList: true, characterData: true, subtree: true });
    });
    await run(p, "V=kept-$((3*4)); echo set-$((2*3))");
    await waitLine(p, /^set-6$/, "the variable set");
    execFileSync(env.VMUX, ["pause", "s3"]);
    try {
      await p.waitForFunction(() => {
        const i = window.seen.findIndex((t) => /reconnecting/.test(t));
        return i >= 0 && window.seen.slice(i).includes("connected");
      }, { timeout: 60000, polling: 100 });
    } catch {
      throw new Error(`the page never reattached: ${JSON.stringify(await p.evaluate(() => window.seen))}`);
    }
    await run(p, 'echo "V=$V"');
    await waitLine(p, /^V=kept-12$/, "the shell's variable after the resume");
    assert(!(await lines(p)).some((l) => /shell started again/.test(l)), "a new shell was started");
    const s3 = JSON.parse(execFileSync(env.VMUX, ["ls", "--json"])).find((x) => x.name === "s3");
    assert(s3 && s3.state === "running", `s3 is ${s3 && s3.state} after the page woke it`);
  },

  async vmstop() {
    const p = await open(env.LINK_S3);
    await ready(p);
    await run(p, "echo before-stop-$((1+2))");
    await waitLine(p, /^before-stop-3$/, "before the stop");
    execFileSync(env.VMUX, ["stop", "s3"]);
    await waitStatus(p, /went away|stopped|not running/, "the page after the VM stopped", "#status", 30000);
    execFileSync(env.VMUX, ["start", "s3"]);
    await waitStatus(p, /^connected$/, "the page after the VM started again", "#status", 60000);
    await waitLine(p, /shell started again/, "the restart's marker");
    await p.keyboard.type("\n");
    await run(p, "echo after-start-$((2+2))");
    await waitLine(p, /^after-start-4$/, "typing after the restart");
  },

  async shots() {
    const student = await open(env.LINK_S1, { width: 900, height: 520 });
    await ready(student);
    await run(student, "clear; uname -sr; echo $((6*7)); ls /; cat /etc/hostname");
    await waitLine(student, /^42$/, "the shot's output");
    await student.screenshot({ path: `${env.SHOTS}/web-shell.png` });
    const wall = await open(env.WALL, { width: 1000, height: 420 });
    await wall.waitForFunction(() => document.querySelectorAll(".tile").length === 2, { timeout: 20000 });
    await waitLine(wall, /^42$/, "s1's tile", 'window.vmuxWall.tiles.get("s1").term');
    await wall.screenshot({ path: `${env.SHOTS}/web-wall.png` });
  },
};

let rc = 0;
try {
  await scenarios[scenario]();
  assert(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
} catch (e) {
  console.log(`${scenario}: ${e.message}`);
  rc = 1;
}
await browser.close();
process.exit(rc);
