"use strict";
// data.js: decodes each run's header (JSON) and columns (base64 LEB128
// varints, deltas where values grow) into typed arrays, then builds what the
// drawing needs: bytes in use after each event with a min/max pyramid (level
// of detail for the curve) and the allocations grouped by lifetime class
// (to find those in a time window without scanning them all).

const PYRAMID_FANOUT = 8;

function decodeBase64(text) {
  const bin = atob(text.replace(/\s+/g, ""));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// Reads `count` varints from bytes[off..] into `out`; `mode` is "plain",
// "delta" (running sum) or "zigzag" (signed running sum).
function readColumn(bytes, col, out, mode) {
  let p = col.off, acc = 0;
  for (let i = 0; i < col.count; i++) {
    let v = 0, mul = 1, b;
    do {
      b = bytes[p++];
      v += (b & 127) * mul;
      mul *= 128;
    } while (b >= 128);
    if (mode === "plain") out[i] = v;
    else if (mode === "delta") out[i] = acc += v;
    else out[i] = acc += (v % 2 === 0 ? v / 2 : -(v + 1) / 2);
  }
  if (p !== col.off + col.len) throw new Error("column " + col.name + " is corrupt");
  return out;
}

function buildInUse(run) {
  const n = run.events, d = new Float64Array(n);
  for (let a = 0; a < run.allocations; a++) {
    d[run.aStart[a]] += run.aSize[a];
    if (run.aEnd[a] < n) d[run.aEnd[a]] -= run.aSize[a];
  }
  let bytes = 0;
  for (let i = 0; i < n; i++) d[i] = bytes += d[i];
  run.inUse = d;
  run.pyramid = [];
  let below = d, belowMin = d;
  while (below.length > PYRAMID_FANOUT) {
    const m = Math.ceil(below.length / PYRAMID_FANOUT);
    const mn = new Float64Array(m), mx = new Float64Array(m);
    for (let k = 0; k < m; k++) {
      let lo = Infinity, hi = -Infinity;
      const end = Math.min(below.length, (k + 1) * PYRAMID_FANOUT);
      for (let i = k * PYRAMID_FANOUT; i < end; i++) {
        if (belowMin[i] < lo) lo = belowMin[i];
        if (below[i] > hi) hi = below[i];
      }
      mn[k] = lo; mx[k] = hi;
    }
    run.pyramid.push({ min: mn, max: mx });
    below = mx; belowMin = mn;
  }
}

// Allocations by lifetime class c (lifetime in events below 2^c), each
// class in order of allocation: a window of events [e0, e1] holds, in
// class c, only allocations that start in [e0 - 2^c, e1].
function buildClasses(run) {
  const counts = new Uint32Array(40), cls = new Uint8Array(run.allocations);
  for (let a = 0; a < run.allocations; a++) {
    const life = run.aEnd[a] - run.aStart[a];
    const c = life <= 1 ? 0 : Math.ceil(Math.log2(life));
    cls[a] = c; counts[c]++;
  }
  run.classes = [];
  const fill = [];
  for (let c = 0; c < 40; c++) {
    fill.push(0);
    run.classes.push({ span: Math.pow(2, c), list: new Uint32Array(counts[c]) });
  }
  for (let a = 0; a < run.allocations; a++) run.classes[cls[a]].list[fill[cls[a]]++] = a;
  run.classes = run.classes.filter((k) => k.list.length > 0);
  for (const k of run.classes) drawOrder(run, k);
}

// A class's allocations as the drawing reads them, one after another (a
// sequential pass over five arrays, not five lookups scattered over the
// whole log per allocation): start and end time, low and high axis offset,
// colour; and the class's longest lifetime in time.
function drawOrder(run, k) {
  const n = k.list.length;
  k.t0 = new Float64Array(n); k.t1 = new Float64Array(n);
  k.y0 = new Float64Array(n); k.y1 = new Float64Array(n); k.col = new Uint8Array(n);
  let longest = 0;
  for (let j = 0; j < n; j++) {
    const a = k.list[j];
    k.t0[j] = run.timeUs[run.aStart[a]];
    k.t1[j] = run.aEnd[a] < run.events ? run.timeUs[run.aEnd[a]] : run.endUs;
    k.y0[j] = run.aY[a]; k.y1[j] = run.aY[a] + run.aSize[a]; k.col[j] = run.colors[a];
    if (k.t1[j] - k.t0[j] > longest) longest = k.t1[j] - k.t0[j];
  }
  k.longest = longest;
}

// Calls f(a) for every allocation live at some event in [e0, e1].
function forEachLive(run, e0, e1, f) {
  for (const k of run.classes) {
    const list = k.list, start = run.aStart;
    let lo = 0, hi = list.length;
    const from = e0 - k.span;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (start[list[mid]] < from) lo = mid + 1; else hi = mid; }
    for (let j = lo; j < list.length; j++) {
      const a = list[j];
      if (start[a] > e1) break;
      if (run.aEnd[a] > e0) f(a);
    }
  }
}

// The first index i with arr[i] >= v (arr ascending).
function lowerBound(arr, v) {
  let lo = 0, hi = arr.length;
  while (lo < hi) { const mid = (lo + hi) >>> 1; if (arr[mid] < v) lo = mid + 1; else hi = mid; }
  return lo;
}

// Least and most bytes in use over events [i0, i1), through the pyramid.
function rangeMinMax(run, i0, i1) {
  let mn = Infinity, mx = -Infinity, lo = run.inUse, hi = run.inUse, level = 0;
  const take = (i) => { if (lo[i] < mn) mn = lo[i]; if (hi[i] > mx) mx = hi[i]; };
  while (i0 < i1) {
    if (i1 - i0 <= 2 * PYRAMID_FANOUT || level >= run.pyramid.length) {
      for (let i = i0; i < i1; i++) take(i);
      break;
    }
    while (i0 % PYRAMID_FANOUT) take(i0++);
    while (i1 % PYRAMID_FANOUT) take(--i1);
    i0 /= PYRAMID_FANOUT; i1 /= PYRAMID_FANOUT;
    lo = run.pyramid[level].min; hi = run.pyramid[level].max; level++;
  }
  return [mn, mx];
}

function axisOffsets(run) {
  const starts = run.header.axis.starts, offsets = run.header.axis.offsets;
  const y = new Float64Array(run.allocations);
  for (let a = 0; a < run.allocations; a++) {
    const addr = run.aAddr[a];
    let k = lowerBound(starts, addr + 1) - 1;
    if (k < 0) k = 0;
    y[a] = offsets[k] + Math.max(0, addr - starts[k]);
  }
  return y;
}

function loadRun(i) {
  const headerEl = document.getElementById("run" + i + "-header");
  if (!headerEl) return null;
  const h = JSON.parse(headerEl.textContent);
  const bytes = decodeBase64(document.getElementById("run" + i + "-data").textContent);
  const col = {};
  for (const [name, off, len, count] of h.columns) col[name] = { name, off, len, count };
  const E = h.events, A = h.allocations;
  const run = { header: h, events: E, allocations: A, index: i };
  run.timeUs = readColumn(bytes, col.ev_time_us, new Float64Array(E), "delta");
  run.line = readColumn(bytes, col.ev_line, new Float64Array(E), "zigzag");
  run.aStart = readColumn(bytes, col.a_start, new Uint32Array(A), "delta");
  const life = readColumn(bytes, col.a_life, new Uint32Array(A), "plain");
  run.aEnd = new Uint32Array(A);
  for (let a = 0; a < A; a++) run.aEnd[a] = life[a] === 0 ? E : run.aStart[a] + life[a];
  run.aAddr = readColumn(bytes, col.a_addr, new Float64Array(A), "zigzag");
  run.aSize = readColumn(bytes, col.a_size, new Float64Array(A), "plain");
  run.aThread = readColumn(bytes, col.a_thread, new Uint32Array(A), "plain");
  run.aStream = readColumn(bytes, col.a_stream, new Uint32Array(A), "plain");
  run.aY = axisOffsets(run);
  run.endUs = E > 0 ? run.timeUs[E - 1] : 0;
  buildInUse(run);
  run.colors = colorIndices(run);
  buildClasses(run);
  return run;
}
