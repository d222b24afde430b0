"use strict";
// Tunesmith report: draws the lineage graph and the tables from the JSON block #run-data.
// Every string from the run goes on screen through textContent, never parsed as markup: code,
// descriptions, prompts and replies were written by an LLM and are only ever text here.
(function () {
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const { el, svg, fmt, pm, table, diffBlock, details } = TunesmithDom;  // dom.js, before this script
  const byId = new Map(data.nodes.map((n) => [n.id, n]));
  const onPath = new Set(data.run.best_path || []);

  function scoreLabel(n) {
    if (n.duplicate_of) return "duplicate of " + n.duplicate_of;
    if (n.error) return "failed: " + (n.error.kind || "?");
    return typeof n.score === "number" ? fmt(n.score) + pm(n.se) : "pending";
  }
  function firstLine(s) {
    return String(s || "").trim().split("\n")[0];
  }
  function card(label, value) {
    const c = el("div", "card");
    c.appendChild(el("b", "", value));
    c.appendChild(el("span", "", label));
    return c;
  }

  // The offline synthesizer answers through the LLM path but is no LLM: label its calls as what they are.
  const callsLabel = (data.run.model || "").startsWith("synth/") ? "synthesizer calls (no LLM)" : "LLM calls";

  function summary() {
    const box = document.getElementById("summary");
    const best = data.run.best ? byId.get(data.run.best) : null;
    const u = data.usage || {};
    const failed = data.nodes.filter((n) => n.error).length;
    box.appendChild(card("candidates", data.run.candidates + (data.run.budget ? " / " + data.run.budget : "")));
    box.appendChild(card("best score P", best ? fmt(best.score) + pm(best.se) + " (" + best.id + ")" : "–"));
    box.appendChild(card("failed", failed));
    box.appendChild(card("generations", (data.graph.rows || []).length));
    box.appendChild(card(callsLabel, u.calls || 0));
    box.appendChild(card("tokens", ((u.prompt_tokens || 0) + (u.completion_tokens || 0)).toLocaleString("en")));
    box.appendChild(card("cost (USD)", "$" + fmt(u.cost_usd || 0, 4)));
  }

  function graph() {
    const g = data.graph;
    const root = document.getElementById("graph");
    if (!data.nodes.length) return;
    const s = svg("svg", { width: g.width, height: g.height, viewBox: "0 0 " + g.width + " " + g.height,
      role: "img", "aria-label": "lineage graph" });
    for (const [gen, y] of g.rows) {
      const t = svg("text", { x: 6, y: y + 4, class: "gen" });
      t.textContent = "gen " + gen;
      s.appendChild(t);
    }
    const edges = [];
    for (const n of data.nodes) {
      const [x2, y2] = g.pos[n.id];
      for (const p of n.parents) {
        if (!g.pos[p]) continue;
        const [x1, y1] = g.pos[p];
        const best = onPath.has(p) && onPath.has(n.id);
        const my = (y1 + y2) / 2;
        edges.push(svg("path", { d: `M${x1},${y1 + 9} C${x1},${my} ${x2},${my} ${x2},${y2 - 9}`,
          class: best ? "edge best" : "edge" }));
      }
    }
    // the best path last, so that no other edge crosses over it
    edges.sort((a, b) => a.classList.contains("best") - b.classList.contains("best")).forEach((e) => s.appendChild(e));
    for (const n of data.nodes) {
      const [x, y] = g.pos[n.id];
      let cls = "node";
      if (n.error) cls += " failed";
      else if (n.duplicate_of) cls += " dup";
      if (onPath.has(n.id)) cls += " best-path";
      const grp = svg("g", { class: cls, "data-id": n.id, tabindex: 0 });
      const r = n.id === data.run.best ? 11 : 8;
      grp.appendChild(svg("circle", { cx: x, cy: y, r: r, fill: g.colours[n.id] || "#d0d5dd" }));
      if (n.error) {
        grp.appendChild(svg("path", { d: `M${x - 4},${y - 4}L${x + 4},${y + 4}M${x + 4},${y - 4}L${x - 4},${y + 4}`, class: "cross" }));
      }
      const label = svg("text", { x: x, y: y + r + 11, "text-anchor": "middle" });
      label.textContent = n.id;
      grp.appendChild(label);
      const title = svg("title");
      title.textContent = n.id + " · " + n.operator + " · " + scoreLabel(n) + "\n" + firstLine(n.description);
      grp.appendChild(title);
      grp.addEventListener("click", () => select(n.id));
      grp.addEventListener("keydown", (e) => { if (e.key === "Enter") select(n.id); });
      s.appendChild(grp);
    }
    root.appendChild(s);
  }

  function linkButton(id) {
    const b = el("button", "link", id);
    b.type = "button";
    b.addEventListener("click", () => select(id));
    return b;
  }

  function select(id) {
    const n = byId.get(id);
    if (!n) return;
    document.querySelectorAll("#graph .node").forEach((g) =>
      g.classList.toggle("selected", g.getAttribute("data-id") === id));
    const panel = document.getElementById("panel");
    panel.replaceChildren();
    const h = el("h2", "", n.id);
    const badge = n.error ? ["failed", "bad"] : n.id === data.run.best ? ["best", "good"] : n.improved ? ["improved", "good"] : null;
    if (badge) h.appendChild(el("span", "badge " + badge[1], badge[0]));
    panel.appendChild(h);
    panel.appendChild(el("div", "meta", "generation " + n.generation + " · operator " + n.operator +
      " · score " + scoreLabel(n) + (typeof n.delta === "number" ? " (" + (n.delta >= 0 ? "+" : "") + fmt(n.delta) + " vs best parent)" : "")));
    panel.appendChild(el("div", "desc", n.description || "(no description)"));
    const rel = el("div", "meta");
    rel.appendChild(document.createTextNode("parents: "));
    if (!n.parents.length) rel.appendChild(document.createTextNode("none (written from scratch) "));
    n.parents.forEach((p) => rel.appendChild(byId.has(p) ? linkButton(p) : el("span", "", p + " ")));
    rel.appendChild(document.createTextNode(" children: "));
    if (!n.children.length) rel.appendChild(document.createTextNode("none"));
    n.children.forEach((c) => rel.appendChild(linkButton(c)));
    panel.appendChild(rel);

    const tasks = Object.keys(n.per_task || {});
    if (tasks.length) {
      panel.appendChild(el("h3", "", "Scores per task"));
      panel.appendChild(table(["task", "score P", "± SE", "std", "runs", "evaluations"], tasks.map((t) => {
        const v = n.per_task[t] || {};
        const runs = Array.isArray(v.per_repeat) ? v.per_repeat.length : "–";
        return [t, fmt(v.score), fmt(v.se), fmt(v.std), runs, typeof v.fevals === "number" ? fmt(v.fevals, 0) : "–"];
      }), [false, true, true, true, true, true]));
    }
    if (n.error) {
      const box = el("div", "error");
      box.appendChild(el("h3", "", "Error: " + (n.error.kind || "?")));
      box.appendChild(el("div", "", n.error.message || ""));
      if (n.error.line !== undefined && n.error.line !== null) box.appendChild(el("div", "meta", "line " + n.error.line));
      if (n.error.traceback) box.appendChild(details("traceback", el("pre", "", n.error.traceback), false));
      panel.appendChild(box);
    }
    for (const [p, text] of Object.entries(n.diffs || {})) {
      panel.appendChild(details("Diff " + p + " → " + n.id, diffBlock(text), true));
    }
    panel.appendChild(details("Code", el("pre", "code", n.code === null ? "(no code in the reply)" : n.code), true));
    const x = n.exchange ? (data.exchanges || {})[n.exchange] : null;
    if (x) {
      const who = (x.model || "").startsWith("synth/") ? "synthesizer (no LLM) " : "LLM ";
      panel.appendChild(el("div", "meta", who + x.model + " · " + x.prompt_tokens + " prompt + " + x.completion_tokens +
        " completion tokens · $" + fmt(x.cost_usd, 4) + (typeof x.latency_s === "number" ? " · " + fmt(x.latency_s, 1) + " s" : "")));
      panel.appendChild(details("Prompt", el("pre", "prompt", x.prompt), false));
      panel.appendChild(details("Reply", el("pre", "reply", x.reply || "(no reply: " + (x.error || "?") + ")"), false));
    }
    if (n.novelty && n.novelty.nearest) {
      const near = el("div", "meta");
      near.appendChild(document.createTextNode("nearest earlier code: "));
      near.appendChild(byId.has(n.novelty.nearest) ? linkButton(n.novelty.nearest) : el("span", "", n.novelty.nearest));
      near.appendChild(document.createTextNode(" similarity " + fmt(n.novelty.similarity)));
      panel.appendChild(near);
    }
    const again = n.novelty && n.novelty.reasked;
    if (again) {
      panel.appendChild(el("div", "meta", "asked again: its first reply (" + again.exchange_id + ") was " +
        fmt(again.similarity) + " similar to " + again.nearest + (again.error ? "; the second failed (" + again.error + "), the first was kept" : "")));
    }
    if (n.timings && Object.keys(n.timings).length) {
      panel.appendChild(el("div", "meta", "timings: " + Object.entries(n.timings).map(([k, v]) =>
        k + " " + (typeof v === "number" ? fmt(v, 2) + " s" : v)).join(", ")));
    }
  }

  function heatmap() {
    const box = document.getElementById("heatmap");
    if (!data.top.length) { box.appendChild(el("p", "empty", "No scored candidates yet.")); return; }
    const vals = data.top.flatMap((r) => r.scores.filter((v) => typeof v === "number"));
    const lo = Math.min(...vals), hi = Math.max(...vals), span = hi - lo || 1;
    const t = el("table", "heat");
    const head = el("tr");
    ["candidate", "mean"].concat(data.tasks).forEach((h) => head.appendChild(el("th", "", h)));
    t.appendChild(head);
    for (const row of data.top) {
      const tr = el("tr", "pick");
      tr.appendChild(el("td", "", row.id));
      tr.appendChild(el("td", "num", fmt(row.score) + pm(row.se)));
      row.scores.forEach((v) => {
        const td = el("td", "cell", fmt(v, 2));
        if (typeof v === "number") {
          const f = (v - lo) / span;  // pale blue (low) to deep green (high)
          td.style.background = "hsl(" + (200 - 80 * f) + ", 60%, " + (92 - 40 * f) + "%)";
          if (f > 0.6) td.style.color = "#fff";
        }
        tr.appendChild(td);
      });
      tr.addEventListener("click", () => { select(row.id); document.getElementById("lineage").scrollIntoView(); });
      t.appendChild(tr);
    }
    box.appendChild(t);
  }

  function operators() {
    const pct = (a, b) => (b ? Math.round((100 * a) / b) + "%" : "–");
    document.getElementById("operators").appendChild(table(
      ["operator", "candidates", "worked", "duplicates (not run)", "improved on parent", "new best", "mean Δ vs parent"],
      data.operators.map((s) => [s.operator, s.candidates, pct(s.succeeded, s.candidates), s.duplicates,
        s.with_parent ? s.improved + "/" + s.with_parent + " (" + pct(s.improved, s.with_parent) + ")" : "–",
        s.new_best, typeof s.mean_delta === "number" ? (s.mean_delta >= 0 ? "+" : "") + fmt(s.mean_delta) : "–"]),
      [false, true, true, true, true, true, true]));
  }

  function errors() {
    const gens = Object.keys(data.errors);
    const kinds = [...new Set(gens.flatMap((g) => Object.keys(data.errors[g])))].sort();
    const box = document.getElementById("errors");
    if (!kinds.length) { box.appendChild(el("p", "empty", "No candidate failed.")); return; }
    box.appendChild(table(["generation"].concat(kinds), gens.map((g) => [g].concat(kinds.map((k) => data.errors[g][k] || 0))),
      [false].concat(kinds.map(() => true))));
  }

  function diversity() {
    const rows = data.diversity || [];
    const box = document.getElementById("diversity");
    if (!rows.length) { box.appendChild(el("p", "empty", "No candidates yet.")); return; }
    box.appendChild(table(["generation", "candidates", "copies (not evaluated)", "asked again", "novelty", "distinct algorithms", "diversity"],
      rows.map((r) => [r.generation, r.candidates, r.duplicates, r.reasked, fmt(r.novelty), r.distinct, fmt(r.diversity)]),
      [false, true, true, true, true, true, true]));
  }

  function usage() {
    const u = data.usage || {};
    document.getElementById("usage").appendChild(table(["", "value"], [
      [callsLabel, u.calls || 0], ["failed calls", u.failed_calls || 0],
      ["prompt tokens", (u.prompt_tokens || 0).toLocaleString("en")],
      ["completion tokens", (u.completion_tokens || 0).toLocaleString("en")],
      ["cost (USD)", "$" + fmt(u.cost_usd || 0, 4)]], [false, true]));
  }

  function hpo() {
    const ids = Object.keys(data.hpo || {});
    if (!ids.length) return;
    const box = document.getElementById("hpo");
    box.replaceChildren();
    // rows come from the report's Python side (report.hpo_row): trials by outcome, values the export uses
    box.appendChild(table(["candidate", "trials", "train P (default → tuned)", "test P (default → tuned)", "values used"],
      data.hpo_table, [false, true, true, true, false]));
    for (const id of ids) {
      const r = data.hpo[id];
      box.appendChild(el("h3", "", "Details: " + id));
      const rows = Object.entries(r).filter(([, v]) => v === null || typeof v !== "object").map(([k, v]) => [k, String(v)]);
      if (rows.length) box.appendChild(table(["key", "value"], rows));
      for (const [k, v] of Object.entries(r)) {
        if (v !== null && typeof v === "object") box.appendChild(details(k, el("pre", "", JSON.stringify(v, null, 1)), k.includes("param")));
      }
    }
  }

  summary();
  graph();
  heatmap();
  operators();
  errors();
  diversity();
  usage();
  hpo();
  const fromHash = decodeURIComponent(location.hash.slice(1));
  const first = byId.has(fromHash) ? fromHash : data.run.best || (data.nodes.length ? data.nodes[data.nodes.length - 1].id : null);
  if (first) select(first);
})();
