// The DevSpace console's only script. It copies the MCP URL and keeps the
// Activity page live over Server-Sent Events. Everything it puts into the
// page is text (textContent): output, command lines and names are
// untrusted and never parsed as markup.
"use strict";
(function () {
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Copy buttons: data-copy names the input whose value is copied.
  for (const b of document.querySelectorAll("button[data-copy]")) {
    b.addEventListener("click", async () => {
      const input = document.getElementById(b.dataset.copy);
      const status = document.getElementById("copy-status");
      try {
        await navigator.clipboard.writeText(input.value);
        if (status) status.textContent = "Copied.";
      } catch (e) {
        input.select();
        if (status) status.textContent = "Select the URL and copy it (Ctrl+C or ⌘C).";
      }
    });
  }

  const commands = document.getElementById("commands");
  const calls = document.getElementById("calls");
  if (!commands || !calls || !window.EventSource) return;
  const csrf = commands.dataset.csrf;
  // Every page and stream of a session is under its place (the body's data-base).
  const base = document.body.dataset.base || "";
  const status = document.getElementById("live-status");
  const tails = new Map(); // command ID → EventSource of its output

  function follow(id, pre) {
    if (tails.has(id)) return;
    const es = new EventSource(base + "/activity/output?id=" + encodeURIComponent(id));
    tails.set(id, es);
    es.addEventListener("output", (ev) => {
      const o = JSON.parse(ev.data);
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = o.Tail;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
      if (o.Done) { es.close(); }
    });
    es.onerror = () => { es.close(); tails.delete(id); };
  }

  function commandItem(c) {
    const li = el("li", "command");
    li.dataset.id = c.ID;
    const line = el("div", "cmdline");
    line.appendChild(el("code", "", c.CommandLine));
    li.appendChild(line);
    const meta = el("div", "meta");
    meta.append(c.Project + " · ");
    meta.appendChild(el("bdi", "", c.Client));
    meta.append(" · grant " + c.Grant + " · started " + c.Age + " ago");
    li.appendChild(meta);
    const pre = el("pre", "output");
    pre.dataset.output = c.ID;
    pre.tabIndex = 0;
    li.appendChild(pre);
    const f = el("form");
    f.method = "post";
    f.action = base + "/activity/interrupt";
    for (const [k, v] of [["csrf", csrf], ["command", c.ID]]) {
      const i = el("input");
      i.type = "hidden"; i.name = k; i.value = v;
      f.appendChild(i);
    }
    const b = el("button", "danger", "Interrupt");
    b.type = "submit";
    f.appendChild(b);
    li.appendChild(f);
    return li;
  }

  function renderCommands(list) {
    const keep = new Set(list.map((c) => c.ID));
    for (const [id, es] of tails) {
      if (!keep.has(id)) { es.close(); tails.delete(id); }
    }
    // Keep the items that stay (their output and focus), add the new ones.
    const have = new Map();
    for (const li of commands.querySelectorAll("li.command")) {
      if (keep.has(li.dataset.id)) have.set(li.dataset.id, li); else li.remove();
    }
    for (const e of commands.querySelectorAll("li.empty")) e.remove();
    for (const c of list) {
      let li = have.get(c.ID);
      if (!li) { li = commandItem(c); commands.appendChild(li); }
      else { li.querySelector(".meta").lastChild.textContent = " · grant " + c.Grant + " · started " + c.Age + " ago"; }
      follow(c.ID, li.querySelector("pre.output"));
    }
    if (list.length === 0) commands.appendChild(el("li", "muted empty", "No command is running."));
  }

  for (const pre of document.querySelectorAll("pre.output")) follow(pre.dataset.output, pre);

  const es = new EventSource(base + "/activity/stream");
  es.onopen = () => { status.textContent = "Live."; };
  es.onerror = () => { status.textContent = "Live updates paused; reload the page to resume."; };
  es.addEventListener("commands", (ev) => renderCommands(JSON.parse(ev.data)));
  es.addEventListener("call", (ev) => {
    const c = JSON.parse(ev.data);
    for (const e of calls.querySelectorAll("li.empty")) e.remove();
    const li = el("li");
    li.appendChild(el("span", "when", c.Age + " ago"));
    li.append(" ");
    li.appendChild(el("code", "", c.Tool));
    li.append(" ");
    li.appendChild(el("span", "code " + (c.Code === "ok" ? "ok" : "bad"), c.Code));
    li.append(" " + c.Duration + " · " + c.Project + " · ");
    li.appendChild(el("bdi", "", c.Client));
    li.append(" · grant " + c.Grant);
    calls.insertBefore(li, calls.firstChild);
    while (calls.children.length > 100) calls.lastChild.remove();
  });
})();
