"use strict";
// Tunesmith live view: polls /api/run/N and redraws when the run changed. Every string from a run
// (code, descriptions: an LLM wrote them) goes on screen through textContent only, never as markup.
(function () {
  const { el, svg, fmt, pm, table, diffBlock, details } = TunesmithDom;  // dom.js, before this script
  const POLL_MS = Number(document.body.dataset.pollMs) || 2000;
  let run = Number(new URLSearchParams(location.search).get("run")) || 0;
  let version = null;
  let data = null;
  let selected = null;
  let timer = null;

  function card(label, value, over) {
    const c = el("div", over ? "card over" : "card");
    c.appendChild(el("b", "", value));
    c.appendChild(el("span", "", label));
    return c;
  }
  function ofCap(value, cap, digits) {
    const v = digits === undefined ? Number(value || 0).toLocaleString("en") : fmt(value || 0, digits);
    return cap === null || cap === undefined ? v : v + " / " + (digits === undefined ? Number(cap).toLocaleString("en") : fmt(cap, digits));
  }

  // -- the parts of the page ------------------------------------------------------------------
  function header() {
    const r = data.run;
    document.getElementById("rundir").textContent = r.dir + (r.name ? " (" + r.name + ")" : "");
    document.getElementById("state").textContent = "state: " + r.state + (r.reason ? " — " + r.reason : "");
    document.querySelectorAll("#runs button").forEach((b) => b.classList.toggle("on", Number(b.dataset.index) === run));
    const box = document.getElementById("summary");
    box.replaceChildren();
    const u = data.usage || {}, caps = data.caps || {};
    const tokens = (u.prompt_tokens || 0) + (u.completion_tokens || 0);
    const best = data.leaderboard.length ? data.leaderboard[0] : null;
    const synth = (r.model || "").startsWith("synth/");  // the offline synthesizer is no LLM
    box.appendChild(card("candidates", r.candidates + (r.budget ? " / " + r.budget : "")));
    box.appendChild(card("best P", best ? fmt(best.score) + pm(best.se) + " (" + best.id + ")" : "–"));
    box.appendChild(card("failed", data.nodes.filter((n) => n.error).length));
    box.appendChild(card(synth ? "synthesizer calls (no LLM)" : "LLM calls", ofCap(u.calls, caps.max_calls),
      caps.max_calls && u.calls >= caps.max_calls));
    box.appendChild(card("tokens", ofCap(tokens, caps.max_tokens), caps.max_tokens && tokens >= caps.max_tokens));
    box.appendChild(card("cost (USD)", "$" + ofCap(u.cost_usd, caps.max_usd, 4), caps.max_usd && u.cost_usd >= caps.max_usd));
    box.appendChild(card("model", r.model || "?"));
  }

  function leaderboard() {
    const box = document.getElementById("leaderboard");
    box.replaceChildren();
    if (!data.leaderboard.length) { box.appendChild(el("p", "empty", "No working candidate yet.")); return; }
    const t = table(["rank", "id", "P ± SE", "runs", "operator", "gen", "description"], [], [true, false, true, true]);
    data.leaderboard.forEach((c, i) => {
      const r = el("tr", "pick" + (c.id === selected ? " selected" : ""));
      r.dataset.id = c.id;
      [i + 1, c.id, fmt(c.score) + pm(c.se), c.runs, c.operator, c.generation, c.description].forEach((v, j) =>
        r.appendChild(el("td", j === 0 || j === 2 || j === 3 ? "num" : j === 6 ? "text" : "", v)));
      r.addEventListener("click", () => select(c.id));
      t.appendChild(r);
    });
    box.appendChild(t);
  }

  function chart(boxId, points, xOf, xLabel) {
    const box = document.getElementById(boxId);
    box.replaceChildren();
    const pts = points.filter((p) => typeof xOf(p) === "number");
    if (!points.some((p) => typeof p.best === "number")) { box.appendChild(el("p", "empty", "No scored candidate yet.")); return; }
    if (!pts.length) { box.appendChild(el("p", "empty", "This run recorded no " + xLabel + ".")); return; }
    const W = 340, H = 170, L = 44, B = 26, T = 8, R = 10;
    const xs = pts.map(xOf), ys = pts.flatMap((p) => [p.best, p.score]).filter((y) => typeof y === "number");
    const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1, y0 = Math.min(...ys), y1 = Math.max(...ys);
    const sx = (x) => L + (W - L - R) * (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5);
    const sy = (y) => T + (H - T - B) * (y1 > y0 ? 1 - (y - y0) / (y1 - y0) : 0.5);
    const s = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": "best P over " + xLabel });
    const axis = svg("g", { class: "axis" });
    axis.appendChild(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B }));
    axis.appendChild(svg("line", { x1: L, y1: T, x2: L, y2: H - B }));
    [[y0, H - B], [y1, T + 8]].forEach(([v, y]) => { const t = svg("text", { x: 2, y: y }); t.textContent = fmt(v, 2); axis.appendChild(t); });
    const xl = svg("text", { x: L, y: H - 6 }); xl.textContent = xLabel + " " + fmt(x0, 0) + " … " + fmt(x1, 0); axis.appendChild(xl);
    s.appendChild(axis);
    for (const p of pts) if (typeof p.score === "number") s.appendChild(svg("circle", { class: "dot", cx: sx(xOf(p)), cy: sy(p.score), r: 2.5 }));
    let d = "", last = null;
    for (const p of pts) {
      if (typeof p.best !== "number") continue;
      const x = sx(xOf(p)), y = sy(p.best);
      d += last === null ? `M${x},${y}` : `L${x},${last}L${x},${y}`;
      last = y;
    }
    s.appendChild(svg("path", { class: "line best-line", d: d }));
    box.appendChild(s);
  }

  function graph() {
    const g = data.graph, root = document.getElementById("graph");
    root.replaceChildren();
    if (!data.nodes.length) { root.appendChild(el("p", "empty", "No candidates yet.")); return; }
    const onPath = new Set(data.run.best_path || []);
    const s = svg("svg", { width: g.width, height: g.height, viewBox: `0 0 ${g.width} ${g.height}`, role: "img", "aria-label": "lineage graph" });
    for (const [gen, y] of g.rows) { const t = svg("text", { x: 6, y: y + 4, class: "gen" }); t.textContent = "gen " + gen; s.appendChild(t); }
    const edges = [];
    for (const n of data.nodes) {
      const [x2, y2] = g.pos[n.id];
      for (const p of n.parents) {
        if (!g.pos[p]) continue;
        const [x1, y1] = g.pos[p], my = (y1 + y2) / 2;
        edges.push(svg("path", { d: `M${x1},${y1 + 9} C${x1},${my} ${x2},${my} ${x2},${y2 - 9}`,
          class: onPath.has(p) && onPath.has(n.id) ? "edge best" : "edge" }));
      }
    }
    edges.sort((a, b) => a.classList.contains("best") - b.classList.contains("best")).forEach((e) => s.appendChild(e));
    for (const n of data.nodes) {
      const [x, y] = g.pos[n.id];
      let cls = "node";
      if (n.error) cls += " failed"; else if (n.duplicate_of) cls += " dup";
      if (onPath.has(n.id)) cls += " best-path";
      if (n.id === selected) cls += " selected";
      const grp = svg("g", { class: cls, "data-id": n.id, tabindex: 0 });
      grp.appendChild(svg("circle", { cx: x, cy: y, r: n.id === data.run.best ? 11 : 8, fill: g.colours[n.id] || "#d0d5dd" }));
      const label = svg("text", { x: x, y: y + 22, "text-anchor": "middle" });
      label.textContent = n.id;
      grp.appendChild(label);
      const title = svg("title");
      title.textContent = n.id + " · " + n.operator + " · " + (n.error ? "failed: " + n.error : n.duplicate_of ? "duplicate of " + n.duplicate_of : fmt(n.score) + pm(n.se)) + "\n" + n.description;
      grp.appendChild(title);
      grp.addEventListener("click", () => select(n.id));
      grp.addEventListener("keydown", (e) => { if (e.key === "Enter") select(n.id); });
      s.appendChild(grp);
    }
    root.appendChild(s);
  }

  function failures() {
    const box = document.getElementById("failures");
    box.replaceChildren();
    const total = Object.entries(data.failures.total || {});
    if (!total.length) { box.appendChild(el("p", "empty", "No failures.")); return; }
    const made = data.nodes.length;
    box.appendChild(table(["error kind", "candidates", "share"], total.map(([k, n]) => [k, n, fmt(100 * n / made, 0) + " %"]), [false, true, true]));
  }

  function search() {
    const lines = (data.search && data.search.lines) || [];
    document.getElementById("search").textContent = lines.length ? lines.join("\n") : "(off in this run)";
  }

  // -- one candidate ----------------------------------------------------------------------------
  function linkButton(id) {
    const b = el("button", "link", id);
    b.type = "button";
    b.addEventListener("click", () => select(id));
    return b;
  }

  async function select(id) {
    selected = id;
    document.querySelectorAll("#graph .node").forEach((g) => g.classList.toggle("selected", g.getAttribute("data-id") === id));
    document.querySelectorAll("#leaderboard tr.pick").forEach((r) => r.classList.toggle("selected", r.dataset.id === id));
    const response = await fetch(`/api/run/${run}/candidate/${encodeURIComponent(id)}`, { cache: "no-store" });
    const c = await response.json();
    if (selected !== id) return;  // another click came first
    const panel = document.getElementById("panel");
    panel.replaceChildren();
    if (!response.ok) { panel.appendChild(el("p", "empty", c.error || "not found")); return; }
    panel.appendChild(el("h2", "", c.id));
    const score = c.error ? "failed: " + (c.error.kind || "?") : c.duplicate_of ? "duplicate of " + c.duplicate_of : fmt(c.score) + pm(c.se) + " (" + c.runs + " runs)";
    panel.appendChild(el("div", "meta", "generation " + c.generation + " · operator " + c.operator + " · P " + score +
      (typeof c.delta === "number" ? " (" + (c.delta >= 0 ? "+" : "") + fmt(c.delta) + " vs best parent)" : "")));
    panel.appendChild(el("div", "desc", c.description || "(no description)"));
    const rel = el("div", "meta");
    rel.appendChild(document.createTextNode("parents: "));
    if (!c.parents.length) rel.appendChild(document.createTextNode("none (written from scratch) "));
    c.parents.forEach((p) => rel.appendChild(linkButton(p)));
    rel.appendChild(document.createTextNode(" children: "));
    if (!c.children.length) rel.appendChild(document.createTextNode("none"));
    c.children.forEach((k) => rel.appendChild(linkButton(k)));
    panel.appendChild(rel);
    const tasks = Object.keys(c.per_task || {});
    if (tasks.length) {
      panel.appendChild(el("h3", "", "Scores per task"));
      panel.appendChild(table(["task", "P", "± SE", "std", "runs"], tasks.map((t) => {
        const v = c.per_task[t] || {};
        return [t, fmt(v.score), fmt(v.se), fmt(v.std), Array.isArray(v.per_repeat) ? v.per_repeat.length : "–"];
      }), [false, true, true, true, true]));
    }
    if (c.error) {
      const box = el("div", "error");
      box.appendChild(el("h3", "", "Error: " + (c.error.kind || "?")));
      box.appendChild(el("div", "", c.error.message || ""));
      if (c.error.traceback) box.appendChild(details("traceback", el("pre", "", c.error.traceback), false));
      panel.appendChild(box);
    }
    for (const [p, text] of Object.entries(c.diffs || {})) panel.appendChild(details("Diff " + p + " → " + c.id, diffBlock(text), true));
    panel.appendChild(details("Code", el("pre", "code", c.code === null ? "(no code in the reply)" : c.code), true));
    if (c.exchange) {
      const who = (c.exchange.model || "").startsWith("synth/") ? "synthesizer (no LLM) " : "LLM ";
      panel.appendChild(el("div", "meta", who + c.exchange.model + " · " + c.exchange.prompt_tokens + " prompt + " +
        c.exchange.completion_tokens + " completion tokens · $" + fmt(c.exchange.cost_usd, 4)));
    }
  }

  // -- polling ----------------------------------------------------------------------------------
  function render() {
    header();
    leaderboard();
    const t0 = data.convergence.length ? Math.min(...data.convergence.map((p) => p.t || Infinity)) : 0;
    chart("best-candidates", data.convergence, (p) => p.index, "candidates");
    chart("best-time", data.convergence, (p) => (p.t ? p.t - t0 : null), "seconds");
    graph();
    failures();
    search();
  }

  async function poll() {
    const live = document.getElementById("live");
    try {
      const response = await fetch(`/api/run/${run}` + (version ? "?since=" + encodeURIComponent(version) : ""), { cache: "no-store" });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || response.status);
      if (!body.unchanged) {
        data = body;
        version = body.version;
        render();
        if (selected === null && data.run.best) select(data.run.best);
        else if (selected !== null) select(selected);  // its scores may have grown (racing) or its children
      }
      live.className = "";
      live.textContent = "live: looked " + new Date().toLocaleTimeString() + " · " + data.nodes.length + " candidates";
    } catch (err) {
      live.className = "stale";
      live.textContent = "not updated (" + err.message + "); trying again";
    }
    timer = setTimeout(poll, POLL_MS);
  }

  document.querySelectorAll("#runs button").forEach((b) => b.addEventListener("click", () => {
    run = Number(b.dataset.index);
    version = null; selected = null;
    history.replaceState(null, "", "?run=" + run);
    clearTimeout(timer);
    poll();
  }));
  poll();
})();
