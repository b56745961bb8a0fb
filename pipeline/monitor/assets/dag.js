// The pipeline page: fetches the status JSON every refresh interval and
// draws the DAG in SVG (vertices in columns by their distance from the
// sources), plus a table of every vertex. Hand-written, no library.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const BOX_W = 230, BOX_H = 128, COL_GAP = 130, ROW_GAP = 36, PAD = 24;
const refresh = Number(document.body.dataset.refresh) || 1000;
// watermark.Max, the watermark of an ended stream, is in the year 2262.
const MAX_YEAR = 2262;
let updates = 0;

function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// count formats a count or a rate: 950, 12.3K, 4.56M.
function count(n) {
  if (n === undefined || n === null) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "K";
  if (a >= 100 || Number.isInteger(n)) return String(Math.round(n));
  return n.toFixed(1);
}

function duration(s) {
  if (s < 1e-3) return (s * 1e6).toFixed(0) + "µs";
  if (s < 1) return (s * 1e3).toFixed(1) + "ms";
  if (s < 120) return s.toFixed(1) + "s";
  if (s < 7200) return (s / 60).toFixed(1) + "m";
  return (s / 3600).toFixed(1) + "h";
}

// watermark describes a watermark and its lag behind now.
function watermark(wm, now) {
  if (!wm) return { text: "wm –", lag: "" };
  const t = new Date(wm);
  if (t.getUTCFullYear() >= MAX_YEAR) return { text: "wm ended", lag: "" };
  const lag = (now - t) / 1000;
  return { text: "wm " + t.toISOString().slice(11, 23) + "Z", lag: "lag " + duration(Math.max(lag, 0)) };
}

// quantile estimates a quantile from a histogram's buckets, as
// Prometheus's histogram_quantile does.
function quantile(h, q) {
  if (!h || !h.count) return null;
  const rank = q * h.count;
  let seen = 0;
  for (let i = 0; i < h.counts.length; i++) {
    const c = h.counts[i];
    if (c === 0 || seen + c < rank) { seen += c; continue; }
    if (i === h.bounds.length) return h.bounds[i - 1];
    const lo = i > 0 ? h.bounds[i - 1] : 0;
    return lo + (h.bounds[i] - lo) * (rank - seen) / c;
  }
  return h.bounds[h.bounds.length - 1];
}

// layout places every vertex: its column is its longest distance from a
// source, its row its order in the column (sorted by the mean row of its
// inputs, to keep edges short and uncrossed).
function layout(st) {
  const col = {}, ins = {};
  for (const v of st.vertices) { col[v.name] = 0; ins[v.name] = []; }
  for (const e of st.edges) if (ins[e.to]) ins[e.to].push(e.from);
  for (let pass = 0; pass < st.vertices.length; pass++) {
    let moved = false;
    for (const e of st.edges) {
      if (col[e.from] === undefined || col[e.to] === undefined) continue;
      if (col[e.to] < col[e.from] + 1) { col[e.to] = col[e.from] + 1; moved = true; }
    }
    if (!moved) break;
  }
  const cols = [];
  for (const v of st.vertices) (cols[col[v.name]] = cols[col[v.name]] || []).push(v.name);
  const row = {};
  cols.forEach((names, c) => {
    if (c > 0) {
      const mean = n => ins[n].length ? ins[n].reduce((s, f) => s + (row[f] || 0), 0) / ins[n].length : 0;
      names.sort((a, b) => mean(a) - mean(b));
    }
    names.forEach((n, r) => { row[n] = r; });
  });
  const rows = Math.max(1, ...cols.map(c => c.length));
  const pos = {};
  cols.forEach((names, c) => {
    const offset = (rows - names.length) * (BOX_H + ROW_GAP) / 2;
    names.forEach((n, r) => {
      pos[n] = { x: PAD + c * (BOX_W + COL_GAP), y: PAD + offset + r * (BOX_H + ROW_GAP) };
    });
  });
  return { pos, width: PAD * 2 + cols.length * BOX_W + (cols.length - 1) * COL_GAP, height: PAD * 2 + rows * BOX_H + (rows - 1) * ROW_GAP };
}

function drawEdges(svg, st, pos) {
  const byTarget = {};
  for (const e of st.edges) (byTarget[e.to] = byTarget[e.to] || []).push(e);
  const bySource = {};
  for (const e of st.edges) (bySource[e.from] = bySource[e.from] || []).push(e);
  for (const e of st.edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    // Spread the ends of several edges over the box's side.
    const outs = bySource[e.from], ins = byTarget[e.to];
    const y1 = a.y + BOX_H * (outs.indexOf(e) + 1) / (outs.length + 1);
    const y2 = b.y + BOX_H * (ins.indexOf(e) + 1) / (ins.length + 1);
    const x1 = a.x + BOX_W, x2 = b.x - 8;
    const mx = (x1 + x2) / 2;
    const cls = "edge" + (e.full ? " full" : "") + (e.late ? " late" : "");
    const path = el("path", {
      class: cls, d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
      "data-from": e.from, "data-to": e.to, "data-full": String(!!e.full), "data-written": String(e.written),
    });
    path.appendChild(el("title", {}, `${e.from} → ${e.to}${e.condition ? " where " + e.condition : ""}: ${e.written} written` +
      (e.discarded ? `, ${e.discarded} discarded` : "") + (e.full ? " — buffer full" : "")));
    svg.appendChild(path);
    svg.appendChild(el("path", { class: e.full ? "arrow-full" : "arrow", d: `M${x2},${y2 - 5} L${x2 + 8},${y2} L${x2},${y2 + 5} z` }));
    const wm = watermark(e.watermark, new Date(st.time));
    const label = el("text", { class: "edge-label" + (e.full ? " full" : ""), x: mx, y: (y1 + y2) / 2 - 6, "text-anchor": "middle",
      "data-from": e.from, "data-to": e.to });
    label.appendChild(el("tspan", { class: "e-rate", x: mx }, count(e.rate["1m"]) + "/s" + (e.full ? " FULL" : "")));
    label.appendChild(el("tspan", { x: mx, dy: 13 }, wm.text.replace("wm ", "")));
    if (e.condition) label.appendChild(el("tspan", { x: mx, dy: 13 }, e.condition));
    svg.appendChild(label);
  }
}

function drawVertex(svg, v, p, now) {
  const cls = "vertex " + v.kind + (v.full ? " full" : "") + (v.last_error ? " erred" : "");
  const g = el("g", { class: cls, transform: `translate(${p.x},${p.y})`, "data-vertex": v.name, "data-read": String(v.read),
    "data-full": String(!!v.full) });
  g.appendChild(el("rect", { width: BOX_W, height: BOX_H }));
  g.appendChild(el("text", { class: "name", x: 10, y: 19 }, v.name));
  g.appendChild(el("text", { class: "kind", x: BOX_W - 10, y: 18, "text-anchor": "end" }, `${v.kind} ×${v.replicas}`));
  g.appendChild(el("text", { class: "rate", x: 10, y: 42 }, count(v.rate["1m"]) + " msg/s"));
  if (v.full) g.appendChild(el("text", { class: "badge", x: BOX_W - 10, y: 42, "text-anchor": "end" }, "FULL"));
  g.appendChild(el("text", { class: "kind", x: 10, y: 58 }, `1m · 5m ${count(v.rate["5m"])} · 15m ${count(v.rate["15m"])}` +
    (v.kind === "reduce" ? ` · ${count(v.open_windows)} open` : "")));
  g.appendChild(el("text", { class: "v-counts", x: 10, y: 76 }, `read ${count(v.read)} · out ${count(v.written)}` +
    (v.dropped ? ` · drop ${count(v.dropped)}` : "")));
  const backlog = v.kind === "source" ? `in flight ${count(v.in_flight)}` :
    `pending ${count(v.pending)}` + (v.capacity ? ` / ${count(v.capacity)}` : "") + ` · in flight ${count(v.in_flight)}`;
  g.appendChild(el("text", { class: "v-pending", x: 10, y: 94 }, backlog));
  const wm = watermark(v.watermark, now);
  g.appendChild(el("text", { class: "v-wm", x: 10, y: 112 }, wm.text + (wm.lag ? " · " + wm.lag : "")));
  if (v.last_error) {
    const t = el("text", { class: "badge", x: BOX_W - 10, y: 76, "text-anchor": "end" }, "error");
    t.appendChild(el("title", {}, v.last_error.message));
    g.appendChild(t);
  }
  svg.appendChild(g);
}

function drawTable(st) {
  const body = document.querySelector("#vertices tbody");
  body.replaceChildren();
  for (const v of st.vertices) {
    const tr = document.createElement("tr");
    const p50 = quantile(v.latency, 0.5), p99 = quantile(v.latency, 0.99);
    const cells = [v.name, v.kind, v.replicas,
      `${count(v.rate["1m"])} · ${count(v.rate["5m"])} · ${count(v.rate["15m"])}`,
      v.read, v.written, v.acked, v.dropped, v.in_flight,
      (v.partitions || []).map(p => `${p.partition}: ${p.pending}`).join(", ") || "–",
      p50 === null ? "–" : `${duration(p50)} · ${duration(p99)}`,
      v.last_error ? `${v.last_error.message} (replica ${v.last_error.replica})` : ""];
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = String(c);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function render(st) {
  document.getElementById("pipeline").textContent = st.pipeline;
  const state = document.getElementById("state");
  state.textContent = st.state;
  state.className = "state " + st.state;
  document.getElementById("meta").textContent = `storage ${st.storage}` + (st.run ? ` · run ${st.run}` : "") +
    (st.started ? ` · started ${new Date(st.started).toLocaleString()}` : "");
  const err = document.getElementById("error");
  err.hidden = !st.error;
  err.textContent = st.error || "";
  const svg = document.getElementById("dag");
  const { pos, width, height } = layout(st);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.replaceChildren();
  drawEdges(svg, st, pos);
  const now = new Date(st.time);
  for (const v of st.vertices) drawVertex(svg, v, pos[v.name], now);
  drawTable(st);
  updates++;
  const up = document.getElementById("updated");
  up.textContent = `updated ${now.toLocaleTimeString()}`;
  up.dataset.updates = String(updates);
}

async function tick() {
  try {
    const res = await fetch("status", { cache: "no-store" });
    if (!res.ok) throw new Error(`status ${res.status}`);
    render(await res.json());
  } catch (e) {
    const err = document.getElementById("error");
    err.hidden = false;
    err.textContent = "cannot read the status: " + e.message;
  }
  setTimeout(tick, refresh);
}

tick();
