"use strict";
// panels.js: the text the page shows: numbers and times formatted, the
// tooltip of an allocation or a failure, the summary, the state at a chosen
// moment, the comparison of two runs and the out-of-memory reports.

function humanBytes(b) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = b, u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u === 0 ? Math.round(v) + " B" : v.toFixed(1) + " " + units[u];
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

// A time in microseconds after the run's first event: the log's time of day
// (HH:MM:SS.ffffff, as the logging adaptor writes it) when the log has times.
function timeOfDay(run, us) {
  const h = run.header;
  if (!h.has_time || h.start_of_day === null) return "event time " + us;
  const day = 86400e6;
  let t = (Math.round(h.start_of_day * 1e6) + us) % day;
  const frac = String(t % 1e6).padStart(6, "0");
  t = Math.floor(t / 1e6);
  const p = (n) => String(n).padStart(2, "0");
  return p(Math.floor(t / 3600)) + ":" + p(Math.floor(t / 60) % 60) + ":" + p(t % 60) + "." + frac;
}

function relSeconds(run, us) {
  return run.header.has_time ? "+" + (us / 1e6).toFixed(6) + " s" : "";
}

function addressHex(run, offset) {
  return "0x" + (BigInt(run.header.base) + BigInt(offset)).toString(16);
}

function eventText(run, e) {
  const us = run.timeUs[e], line = run.line[e];
  const parts = [relSeconds(run, us), "event " + e];
  if (line > 0) parts.push("line " + line);
  return timeOfDay(run, us) + " (" + parts.filter((p) => p).join(", ") + ")";
}

function allocationText(run, a) {
  const h = run.header, size = run.aSize[a];
  const lines = [
    "allocation #" + a,
    "size      " + size + " B (" + humanBytes(size) + ")",
    "address   " + addressHex(run, run.aAddr[a]),
    "stream    " + h.streams[run.aStream[a]],
    "thread    " + h.threads[run.aThread[a]],
    "allocated " + eventText(run, run.aStart[a]),
  ];
  if (run.aEnd[a] < run.events) {
    lines.push("freed     " + eventText(run, run.aEnd[a]));
    lines.push("lifetime  " + ((run.timeUs[run.aEnd[a]] - run.timeUs[run.aStart[a]]) / 1e6).toFixed(6) + " s");
  } else {
    lines.push(h.kind === "snapshot" ? "freed     (live at the snapshot)" : "freed     never (live at the end of the log)");
  }
  const bt = h.backtraces[String(a)];
  if (bt) lines.push("backtrace", ...bt.slice(0, 24).map((f) => "  " + f));
  return lines.join("\n");
}

function failureText(run, f) {
  const lines = [
    "allocation FAILED (out of memory)",
    "size      " + f.size + " B (" + humanBytes(f.size) + ")",
    "stream    " + f.stream,
    "thread    " + run.header.threads[f.thread],
    "at        " + eventText(run, f.event),
  ];
  if (f.report !== null) lines.push("", reportText(run.header.reports[f.report]));
  return lines.join("\n");
}

// An out-of-memory report (schema rmm-oom-report) as text: the request,
// each layer of the stack, the largest live sites.
function reportText(entry) {
  const r = entry.report, req = r.request || {};
  const out = ["report " + entry.file, "request   " + req.size + " B (" + humanBytes(req.size || 0) + "), alignment " + req.alignment + ", stream " + req.stream,
    "failed in " + r.failed_layer];
  let layer = r.snapshot ? r.snapshot.resource : null;
  while (layer) {
    const n = (v) => (v === null || v === undefined ? "?" : humanBytes(v));
    out.push(layer.name + ": reserved " + n(layer.reserved_bytes) + ", used " + n(layer.used_bytes) +
      ", largest free " + n(layer.largest_free_block) +
      (layer.fragmentation === null || layer.fragmentation === undefined ? "" : ", fragmentation " + Number(layer.fragmentation).toFixed(3)));
    layer = layer.upstream;
  }
  for (const s of (r.largest_live_sites || []).slice(0, 5)) {
    out.push("live site: " + humanBytes(s.bytes) + " in " + s.count + " allocation(s)" + (s.backtrace && s.backtrace.length ? " at " + s.backtrace[0] : ""));
  }
  return out.join("\n");
}

function statsRows(run) {
  const s = run.header.stats;
  return [["events", run.events], ["allocations", s.allocations], ["frees", s.frees], ["failures", s.failures],
    ["peak bytes", s.peak_bytes], ["duration (s)", s.duration === null ? "-" : Number(s.duration).toFixed(6)]];
}

function renderSummary(run, el) {
  const rows = statsRows(run).map(([k, v]) =>
    "<tr><td>" + k + "</td><td class=num>" + (k === "peak bytes" ? humanBytes(v) : escapeHtml(v)) + "</td></tr>");
  el.innerHTML = "<h2>" + escapeHtml(run.header.name) + " (" + run.header.kind + ")</h2><table>" + rows.join("") + "</table>";
}

function renderComparison(a, b, el) {
  const ra = statsRows(a), rb = statsRows(b);
  const rows = ra.map(([k, va], i) => {
    const vb = rb[i][1], num = typeof va === "number" && typeof vb === "number";
    const fmt = (v) => (k === "peak bytes" ? humanBytes(v) : escapeHtml(v));
    const diff = num ? (vb - va >= 0 ? "+" : "") + (k === "peak bytes" ? humanBytes(vb - va) : vb - va) : "";
    return "<tr><td>" + k + "</td><td class=num>" + fmt(va) + "</td><td class='num cmp'>" + fmt(vb) + "</td><td class=num>" + diff + "</td></tr>";
  });
  el.innerHTML = "<h2>Comparison</h2><table><tr><th></th><th>this run</th><th class=cmp>" + escapeHtml(b.header.name) +
    "</th><th>difference</th></tr>" + rows.join("") + "</table><p class=cmp>The orange line is the compared run's bytes in use (time from its first event).</p>";
}

// The live blocks right after the last event at or before `us`.
function stateAt(run, us) {
  const e = Math.max(0, lowerBound(run.timeUs, us + 0.5) - 1);
  const live = [];
  forEachLive(run, e, e, (a) => { if (run.aStart[a] <= e) live.push(a); });
  live.sort((p, q) => run.aAddr[p] - run.aAddr[q]);
  let bytes = 0, end = -1, largestGap = 0, gaps = 0, free = 0;
  for (const a of live) {
    bytes += run.aSize[a];
    if (end >= 0 && run.aAddr[a] > end) {
      const g = run.aAddr[a] - end;
      free += g; gaps++; if (g > largestGap) largestGap = g;
    }
    end = Math.max(end, run.aAddr[a] + run.aSize[a]);
  }
  return { event: e, live, bytes, largestGap, gaps, free, fragmentation: free > 0 ? 1 - largestGap / free : 0 };
}

function renderState(run, us, el) {
  const s = stateAt(run, us);
  const biggest = s.live.slice().sort((p, q) => run.aSize[q] - run.aSize[p]).slice(0, 10);
  let html = "<h2>State at " + escapeHtml(eventText(run, s.event)) + "</h2><table>" +
    "<tr><td>live blocks</td><td class=num id=state-live>" + s.live.length + "</td></tr>" +
    "<tr><td>bytes in use</td><td class=num id=state-bytes>" + humanBytes(s.bytes) + "</td></tr>" +
    "<tr><td>largest gap</td><td class=num id=state-gap>" + humanBytes(s.largestGap) + "</td></tr>" +
    "<tr><td>holes (free between live)</td><td class=num>" + s.gaps + " (" + humanBytes(s.free) + ")</td></tr>" +
    "<tr><td>fragmentation</td><td class=num>" + s.fragmentation.toFixed(3) + "</td></tr></table>";
  html += "<h2>Largest live blocks</h2><table>" + biggest.map((a) =>
    "<tr><td>" + addressHex(run, run.aAddr[a]) + "</td><td class=num>" + humanBytes(run.aSize[a]) + "</td><td>" + escapeHtml(run.header.streams[run.aStream[a]]) + "</td></tr>").join("") + "</table>";
  if (run.header.snapshot) html += layersHtml(run.header.snapshot);
  el.innerHTML = html;
}

function layersHtml(layer) {
  let html = "<h2>Resource stack at the snapshot</h2><table><tr><th>layer</th><th>reserved</th><th>used</th><th>largest free</th></tr>";
  const n = (v) => (v === null || v === undefined ? "?" : humanBytes(v));
  for (let l = layer; l; l = l.upstream) {
    html += "<tr><td>" + escapeHtml(l.name) + "</td><td class=num>" + n(l.reserved_bytes) + "</td><td class=num>" + n(l.used_bytes) + "</td><td class=num>" + n(l.largest_free_block) + "</td></tr>";
  }
  return html + "</table>";
}

function renderOom(run, el) {
  const h = run.header;
  if (h.failures.length === 0 && h.reports.length === 0) { el.innerHTML = "<h2>Out of memory</h2><p>No failed allocation.</p>"; return; }
  let html = "<h2 class=bad>Out of memory: " + h.failures.length + " failed allocation(s), " + h.reports.length + " report(s)</h2>";
  for (const f of h.failures.slice(0, 20)) html += "<pre class=report>" + escapeHtml(failureText(run, f)) + "</pre>";
  for (const r of h.reports) if (r.failure === null) html += "<pre class=report>(no matching failure in the log)\n" + escapeHtml(reportText(r)) + "</pre>";
  el.innerHTML = html;
}
