// shell.js: a student's page: one terminal filling the window, the
// session's name and who else is watching in the bar and the title.
"use strict";

(function () {
  // the token is kept for this tab (a reload keeps working), and taken out
  // of the address bar, the history and anything copied from it
  const token = location.hash.slice(1) || sessionStorage.getItem("vmux-token") || "";
  if (location.hash.length > 1) sessionStorage.setItem("vmux-token", token);
  const bar = { name: document.getElementById("name"),
    who: document.getElementById("who"), status: document.getElementById("status") };
  let session = "vmux", others = "";

  history.replaceState(null, "", location.pathname + location.search);
  if (!token) {
    bar.status.textContent = "this page needs the link you were given (it ends in #token)";
    bar.status.className = "end";
    return;
  }
  function title() {
    document.title = session + (others ? " (with " + others + ")" : "");
    bar.who.textContent = others ? "with " + others : "";
  }
  const t = new VmuxTerm(document.getElementById("term"), {
    token, fit: true, fontSize: 15,
    onStatus(text, kind) { bar.status.textContent = text; bar.status.className = kind; },
    onHello(msg) {
      session = msg.session + (msg.read_only ? " (read-only)" : "");
      bar.name.textContent = session;
      title();
    },
    onClients(msg) {
      const list = (msg.clients || []).filter((c) => !c.you).map((c) =>
        c.as + (c.keyboard ? " (typing)" : c.watching ? " (watching)" : ""));
      others = list.join(", ");
      title();
    },
  });
  window.vmuxTerm = t; // for the tests: the buffer and the socket
  window.addEventListener("resize", () => t.fit());
  t.term.focus();
})();
