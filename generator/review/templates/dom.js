// The DOM helpers the static report (report.js) and the live view (serve/templates/serve.js) share: each page's
// script is this file followed by its own (review/report.py and serve/server.py put them together).
const TunesmithDom = (function () {
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }
  function fmt(x, digits) {
    return typeof x === "number" ? x.toFixed(digits === undefined ? 3 : digits) : "–";
  }
  function pm(se) {  // "± SE" of a mean P, when its runs give one
    return typeof se === "number" ? " ± " + fmt(se) : "";
  }
  function table(headers, rows, numeric) {
    const t = el("table");
    const tr = el("tr");
    headers.forEach((h, i) => tr.appendChild(el("th", numeric && numeric[i] ? "num" : "", h)));
    t.appendChild(tr);
    rows.forEach((row) => {
      const r = el("tr");
      row.forEach((v, i) => r.appendChild(el("td", numeric && numeric[i] ? "num" : "", v)));
      t.appendChild(r);
    });
    return t;
  }
  function diffBlock(text) {  // a unified diff, its hunks, additions and deletions coloured
    const pre = el("pre", "diff");
    if (!text) { pre.textContent = "(identical code)"; return pre; }
    for (const line of text.split("\n")) {
      let cls = "";
      if (line.startsWith("@@")) cls = "hunk";
      else if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
      else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
      pre.appendChild(el("span", cls, line + "\n"));
    }
    return pre;
  }
  function details(summaryText, body, open) {
    const d = el("details");
    if (open) d.open = true;
    d.appendChild(el("summary", "", summaryText));
    d.appendChild(body);
    return d;
  }

  return { el, svg, fmt, pm, table, diffBlock, details };
})();
