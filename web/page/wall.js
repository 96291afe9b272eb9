// wall.js: the teacher's wall: a live read-only tile per session of the
// server's selector, sorted and filtered as the TUI's wall is; a click
// zooms one, where the teacher can take the keyboard and hand it back;
// broadcast types a line into every shown tile; check runs the server's
// check script on them. One socket carries the list; each tile is a
// terminal of its own (term.js).
"use strict";

(function () {
  const token = location.hash.slice(1) || sessionStorage.getItem("vmux-wall") || "";
  if (location.hash.length > 1) sessionStorage.setItem("vmux-wall", token);
  history.replaceState(null, "", location.pathname + location.search);
  const $ = (id) => document.getElementById(id);
  const tiles = new Map(); // name -> {el, term, info, last}
  let zoomed = null; // {name, term}
  let retryMs = 500;

  function status(text, kind) { $("status").textContent = text; $("status").className = kind || ""; }
  if (!token) { status("this page needs the wall's link (it ends in #token)", "end"); return; }

  function labelText(info) {
    return Object.entries(info.labels || {}).map(([k, v]) => k + "=" + v).join(" ");
  }

  function shown(t) {
    const f = $("filter").value.trim().toLowerCase();
    return !f || t.info.name.toLowerCase().includes(f) || labelText(t.info).toLowerCase().includes(f);
  }

  function order() {
    const key = $("sort").value;
    const list = [...tiles.values()];
    const by = {
      name: (a, b) => a.info.name.localeCompare(b.info.name),
      state: (a, b) => a.info.state.localeCompare(b.info.state) || by.name(a, b),
      activity: (a, b) => b.last - a.last || by.name(a, b),
      check: (a, b) => ((a.info.check || {}).status || "~").localeCompare((b.info.check || {}).status || "~") || by.name(a, b),
    };
    list.sort(by[key]);
    let n = 0;
    for (const t of list) {
      t.el.hidden = !shown(t);
      if (!t.el.hidden) n++;
      $("tiles").appendChild(t.el);
    }
    $("count").textContent = n + " of " + list.length + " shown";
  }

  function head(t) {
    const i = t.info, c = i.check;
    t.el.querySelector(".name").textContent = i.name;
    t.el.querySelector(".labels").textContent = labelText(i);
    const st = t.el.querySelector(".state");
    st.textContent = i.state;
    st.className = "state " + i.state;
    const ck = t.el.querySelector(".check");
    ck.textContent = c ? c.status + (c.line ? ": " + c.line : "") : "";
    ck.className = "check " + (c ? c.status : "");
  }

  function tile(info) {
    const el = document.createElement("section");
    el.className = "tile";
    el.dataset.session = info.name;
    el.innerHTML = '<div class="thead"><span class="dot"></span><span class="name"></span>' +
      '<span class="state"></span><span class="labels"></span></div><div class="tterm"></div>' +
      '<div class="check"></div>';
    const t = { el, info, last: 0 };
    t.term = new VmuxTerm(el.querySelector(".tterm"), {
      token, session: info.name, readOnly: true, fontSize: 7,
      onOutput() { t.last = Date.now(); el.classList.add("active"); clearTimeout(t.quiet);
        t.quiet = setTimeout(() => el.classList.remove("active"), 2000); },
      onStatus(text, kind) { el.title = text; el.dataset.link = kind; },
    });
    el.addEventListener("click", () => zoom(info.name));
    tiles.set(info.name, t);
    head(t);
    return t;
  }

  function sessions(list) {
    const seen = new Set();
    for (const info of list) {
      seen.add(info.name);
      const t = tiles.get(info.name);
      if (t) { t.info = info; head(t); } else tile(info);
    }
    for (const [name, t] of tiles)
      if (!seen.has(name)) { t.term.close(); t.el.remove(); tiles.delete(name); }
    order();
  }

  function zoom(name) {
    unzoom();
    $("zoom").hidden = false;
    $("zname").textContent = name;
    $("take").hidden = false;
    $("give").hidden = true;
    const term = new VmuxTerm($("zterm"), {
      token, session: name, noResize: true, readOnly: true, fontSize: 15,
      onStatus(text, kind) { $("zstatus").textContent = text; $("zstatus").className = kind; },
      onClients(msg) {
        const others = (msg.clients || []).filter((c) => !c.you).map((c) => c.as + (c.keyboard ? " (typing)" : ""));
        $("zwho").textContent = others.length ? "with " + others.join(", ") : "";
        const mine = (msg.clients || []).some((c) => c.you && c.keyboard);
        $("take").hidden = mine;
        $("give").hidden = !mine;
        term.setReadOnly(!mine); // keys go only while the keyboard is ours
      },
    });
    zoomed = { name, term };
    window.vmuxZoom = term;
  }

  function unzoom() {
    if (!zoomed) return;
    zoomed.term.giveBack();
    zoomed.term.close();
    zoomed = null;
    window.vmuxZoom = null;
    $("zterm").textContent = "";
    $("zoom").hidden = true;
  }

  $("take").addEventListener("click", () => { zoomed.term.take(); zoomed.term.term.focus(); });
  $("give").addEventListener("click", () => zoomed.term.giveBack());
  $("unzoom").addEventListener("click", unzoom);
  $("filter").addEventListener("input", order);
  $("sort").addEventListener("change", order);
  $("broadcast").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const line = $("line").value;
    const bytes = new TextEncoder().encode(line + "\r");
    let n = 0;
    for (const t of tiles.values()) if (!t.el.hidden) { t.term.sendBytes("i", bytes); n++; }
    status("typed into " + n + " tile" + (n === 1 ? "" : "s"), "ok");
    $("line").value = "";
  });

  let wall = null;
  $("check").addEventListener("click", () => {
    const names = [...tiles.values()].filter((t) => !t.el.hidden).map((t) => t.info.name);
    if (!wall || wall.readyState !== WebSocket.OPEN) return;
    const body = new TextEncoder().encode(JSON.stringify({ sessions: names }));
    const m = new Uint8Array(1 + body.length);
    m[0] = 99; // 'c'
    m.set(body, 1);
    wall.send(m);
  });

  function connect() {
    wall = new WebSocket(vmuxSocketURL(), "vmux.v1");
    wall.binaryType = "arraybuffer";
    wall.onopen = () => wall.send(JSON.stringify({ token, wall: true }));
    wall.onmessage = (ev) => {
      const m = new Uint8Array(ev.data);
      if (m[0] !== 106) return; // 'j'
      const msg = JSON.parse(new TextDecoder().decode(m.subarray(1)));
      if (msg.type === "hello") {
        retryMs = 500;
        status("connected" + (msg.selector ? " (" + msg.selector + ")" : ""), "ok");
        $("check").disabled = !msg.check;
      } else if (msg.type === "sessions") sessions(msg.sessions);
      else if (msg.type === "notice") status(msg.text, "info");
    };
    wall.onclose = (ev) => {
      if (ev.code === 1006 || ev.code === 4012) {
        status("the connection dropped: reconnecting...", "warn");
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, 5000);
      } else status(ev.reason || "closed (" + ev.code + ")", "end");
    };
  }
  connect();
  window.vmuxWall = { tiles, zoom, unzoom };
})();
