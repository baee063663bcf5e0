"use strict";
// draw.js: the two canvases. The curve: for each pixel column, the least and
// most bytes in use over the events in it (through the pyramid), so a peak
// never falls between pixels. The rectangles: every allocation live in the
// window is written into one ImageData; one below a pixel becomes one pixel,
// so the cost is one step per allocation plus the pixels drawn (live blocks
// do not overlap, so their area is at most the canvas).

const V = { t0: 0, t1: 1, a0: 0, a1: 1, cursor: null, compare: false };
const THREAD_COLORS = [0x2b6cb0, 0x38a169, 0x805ad5, 0xd69e2e, 0x319795, 0xb83280, 0x718096, 0x2c7a7b, 0x9c4221, 0x4c51bf];
const SIZE_COLORS = [0x90cdf4, 0x63b3ed, 0x4299e1, 0x3182ce, 0x2b6cb0, 0x2c5282, 0x553c9a, 0x6b46c1, 0x805ad5, 0x9f7aea, 0xb794f4];

function rgbToPixel(rgb, shade) {
  const r = ((rgb >> 16) & 255) * shade, g = ((rgb >> 8) & 255) * shade, b = (rgb & 255) * shade;
  return (0xff000000 | (Math.round(b) << 16) | (Math.round(g) << 8) | Math.round(r)) >>> 0;
}
const THREAD_PX = THREAD_COLORS.map((c) => [rgbToPixel(c, 1), rgbToPixel(c, 0.7)]);
const SIZE_PX = SIZE_COLORS.map((c) => [rgbToPixel(c, 1), rgbToPixel(c, 0.7)]);

// The colour of each allocation (an index into FILL/EDGE), fixed at load.
function colorIndices(run) {
  const out = new Uint8Array(run.allocations), multi = run.header.threads.length > 1;
  for (let a = 0; a < run.allocations; a++) {
    out[a] = multi ? run.aThread[a] % THREAD_PX.length
      : THREAD_PX.length + Math.min(SIZE_PX.length - 1, Math.floor(Math.log2(Math.max(1, run.aSize[a])) / 3));
  }
  return out;
}
const FILL = THREAD_PX.concat(SIZE_PX).map((p) => p[0]);
const EDGE = THREAD_PX.concat(SIZE_PX).map((p) => p[1]);

function tx(t, w) { return ((t - V.t0) / (V.t1 - V.t0)) * w; }
function xt(x, w) { return V.t0 + (x / w) * (V.t1 - V.t0); }
function ay(a, h) { return h - ((a - V.a0) / (V.a1 - V.a0)) * h; }
function ya(y, h) { return V.a0 + ((h - y) / h) * (V.a1 - V.a0); }

// The events that can matter to the window [t0, t1]: from the last one
// before it to the first one after it.
function eventWindow(run, t0, t1) {
  const e0 = Math.max(0, lowerBound(run.timeUs, t0) - 1);
  const e1 = Math.min(run.events - 1, lowerBound(run.timeUs, t1));
  return [e0, e1];
}

function endTime(run, a) {
  return run.aEnd[a] < run.events ? run.timeUs[run.aEnd[a]] : run.endUs;
}

// The pixel box of allocation a: [x0, x1) x [y0, y1), at least one pixel
// (the same arithmetic as drawRects' loop).
function rectOf(run, a, w, h) {
  const sx = w / (V.t1 - V.t0), sy = h / (V.a1 - V.a0);
  const x0 = Math.floor((run.timeUs[run.aStart[a]] - V.t0) * sx);
  const x1 = Math.max(x0 + 1, Math.floor((endTime(run, a) - V.t0) * sx));
  const y0 = Math.floor(h - (run.aY[a] + run.aSize[a] - V.a0) * sy);
  const y1 = Math.max(y0 + 1, Math.floor(h - (run.aY[a] - V.a0) * sy));
  return [x0, x1, y0, y1];
}

// Writes every allocation live in the window into the pixels `px`: per
// lifetime class, those starting in [t0 - longest, t1], in one sequential
// loop with no allocation per rectangle (the 10^7-event case has 5 10^6).
function paintRects(run, px, w, h) {
  const sx = w / (V.t1 - V.t0), sy = h / (V.a1 - V.a0), vt0 = V.t0, vt1 = V.t1, va0 = V.a0;
  let drawn = 0;
  for (const k of run.classes) {
    const { t0, t1, y0: lo, y1: hi, col } = k;
    let j = lowerBound(t0, vt0 - k.longest);
    for (; j < t0.length; j++) {
      if (t0[j] > vt1) break;
      if (t1[j] < vt0) continue;
      let x0 = Math.floor((t0[j] - vt0) * sx), x1 = Math.floor((t1[j] - vt0) * sx);
      if (x1 <= x0) x1 = x0 + 1;
      let y0 = Math.floor(h - (hi[j] - va0) * sy), y1 = Math.floor(h - (lo[j] - va0) * sy);
      if (y1 <= y0) y1 = y0 + 1;
      if (x1 <= 0 || x0 >= w || y1 <= 0 || y0 >= h) continue;
      drawn++;
      const c = col[j];
      if (x1 - x0 === 1 && y1 - y0 === 1) { px[y0 * w + x0] = FILL[c]; continue; }
      const bordered = x1 - x0 >= 3 && y1 - y0 >= 3;
      if (x0 < 0) x0 = 0;
      if (x1 > w) x1 = w;
      if (y0 < 0) y0 = 0;
      if (y1 > h) y1 = h;
      for (let y = y0; y < y1; y++) {
        px.fill(bordered && y === y0 ? EDGE[c] : FILL[c], y * w + x0, y * w + x1);
        if (bordered) px[y * w + x0] = EDGE[c];
      }
    }
  }
  return drawn;
}

function drawRects(run, canvas) {
  const w = canvas.width, h = canvas.height, ctx = canvas.getContext("2d");
  const img = ctx.createImageData(w, h), px = new Uint32Array(img.data.buffer);
  px.fill(0xffffffff);
  const drawn = paintRects(run, px, w, h);
  ctx.putImageData(img, 0, 0);
  ctx.strokeStyle = "#a0aec0";
  ctx.setLineDash([4, 4]);
  for (const band of run.header.axis.collapsed_at) {
    const y = Math.round(ay(band, h)) + 0.5;
    ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(w, y); ctx.stroke();
  }
  ctx.setLineDash([]);
  drawMarkers(run, ctx, w, h);
  return drawn;
}

// Per pixel column: [least, most] bytes in use, NaN past the run's end.
function curveColumns(run, w) {
  const lo = new Float64Array(w), hi = new Float64Array(w);
  let i0 = lowerBound(run.timeUs, xt(0, w));
  for (let x = 0; x < w; x++) {
    const tb = xt(x + 1, w);
    let i1 = i0;
    while (i1 < run.events && run.timeUs[i1] < tb && i1 - i0 < 64) i1++;
    if (i1 - i0 >= 64) i1 = lowerBound(run.timeUs, tb);
    if (xt(x, w) > run.endUs || (i1 === 0 && run.events > 0 && run.timeUs[0] >= tb)) {
      lo[x] = hi[x] = NaN;
    } else {
      const prev = i0 > 0 ? run.inUse[i0 - 1] : 0;
      const [mn, mx] = i1 > i0 ? rangeMinMax(run, i0, i1) : [prev, prev];
      lo[x] = Math.min(mn, prev); hi[x] = Math.max(mx, prev);
    }
    i0 = i1;
  }
  return [lo, hi];
}

function drawCurve(runs, canvas) {
  const w = canvas.width, h = canvas.height, ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, w, h);
  const cols = runs.map((r) => curveColumns(r, w));
  let top = 1;
  for (const [, hi] of cols) for (let x = 0; x < w; x++) if (hi[x] > top) top = hi[x];
  top *= 1.08;
  const y = (v) => h - (v / top) * (h - 2);
  ctx.fillStyle = "#bee3f8"; ctx.strokeStyle = "#2b6cb0";
  const [lo, hi] = cols[0];
  for (let x = 0; x < w; x++) {
    if (Number.isNaN(hi[x])) continue;
    ctx.fillRect(x, y(hi[x]), 1, h - y(hi[x]));
  }
  ctx.fillStyle = "#2b6cb0";
  for (let x = 0; x < w; x++) {
    if (Number.isNaN(hi[x])) continue;
    ctx.fillRect(x, y(hi[x]), 1, Math.max(1, y(lo[x]) - y(hi[x])));
  }
  if (cols.length > 1) {
    const [, other] = cols[1];
    ctx.strokeStyle = "#dd6b20"; ctx.lineWidth = 2; ctx.beginPath();
    let pen = false;
    for (let x = 0; x < w; x++) {
      if (Number.isNaN(other[x])) { pen = false; continue; }
      if (pen) ctx.lineTo(x + 0.5, y(other[x])); else ctx.moveTo(x + 0.5, y(other[x]));
      pen = true;
    }
    ctx.stroke(); ctx.lineWidth = 1;
  }
  ctx.fillStyle = "#4a5568"; ctx.font = Math.round(11 * devicePixelRatio) + "px system-ui, sans-serif";
  for (let k = 1; k <= 4; k++) {
    const v = (top / 4.32) * k;
    ctx.fillText(humanBytes(v), 4, y(v) - 2);
    ctx.fillRect(0, Math.round(y(v)), 6, 1);
  }
  drawMarkers(runs[0], ctx, w, h);
}

// The failed allocations (red lines; a report adds a triangle) and the cursor.
function drawMarkers(run, ctx, w, h) {
  ctx.strokeStyle = "#c53030"; ctx.fillStyle = "#c53030";
  for (const f of run.header.failures) {
    const x = Math.round(tx(run.timeUs[f.event], w)) + 0.5;
    if (x < 0 || x > w) continue;
    ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, h); ctx.stroke();
    if (f.report !== null) {
      ctx.beginPath(); ctx.moveTo(x - 6, 0); ctx.lineTo(x + 6, 0); ctx.lineTo(x, 10); ctx.fill();
    }
  }
  for (const r of run.header.reports) {
    if (r.failure !== null || r.time === null) continue;
    const x = Math.round(tx(r.time * 1e6, w)) + 0.5;
    ctx.beginPath(); ctx.moveTo(x - 6, 0); ctx.lineTo(x + 6, 0); ctx.lineTo(x, 10); ctx.fill();
  }
  if (V.cursor !== null) {
    const x = Math.round(tx(V.cursor, w)) + 0.5;
    ctx.strokeStyle = "#1a202c"; ctx.setLineDash([3, 3]);
    ctx.beginPath(); ctx.moveTo(x, 0); ctx.lineTo(x, h); ctx.stroke();
    ctx.setLineDash([]);
  }
}

// The allocation under pixel (x, y) of the rectangles' canvas, or -1: one
// that contains it, else the smallest within `tol` pixels.
function hitTest(run, x, y, w, h, tol) {
  const [e0, e1] = eventWindow(run, xt(x - tol, w), xt(x + tol, w));
  let best = -1, bestArea = Infinity, bestInside = false;
  forEachLive(run, e0, e1, (a) => {
    const [x0, x1, y0, y1] = rectOf(run, a, w, h);
    const inside = x >= x0 && x < x1 && y >= y0 && y < y1;
    const near = x >= x0 - tol && x < x1 + tol && y >= y0 - tol && y < y1 + tol;
    if (!near || (bestInside && !inside)) return;
    const area = (x1 - x0) * (y1 - y0);
    if ((inside && !bestInside) || area < bestArea) { best = a; bestArea = area; bestInside = inside; }
  });
  return best;
}
