// client.mjs: drives `vmux mcp` with the official MCP TypeScript SDK client
// for tests/e2e/47-mcp.sh. One scenario a run: `node client.mjs SCENARIO
// [ARG...]`; it exits 0 when every assertion held, else prints what did not
// and exits 1. The server is started over stdio (VMUX_MCP_ARGS: its flags)
// or reached over HTTP when VMUX_MCP_URL is set.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { randomBytes } from "node:crypto";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";

const VMUX = process.env.VMUX;
const [scenario, ...rest] = process.argv.slice(2);

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function connect() {
  const client = new Client({ name: "vmux-e2e", version: "1.0.0" });
  let transport;
  if (process.env.VMUX_MCP_URL) {
    const headers = {};
    if (process.env.VMUX_MCP_TOKEN)
      headers.Authorization = `Bearer ${process.env.VMUX_MCP_TOKEN}`;
    transport = new StreamableHTTPClientTransport(new URL(process.env.VMUX_MCP_URL), {
      requestInit: { headers },
    });
  } else {
    const args = ["mcp", ...(process.env.VMUX_MCP_ARGS || "").split(" ").filter(Boolean)];
    transport = new StdioClientTransport({
      command: VMUX,
      args,
      env: { ...process.env },
      stderr: "inherit",
    });
  }
  await client.connect(transport);
  // the output schemas are checked by the SDK once it has listed the tools
  await client.listTools();
  return client;
}

// Call a tool; the result (isError included).
async function call(client, name, args, opts = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 300000, ...opts });
}

// Call a tool that must succeed: its structuredContent.
async function ok(client, name, args, opts) {
  const r = await call(client, name, args, opts);
  assert(!r.isError, `${name} failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

// Call a tool that must fail: its one sentence.
async function err(client, name, args) {
  const r = await call(client, name, args);
  assert(r.isError === true, `${name} should have failed: ${JSON.stringify(r)}`);
  assert(r.content.length === 1 && r.content[0].type === "text", `${name}: one text`);
  return r.content[0].text;
}

// shell_read until the output matches re (the shell prints at its pace).
async function readUntil(client, session, shell, re, plain = false) {
  const deadline = Date.now() + 60000;
  let last = "";
  while (Date.now() < deadline) {
    const r = await ok(client, "shell_read", {
      session, shell_id: shell, plain, wait_for_idle_ms: 300, timeout_s: 10,
    });
    last = plain ? r.screen : r.output;
    if (re.test(last)) return r;
  }
  throw new Error(`no ${re} in the shell: ${JSON.stringify(last.slice(-600))}`);
}

// How many `sleep 600` run in the guest (not counting the sh -c above it).
const RUNNING_SLEEP = "ps -o args | grep -c '^[s]leep 600' || true";

const scenarios = {
  // initialize negotiated a version we speak; every tool has both schemas
  async tools(client) {
    const v = client.getServerVersion();
    assert(v.name === "vmux", `server name ${v.name}`);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    for (const want of ["session_create", "session_list", "session_status", "session_stop",
      "session_start", "session_remove", "exec", "shell_open", "shell_write", "shell_read",
      "shell_signal", "shell_resize", "shell_close", "shell_list", "file_read",
      "file_write", "file_list", "copy_in", "copy_out", "logs", "check",
      "session_pause", "session_resume", "session_fork"])
      assert(names.includes(want), `no tool ${want}`);
    for (const t of tools) {
      assert(t.inputSchema.type === "object", `${t.name}: inputSchema`);
      assert(t.outputSchema && t.outputSchema.type === "object", `${t.name}: outputSchema`);
      assert(t.description.length > 10, `${t.name}: description`);
    }
    console.log(`${tools.length} tools`);
  },

  async create(client, name) {
    const s = await ok(client, "session_create", { name, memory_mb: 256 });
    assert(s.name === name, `created ${JSON.stringify(s)}`);
    assert(s.labels && s.labels["vmux.mcp"] === "agent", `label ${JSON.stringify(s.labels)}`);
    const { sessions } = await ok(client, "session_list", {});
    assert(sessions.map((x) => x.name).join() === name, `list: ${sessions.map((x) => x.name)}`);
    const st = await ok(client, "session_status", { session: name });
    assert(st.state === "running", `state ${st.state}`);
  },

  // a session the server did not make is not there for it
  async invisible(client, mine, other) {
    const { sessions } = await ok(client, "session_list", {});
    assert(!sessions.some((x) => x.name === other), "another's session listed");
    for (const [tool, args] of [["exec", { session: other, command: "true" }],
      ["session_status", { session: other }], ["session_remove", { session: other }],
      ["shell_open", { session: other }], ["file_read", { session: other, path: "/etc/hostname" }]]) {
      const m = await err(client, tool, args);
      assert(m === `no session named '${other}'`, `${tool}: ${m}`);
    }
    const r = await ok(client, "check", { script: "#!/bin/sh\nhostname\n" });
    assert(r.results.length === 1 && r.results[0].session === mine,
      `check ran in ${JSON.stringify(r.results.map((x) => x.session))}`);
  },

  // 1 MiB of output comes back cut, head and tail, with the count
  async bigexec(client, s) {
    const r = await ok(client, "exec", {
      session: s, command: "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo END",
    });
    assert(r.exit_code === 0, `exit ${r.exit_code}`);
    assert(r.stdout.length <= 65536, `kept ${r.stdout.length}`);
    assert(r.stdout.startsWith("xxxxxxxx"), "head kept");
    assert(r.stdout.endsWith("xxxx\nEND\n"), `tail kept: ${r.stdout.slice(-20)}`);
    const m = /\[\.\.\. (\d+) bytes truncated \.\.\.\]/.exec(r.stdout);
    assert(m, "a notice in the middle");
    assert(r.stdout_truncated === true && r.stdout_bytes === 1048581, `bytes ${r.stdout_bytes}`);
    const kept = r.stdout.length - m[0].length - 2;
    assert(kept + Number(m[1]) === 1048581, `kept ${kept} + dropped ${m[1]}`);
    // argv, stdin, cwd and env reach the command; exit codes pass through
    const a = await ok(client, "exec", {
      session: s, command: ["sh", "-c", 'read x; echo "$x $FOO $(pwd)"; exit 7'],
      stdin: "in\n", cwd: "/tmp", env: { FOO: "bar" },
    });
    assert(a.exit_code === 7 && a.stdout === "in bar /tmp\n", JSON.stringify(a));
    // the server's environment (a host secret in it) reaches no guest
    assert(process.env.MCP_CANARY, "MCP_CANARY is not set (the test sets it)");
    const e = await ok(client, "exec", { session: s, command: "env; cat /proc/1/environ | tr '\\0' '\\n'" });
    assert(e.stdout.includes("PATH=") && !e.stdout.includes(process.env.MCP_CANARY),
      "the host's environment reached the guest");
    const t = await call(client, "exec", { session: s, command: "sleep 30", timeout_s: 1 });
    assert(t.isError && /timed out/.test(t.content[0].text), JSON.stringify(t));
  },

  // a shell keeps its state between calls and clients
  async shell(client, s, phase) {
    if (phase === "open") {
      const o = await ok(client, "shell_open", { session: s, shell_id: "work", cols: 100, rows: 30 });
      assert(o.shell_id === "work", JSON.stringify(o));
      await ok(client, "shell_write", { session: s, shell_id: "work", text: "cd /tmp && mkdir -p kept", enter: true });
      await readUntil(client, s, "work", /\/tmp # /);
      return;
    }
    await ok(client, "shell_write", { session: s, shell_id: "work", text: "pwd; echo x$((6*7))", enter: true });
    const r = await readUntil(client, s, "work", /\/tmp\r?\n.*x42/, true);
    assert(!/\x1b/.test(r.screen), "no escapes in plain");
    assert(r.screen.split("\n").some((l) => l === "/tmp"), `screen: ${r.screen}`);
    // a running sleep ends with C-c, and the shell goes on
    await ok(client, "shell_write", { session: s, shell_id: "work", text: "sleep 300", enter: true });
    // the sleep runs (its echo alone would be on screen before it forks)
    for (const end = Date.now() + 30000; ;) {
      const ps = await ok(client, "exec", { session: s, command: "ps | grep -c '[s]leep 300' || true" });
      if (ps.stdout.trim() === "1") break;
      assert(Date.now() < end, "the sleep never started");
    }
    await ok(client, "shell_write", { session: s, shell_id: "work", keys: ["C-c"] });
    await ok(client, "shell_write", { session: s, shell_id: "work", text: "echo after-$((1+1))", enter: true });
    await readUntil(client, s, "work", /after-2/);
    const ps = await ok(client, "exec", { session: s, command: "ps | grep -c '[s]leep 300' || true" });
    assert(ps.stdout.trim() === "0", `sleep still runs: ${ps.stdout}`);
    const list = await ok(client, "shell_list", { session: s });
    assert(list.shells.some((x) => x.shell_id === "work"), JSON.stringify(list));
    const e = await err(client, "shell_write", { session: s, shell_id: "work", keys: ["Hyper-Q"] });
    assert(/unknown key/.test(e), e);
  },

  // binary files, byte-exact both ways, and through copy_in/out
  async files(client, s, dir) {
    const data = randomBytes(200000);
    data[0] = 0; data[1] = 0xff;
    const w = await ok(client, "file_write", {
      session: s, path: "/workspace/bin/blob", content: data.toString("base64"),
      encoding: "base64", make_dirs: true,
    });
    assert(w.bytes === data.length, JSON.stringify(w));
    const r = await ok(client, "file_read", { session: s, path: "/workspace/bin/blob", encoding: "base64" });
    assert(Buffer.from(r.content, "base64").equals(data), "read back differs");
    const m = await err(client, "file_read", { session: s, path: "/workspace/bin/blob" });
    assert(/not UTF-8 text/.test(m), m);
    const t = await ok(client, "file_read", { session: s, path: "/etc/hostname" });
    assert(t.content.trim() === s, `hostname ${t.content}`);
    const nf = await err(client, "file_read", { session: s, path: "/nope/x" });
    assert(/No such file/.test(nf), nf);
    const l = await ok(client, "file_list", { session: s, path: "/workspace/bin" });
    assert(l.entries.length === 1 && l.entries[0].name === "blob" &&
      l.entries[0].size === data.length && l.entries[0].type === "file", JSON.stringify(l));
    writeFileSync(`${dir}/up.bin`, data);
    await ok(client, "copy_in", { session: s, host_path: `${dir}/up.bin`, guest_path: "/workspace/up.bin" });
    await ok(client, "copy_out", { session: s, guest_path: "/workspace/up.bin", host_path: `${dir}/down.bin` });
    assert(readFileSync(`${dir}/down.bin`).equals(data), "copy round trip differs");
    const out = await err(client, "copy_in", { session: s, host_path: "/etc/passwd", guest_path: "/workspace/p" });
    assert(/outside the folders/.test(out), out);
    const dotdot = await err(client, "copy_out", { session: s, guest_path: "/etc/passwd", host_path: `${dir}/../stolen` });
    assert(/outside the folders/.test(dotdot), dotdot);
    // a link inside the folder is refused too: named as it is, or not at all
    symlinkSync(".", `${dir}/self`);
    const link = await err(client, "copy_in", { session: s, host_path: `${dir}/self/up.bin`, guest_path: "/workspace/l" });
    assert(/goes through a symlink/.test(link), link);
    // an agent's mounts are read-only; its images are names, not host paths
    const rw = await err(client, "session_create", { name: "rw", mounts: [{ host: dir, guest: "/mnt", read_only: false }] });
    assert(/read-only/.test(rw), rw);
    const img = await err(client, "session_create", { name: "img", image: "/etc" });
    assert(/no guest image named/.test(img), img);
  },

  // cancelling a long exec ends it in the guest
  async cancel(client, s) {
    const ac = new AbortController();
    const p = call(client, "exec", { session: s, command: "sleep 600; echo never" }, { signal: ac.signal });
    // wait until it runs in the guest, then cancel
    const deadline = Date.now() + 30000;
    for (;;) {
      const ps = await ok(client, "exec", { session: s, command: RUNNING_SLEEP });
      if (ps.stdout.trim() === "1") break;
      assert(Date.now() < deadline, "the sleep never started");
    }
    ac.abort();
    let rejected = false;
    try { await p; } catch { rejected = true; }
    assert(rejected, "the cancelled call resolved");
    for (;;) {
      const ps = await ok(client, "exec", { session: s, command: RUNNING_SLEEP });
      if (ps.stdout.trim() === "0") break;
      assert(Date.now() < deadline + 30000, "the command still runs after cancel");
      await new Promise((r) => setTimeout(r, 200));
    }
  },

  // output arrives as progress while the command runs
  async progress(client, s) {
    const notes = [];
    const r = await ok(client, "exec", {
      session: s, command: "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.4; done",
    }, { onprogress: (p) => notes.push(p) });
    assert(r.stdout.includes("line6"), r.stdout);
    assert(notes.length >= 2, `${notes.length} progress notifications`);
    assert(notes.some((n) => /line\d/.test(n.message || "")), JSON.stringify(notes));
    for (let i = 1; i < notes.length; i++)
      assert(notes[i].progress > notes[i - 1].progress, "progress increases");
    console.log(`${notes.length} progress notifications`);
  },

  // bad arguments are the tool's errors, one sentence each
  async badargs(client, s) {
    const cases = [
      ["exec", { session: s }, /"command"/],
      ["exec", { session: s, command: 42 }, /"command"/],
      ["exec", { session: s, command: "true", timeout_s: -1 }, /timeout_s/],
      ["exec", { command: "true" }, /missing argument "session"/],
      ["exec", { session: "../x", command: "true" }, /name/],
      ["shell_read", { session: s, shell_id: "no such!" }, /shell id/],
      ["shell_read", { session: s, shell_id: "nosuch" }, /no shell/],
      ["file_write", { session: s, path: "rel", content: "x" }, /absolute/],
      ["file_write", { session: s, path: "/x", content: "@@", encoding: "base64" }, /not base64/],
      ["session_create", { name: "a b" }, /name/],
      ["shell_signal", { session: s, shell_id: "work", signal: "BOGUS" }, /signal/],
    ];
    for (const [tool, args, re] of cases) {
      const m = await err(client, tool, args);
      assert(re.test(m), `${tool} ${JSON.stringify(args)}: ${m}`);
    }
    let code;
    try { await client.callTool({ name: "no_such_tool", arguments: {} }); } catch (e) { code = e.code; }
    assert(code === -32602, `unknown tool: ${code}`);
  },

  // a guest printing escapes, bad UTF-8 and NUL reaches the client as valid JSON
  async hostile(client, s) {
    const r = await ok(client, "exec", {
      session: s,
      command: "printf '\\033]0;pwned\\007\\033[2J\\377\\376ok\\000end'; head -c 300000 /dev/urandom",
      max_output_bytes: 4096,
    });
    assert(typeof r.stdout_base64 === "string", "bytes that are not UTF-8 come as base64");
    const raw = Buffer.from(r.stdout_base64, "base64");
    assert(raw.length <= 4096, `kept ${raw.length}`);
    assert(raw.subarray(0, 4).equals(Buffer.from("\x1b]0;")), "bytes exact");
    await ok(client, "shell_open", { session: s, shell_id: "hostile" });
    await ok(client, "shell_write", {
      session: s, shell_id: "hostile",
      text: "printf '\\033]0;pwned\\007\\377\\376 %s\\n' mark-$((2*3)); head -c 200000 /dev/urandom | od | head -2000; echo done-$((3*3))", enter: true,
    });
    const o = await readUntil(client, s, "hostile", /\uFFFD\uFFFD mark-6/);
    assert(typeof o.output === "string", "output is a string");
    const p = await readUntil(client, s, "hostile", /done-9/, true);
    assert(!/[\x00-\x08\x0b-\x1f\x7f]/.test(p.screen), "no controls on the plain screen");
    await ok(client, "shell_close", { session: s, shell_id: "hostile" });
  },

  // a person took the keyboard: writes fail until it is handed back
  async taken(client, s, shell, want) {
    const r = await call(client, "shell_write", { session: s, shell_id: shell, text: `echo agent-${want}`, enter: true });
    if (want === "refused") {
      assert(r.isError && /taken the keyboard/.test(r.content[0].text), JSON.stringify(r));
    } else {
      assert(!r.isError, JSON.stringify(r));
    }
  },

  async write(client, s, shell, text) {
    await ok(client, "shell_write", { session: s, shell_id: shell, text, enter: true });
  },

  async stopstart(client, s) {
    await ok(client, "file_write", { session: s, path: "/workspace/keep.txt", content: "kept\n" });
    await ok(client, "session_stop", { session: s });
    const st = await ok(client, "session_status", { session: s });
    assert(st.state === "stopped", st.state);
    const e = await err(client, "exec", { session: s, command: "true" });
    assert(/stopped|not running/.test(e), e);
    await ok(client, "session_start", { session: s });
    const r = await ok(client, "file_read", { session: s, path: "/workspace/keep.txt" });
    assert(r.content === "kept\n", r.content);
    const logs = await ok(client, "logs", { session: s, lines: 50 });
    assert(/vmux-init/.test(logs.text), "console log");
  },

  // pause keeps memory; any call resumes; a fork tries another way
  async pausefork(client, s) {
    await ok(client, "exec", { session: s, command: "echo in-memory >/tmp/state; echo disk >/workspace/who" });
    await ok(client, "session_pause", { session: s });
    const st = await ok(client, "session_status", { session: s });
    assert(st.state === "paused", st.state);
    const r = await ok(client, "exec", { session: s, command: "cat /tmp/state" });
    assert(r.stdout === "in-memory\n", JSON.stringify(r));
    const f = await ok(client, "session_fork", { session: s, name: `${s}-try` });
    assert(f.children[0].name === `${s}-try` && f.children[0].ready_ms >= 0, JSON.stringify(f));
    await ok(client, "exec", { session: `${s}-try`, command: "echo other >/workspace/who" });
    const mine = await ok(client, "exec", { session: s, command: "cat /tmp/state /workspace/who" });
    assert(mine.stdout === "in-memory\ndisk\n", mine.stdout);
    const theirs = await ok(client, "exec", { session: `${s}-try`, command: "cat /tmp/state /workspace/who" });
    assert(theirs.stdout === "in-memory\nother\n", theirs.stdout);
    const { sessions } = await ok(client, "session_list", {});
    assert(sessions.some((x) => x.name === `${s}-try`), "the fork is not this server's");
    await ok(client, "session_pause", { session: s });
    await ok(client, "session_resume", { session: s });
    await ok(client, "session_remove", { session: `${s}-try` });
  },

  async limit(client) {
    const pr = await err(client, "session_create", { name: "other-profile", profile: "network_extended" });
    assert(/under profile 'offline_readonly' only/.test(pr), pr);
    const m = await err(client, "session_create", { name: "toomany" });
    assert(/at most 1 sessions/.test(m), m);
    const n = await err(client, "session_create", { name: "withnet", net: true });
    assert(/network/.test(n), n);
  },

  // --no-net holds whatever the profile says
  async nonet(client) {
    const m = await err(client, "session_create", { name: "netted", profile: "network_basic" });
    assert(/may not have a network.*the profile gives one/.test(m), m);
  },

  async remove(client, s) {
    await ok(client, "session_remove", { session: s });
    const { sessions } = await ok(client, "session_list", {});
    assert(!sessions.some((x) => x.name === s), "still listed");
  },
};

const fn = scenarios[scenario];
if (!fn) {
  console.error(`no scenario ${scenario}`);
  process.exit(2);
}
let client;
try {
  client = await connect();
  await fn(client, ...rest);
  await client.close();
  process.exit(0);
} catch (e) {
  console.error(`${scenario}: ${e.stack || e}`);
  try { await client?.close(); } catch { /* gone */ }
  process.exit(1);
}
