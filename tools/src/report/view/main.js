"use strict";
// main.js: loads the runs, wires zoom (wheel, buttons, keys), pan (drag),
// hover (tooltip), click and scrub (state at a moment) and the comparison
// toggle, and redraws at most once a frame. `window.rmmView` is the page's
// handle for tests; `document.body.dataset.ready` is set after the first
// draw.

const RUNS = [];
const timings = {};
let pending = false;

function fitCanvas(c) {
  const r = c.getBoundingClientRect();
  const w = Math.max(1, Math.round(r.width * devicePixelRatio)), h = Math.max(1, Math.round(r.height * devicePixelRatio));
  if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
}

function drawNow() {
  pending = false;
  const t = performance.now();
  const curve = document.getElementById("curve"), rects = document.getElementById("rects");
  fitCanvas(curve); fitCanvas(rects);
  const main = RUNS[0];
  drawCurve(V.compare && RUNS[1] ? [main, RUNS[1]] : [main], curve);
  const drawn = drawRects(main, rects);
  const axis = document.getElementById("axis");
  axis.innerHTML = [V.t0, (V.t0 + V.t1) / 2, V.t1].map((u) => "<span>" + escapeHtml(timeOfDay(main, Math.round(u))) + "</span>").join("");
  timings.last_draw_ms = performance.now() - t;
  document.getElementById("status").textContent = main.events + " events, " + main.allocations + " allocations; " +
    drawn + " drawn in " + timings.last_draw_ms.toFixed(0) + " ms";
}

function requestDraw() {
  if (!pending) { pending = true; requestAnimationFrame(drawNow); }
}

function resetView() {
  const main = RUNS[0];
  let end = main.endUs;
  if (V.compare && RUNS[1]) end = Math.max(end, RUNS[1].endUs);
  const pad = Math.max(1, end * 0.01);
  V.t0 = -pad; V.t1 = end + pad;
  V.a0 = 0; V.a1 = main.header.axis.total * 1.02;
  requestDraw();
}

function zoomTime(factor, at) {
  const span = Math.max(V.t1 - V.t0, 1e-3);
  const mid = at === undefined ? (V.t0 + V.t1) / 2 : at;
  const newSpan = Math.max(span * factor, 2);
  V.t0 = mid - ((mid - V.t0) / span) * newSpan;
  V.t1 = V.t0 + newSpan;
  requestDraw();
}

function zoomAddress(factor, at) {
  const span = V.a1 - V.a0, newSpan = Math.max(span * factor, 1);
  V.a0 = at - ((at - V.a0) / span) * newSpan;
  V.a1 = V.a0 + newSpan;
  requestDraw();
}

function canvasPoint(c, ev) {
  const r = c.getBoundingClientRect();
  return [(ev.clientX - r.left) * devicePixelRatio, (ev.clientY - r.top) * devicePixelRatio];
}

function setCursor(us) {
  V.cursor = us;
  const main = RUNS[0];
  renderState(main, us, document.getElementById("state"));
  const scrub = document.getElementById("scrub");
  scrub.value = String(Math.round(((us - V.t0) / (V.t1 - V.t0)) * 1000));
  requestDraw();
}

function showTooltip(ev, text) {
  const tip = document.getElementById("tooltip");
  if (!text) { tip.hidden = true; return; }
  tip.textContent = text;
  tip.hidden = false;
  const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4);
  const y = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 4);
  tip.style.left = Math.max(0, x) + "px"; tip.style.top = Math.max(0, y) + "px";
}

function hoverText(c, ev) {
  const main = RUNS[0], [x, y] = canvasPoint(c, ev), tol = 3 * devicePixelRatio;
  for (const f of main.header.failures) {
    if (Math.abs(tx(main.timeUs[f.event], c.width) - x) <= tol) return failureText(main, f);
  }
  if (c.id !== "rects") return null;
  const a = hitTest(main, x, y, c.width, c.height, tol);
  return a < 0 ? null : allocationText(main, a);
}

function wireCanvas(c) {
  let down = null;
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const [x, y] = canvasPoint(c, ev), factor = ev.deltaY > 0 ? 1.25 : 0.8;
    if (ev.shiftKey && c.id === "rects") zoomAddress(factor, ya(y, c.height));
    else zoomTime(factor, xt(x, c.width));
  }, { passive: false });
  c.addEventListener("mousedown", (ev) => { down = { x: ev.clientX, y: ev.clientY, t0: V.t0, t1: V.t1, a0: V.a0, a1: V.a1, moved: false }; });
  window.addEventListener("mouseup", (ev) => {
    if (down && !down.moved && ev.target === c) setCursor(xt(canvasPoint(c, ev)[0], c.width));
    down = null;
  });
  c.addEventListener("mousemove", (ev) => {
    if (down && (ev.buttons & 1)) {
      const dx = ev.clientX - down.x, dy = ev.clientY - down.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) down.moved = true;
      if (!down.moved) return;
      const r = c.getBoundingClientRect(), dt = (dx / r.width) * (down.t1 - down.t0);
      V.t0 = down.t0 - dt; V.t1 = down.t1 - dt;
      if (c.id === "rects") { const da = (dy / r.height) * (down.a1 - down.a0); V.a0 = down.a0 + da; V.a1 = down.a1 + da; }
      showTooltip(ev, null);
      requestDraw();
      return;
    }
    showTooltip(ev, hoverText(c, ev));
  });
  c.addEventListener("mouseleave", (ev) => showTooltip(ev, null));
}

// Client coordinates of the middle of allocation a's visible box, or null.
function locate(a) {
  const c = document.getElementById("rects"), r = c.getBoundingClientRect();
  let [x0, x1, y0, y1] = rectOf(RUNS[0], a, c.width, c.height);
  x0 = Math.max(0, x0); x1 = Math.min(c.width, x1); y0 = Math.max(0, y0); y1 = Math.min(c.height, y1);
  if (x1 <= x0 || y1 <= y0) return null;
  return { x: r.left + (x0 + x1) / 2 / devicePixelRatio, y: r.top + (y0 + y1) / 2 / devicePixelRatio, width: (x1 - x0) / devicePixelRatio, height: (y1 - y0) / devicePixelRatio };
}

function start() {
  const t = performance.now();
  for (let i = 0; ; i++) { const run = loadRun(i); if (!run) break; RUNS.push(run); }
  timings.load_ms = performance.now() - t;
  const main = RUNS[0];
  renderSummary(main, document.getElementById("summary"));
  renderOom(main, document.getElementById("oom"));
  if (RUNS[1]) {
    const label = document.getElementById("compare-label"), box = document.getElementById("compare");
    label.hidden = false;
    document.getElementById("compare-name").textContent = RUNS[1].header.name;
    box.addEventListener("change", () => {
      V.compare = box.checked;
      const cmp = document.getElementById("comparison");
      cmp.hidden = !box.checked;
      if (box.checked) renderComparison(main, RUNS[1], cmp);
      resetView();
    });
  }
  wireCanvas(document.getElementById("curve"));
  wireCanvas(document.getElementById("rects"));
  document.getElementById("zoom-in").onclick = () => zoomTime(0.5);
  document.getElementById("zoom-out").onclick = () => zoomTime(2);
  document.getElementById("reset").onclick = resetView;
  document.getElementById("scrub").addEventListener("input", (ev) => setCursor(V.t0 + (Number(ev.target.value) / 1000) * (V.t1 - V.t0)));
  window.addEventListener("keydown", (ev) => {
    if (ev.key === "+" || ev.key === "=") zoomTime(0.5);
    else if (ev.key === "-") zoomTime(2);
    else if (ev.key === "0") resetView();
  });
  window.addEventListener("resize", requestDraw);
  resetView();
  requestAnimationFrame(() => {
    drawNow();
    timings.ready_ms = performance.now() - t;
    window.rmmView = { runs: RUNS, view: V, timings, locate, zoomTime, setCursor, stateAt };
    document.body.dataset.ready = "1";
  });
}

try {
  start();
} catch (e) {
  document.getElementById("status").textContent = "could not load the data: " + e.message;
  document.body.dataset.ready = "error";
  throw e;
}
