// soakd's web page: the runs, a run, the run in progress and the trends
// across runs, all read from the daemon's /v1 API. Everything a run or a
// report says is put on the page as text (textContent), never as markup.
"use strict";

const TOKEN_KEY = "soakd.token";
const main = document.getElementById("main");

// The verdicts as the terminal words and colours them.
const VERDICTS = {
  pass: ["PASS", "pass"], fail: ["FAIL", "fail"], inconclusive: ["INCONCLUSIVE", "warn"],
  not_measured: ["NOT MEASURED", "warn"], aborted: ["ABORTED", "fail"], running: ["RUNNING", "info"],
};

// The figures the trends draw: the KPI row, its title, and whether the
// arms are drawn (a KPI of each arm) beside GraphQL's variance from REST.
const TREND_METRICS = [
  ["cpu_us_per_request", "CPU per request"],
  ["alloc_bytes_per_request", "Heap allocated per request"],
  ["gc_percent", "GC % time"],
  ["latency_p99_ms", "Latency p99"],
  ["throughput_rps", "Throughput"],
];

class HTTPError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// el makes an element: attrs are attributes (on* are never used), kids
// are nodes or strings (as text).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function headers() {
  const h = { "Accept": "application/json" };
  const t = sessionStorage.getItem(TOKEN_KEY);
  if (t) h["Authorization"] = "Bearer " + t;
  return h;
}

// api calls the daemon's API; a 401 asks for the token and tries again.
async function api(path, opts = {}) {
  for (;;) {
    const resp = await fetch(path, { ...opts, headers: { ...headers(), ...(opts.headers || {}) }, cache: "no-store" });
    if (resp.status === 401) {
      await askToken(resp);
      continue;
    }
    if (!resp.ok) {
      let msg = resp.status + " " + resp.statusText;
      try { msg = (await resp.json()).error.message || msg; } catch (_) { /* not JSON */ }
      throw new HTTPError(resp.status, msg);
    }
    return resp;
  }
}
const getJSON = async (path) => (await api(path)).json();

let tokenWaiters = null;
// askToken shows the token dialog once for every call that needs it.
function askToken(resp) {
  const dialog = document.getElementById("token-dialog");
  const error = document.getElementById("token-error");
  error.textContent = sessionStorage.getItem(TOKEN_KEY) ? "The daemon refused that token." : "";
  if (!tokenWaiters) {
    tokenWaiters = [];
    dialog.showModal();
    document.getElementById("token-input").focus();
  }
  return new Promise((resolve) => tokenWaiters.push(resolve));
}
function tokenGiven(ev) {
  ev.preventDefault();
  const input = document.getElementById("token-input");
  sessionStorage.setItem(TOKEN_KEY, input.value.trim());
  input.value = "";
  document.getElementById("token-dialog").close();
  const ws = tokenWaiters || [];
  tokenWaiters = null;
  ws.forEach((r) => r());
}

function verdictBadge(v) {
  const [word, cls] = VERDICTS[v] || [String(v || "UNREADABLE").toUpperCase(), "warn"];
  return el("span", { class: "verdict " + cls }, word);
}

function when(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function duration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "—";
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(r).padStart(2, "0")}s` : `${r}s`;
}

function runDuration(r) {
  const a = Date.parse(r.started_at), b = r.finished_at ? Date.parse(r.finished_at) : Date.now();
  return isFinite(a) && isFinite(b) ? duration((b - a) / 1000) : "—";
}

const num = (v, digits = 0) => v === null || v === undefined ? "—" :
  Number(v).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + u[i];
}

function show(...nodes) {
  main.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined && n !== false));
}

function failure(err) {
  return el("p", { class: "error", role: "alert" }, "The daemon could not answer: " + err.message);
}

// ---- the list of runs ----

async function runsPage(params) {
  show(el("h1", {}, "Runs"), el("p", {}, "Loading…"));
  const [{ runs }, hist, sched] = await Promise.all([
    getJSON("/v1/runs"), getJSON("/v1/history"),
    getJSON("/v1/schedules").catch(() => null),
  ]);
  // Asked only when there is one: a 404 is an error in the console.
  const soak = hist.soak ? await getJSON("/v1/soak").catch(() => null) : null;
  const state = document.getElementById("daemon-state");
  state.textContent = hist.read_only ? "history read-only: " + hist.reason : "";
  state.className = hist.read_only ? "warn" : "";

  const profiles = [...new Set(runs.map((r) => r.profile))].sort();
  const verdicts = [...new Set(runs.map((r) => r.verdict || "unreadable"))].sort();
  const pick = (name, label, values) => {
    const s = el("select", { id: "filter-" + name, name },
      el("option", { value: "" }, "all"), values.map((v) => el("option", { value: v, selected: params.get(name) === v }, v)));
    s.addEventListener("change", () => {
      const q = new URLSearchParams(params);
      if (s.value) q.set(name, s.value); else q.delete(name);
      location.hash = "#/?" + q.toString();
    });
    return el("label", { for: "filter-" + name }, label + " ", s);
  };
  const shown = runs.filter((r) => (!params.get("profile") || r.profile === params.get("profile")) &&
    (!params.get("verdict") || (r.verdict || "unreadable") === params.get("verdict")));
  const running = runs.find((r) => r.status === "running");
  const rows = shown.map((r) => el("tr", { "data-run": r.id },
    el("td", {}, el("a", { href: "#/run/" + encodeURIComponent(r.id) }, r.id), r.baseline ? el("span", { class: "baseline", title: "the baseline soakd compare uses" }, " baseline") : null),
    el("td", {}, r.profile),
    el("td", {}, verdictBadge(r.verdict)),
    el("td", {}, when(r.started_at)),
    el("td", { class: "num" }, runDuration(r)),
    el("td", { class: "reasons" }, (r.reasons || []).slice(0, 2).join("; ") || r.reason || "")));
  show(
    el("h1", {}, "Runs"),
    running ? el("p", { class: "live-link" }, "In progress: ", el("a", { href: "#/run/" + encodeURIComponent(running.id) }, running.id + " (" + running.profile + ")")) : null,
    sched && sched.schedules && sched.schedules.length ? schedulesTable(sched.schedules) : null,
    soak ? soakSection(soak) : null,
    el("div", { class: "filters", role: "search" }, pick("profile", "Profile", profiles), pick("verdict", "Verdict", verdicts),
      el("span", { id: "run-count" }, `${shown.length} of ${runs.length} runs`)),
    el("div", { class: "scroll" }, el("table", { id: "runs" },
      el("thead", {}, el("tr", {}, ["Run", "Profile", "Verdict", "Started (UTC)", "Duration", "Why"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 6 }, "No runs."))))));
}

function schedulesTable(list) {
  return el("section", { "aria-labelledby": "schedules-title" },
    el("h2", { id: "schedules-title" }, "Schedules"),
    el("div", { class: "scroll" }, el("table", { id: "schedules" },
      el("thead", {}, el("tr", {}, ["Schedule", "When", "Profile", "Next", "Last"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, list.map((s) => {
        const last = (s.recent || [])[0];
        return el("tr", {}, el("td", {}, s.name), el("td", {}, s.cron + " " + (s.timezone || "UTC")), el("td", {}, s.profile),
          el("td", {}, when(s.next)),
          el("td", {}, last ? [last.outcome + " " + when(last.slot) + " ", last.run ? el("a", { href: "#/run/" + encodeURIComponent(last.run) }, last.run) : "", last.reason ? " (" + last.reason + ")" : ""] : "—"));
      })))));
}

// soakSection is the data directory's soak (in progress or the last one):
// a line per cycle with the figures the drift rules watch, then each
// drift rule's outcome and why.
function soakSection(sk) {
  const cycles = sk.cycles || [], drift = sk.drift || [];
  const fig = (c, field, text) => (c.not_measured && field in c.not_measured) || c[field] === null || c[field] === undefined ? "not measured" : text(c[field]);
  return el("section", { id: "soak", "aria-labelledby": "soak-title" },
    el("h2", { id: "soak-title" }, "Soak " + sk.soak + " ", verdictBadge(sk.status === "running" ? "running" : sk.verdict)),
    el("p", {}, `profile ${sk.profile}, ${sk.status}, ${cycles.length} cycle${cycles.length === 1 ? "" : "s"}, started ${when(sk.started_at)}, updated ${when(sk.updated_at)}`),
    el("div", { class: "scroll" }, el("table", { id: "soak-cycles" },
      el("thead", {}, el("tr", {}, ["Cycle", "Run", "Verdict", "Live heap", "RSS", "GC %", "CPU/req"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, cycles.length ? cycles.map((c) => el("tr", { "data-cycle": c.cycle },
        el("td", { class: "num" }, c.cycle),
        el("td", {}, c.run ? el("a", { href: "#/run/" + encodeURIComponent(c.run) }, c.run) : "—"),
        el("td", {}, c.interrupted ? "interrupted (not judged)" : verdictBadge(c.verdict), c.error ? " " + c.error : ""),
        el("td", { class: "num" }, fig(c, "heap_live_bytes", bytes)),
        el("td", { class: "num" }, fig(c, "rss_bytes", bytes)),
        el("td", { class: "num" }, fig(c, "gc_percent", (v) => num(v, 2) + " %")),
        el("td", { class: "num" }, fig(c, "cpu_us_per_request", (v) => num(v, 1) + " µs")))) :
        el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No cycle has finished yet."))))),
    drift.length ? el("ul", { id: "soak-drift" }, drift.map((d) => el("li", {}, verdictBadge(d.outcome), " " + d.title + ": " + d.detail))) : null);
}

// ---- one run ----

let liveAbort = null; // stops the event stream of the run page shown

async function runPage(id) {
  show(el("h1", {}, "Run " + id), el("p", {}, "Loading…"));
  const { run, report } = await getJSON("/v1/runs/" + encodeURIComponent(id));
  const files = (await getJSON("/v1/runs/" + encodeURIComponent(id) + "/files")).files;
  const head = el("div", { class: "run-head" },
    el("h1", {}, "Run " + run.id, " ", verdictBadge(run.verdict)),
    el("dl", {},
      el("dt", {}, "Profile"), el("dd", {}, run.profile),
      el("dt", {}, "Status"), el("dd", { id: "run-status" }, run.status),
      el("dt", {}, "Started"), el("dd", {}, when(run.started_at)),
      el("dt", {}, "Duration"), el("dd", {}, runDuration(run)),
      el("dt", {}, "Directory"), el("dd", {}, el("code", {}, run.dir)),
      run.baseline ? [el("dt", {}, "Baseline"), el("dd", {}, "yes: soakd compare compares releases against this run")] : null));
  const why = (run.reasons && run.reasons.length) || run.reason ?
    el("section", { "aria-labelledby": "why-title" }, el("h2", { id: "why-title" }, "Why the verdict is not pass"),
      el("ul", { id: "reasons" }, (run.reasons || []).map((r) => el("li", {}, r)), run.reason ? el("li", {}, run.reason) : null)) : null;
  const live = run.status === "running" ? livePanel(run) : null;
  const fileList = el("section", { "aria-labelledby": "files-title" }, el("h2", { id: "files-title" }, "Files"),
    el("ul", { id: "files", class: "files" }, files.map((f) => {
      const a = el("a", { href: "#", "data-file": f.name }, f.name);
      a.addEventListener("click", (ev) => { ev.preventDefault(); download(run.id, f.name); });
      return el("li", {}, a, " ", el("span", { class: "muted" }, bytes(f.bytes)));
    })));
  const hasHTML = files.some((f) => f.name === "report.html");
  const open = el("button", { type: "button", id: "open-report", class: "plain" }, "Open report.html in a new tab");
  open.addEventListener("click", async () => { window.open(await ticketURL(run.id, "report.html"), "_blank", "noopener"); });
  const frame = hasHTML ? el("section", { "aria-labelledby": "report-title" }, el("h2", { id: "report-title" }, "Report"), el("p", {}, open),
    el("iframe", { id: "report", title: "report.html of run " + run.id, sandbox: "allow-scripts" })) : null;
  show(head, why, live, frame, fileList,
    report === null && run.status !== "running" ? el("p", { class: "muted" }, "This run has no readable report.json.") : null);
  if (hasHTML) document.getElementById("report").src = await ticketURL(run.id, "report.html");
  if (live) follow(run.id);
}

const fileURL = (id, name) => "/v1/runs/" + encodeURIComponent(id) + "/files/" + encodeURIComponent(name);

// ticketURL is a URL that opens one run file without the token header,
// for a few minutes: what a frame or a download link needs.
async function ticketURL(id, name) {
  return (await (await api(fileURL(id, name) + "/ticket", { method: "POST" })).json()).url;
}

async function download(id, name) {
  const a = el("a", { href: await ticketURL(id, name), download: name });
  document.body.append(a);
  a.click();
  a.remove();
}

function livePanel(run) {
  const stop = el("button", { id: "stop", type: "button" }, "Stop this run");
  stop.addEventListener("click", async () => {
    if (!confirm("Stop run " + run.id + "? It stops gracefully and writes its partial report.")) return;
    stop.disabled = true;
    try {
      await api("/v1/runs/" + encodeURIComponent(run.id) + "/stop", { method: "POST" });
      document.getElementById("live-position").textContent = "Stopping…";
    } catch (e) {
      stop.disabled = false;
      document.getElementById("live-error").textContent = "Could not stop: " + e.message;
    }
  });
  return el("section", { id: "live", "aria-labelledby": "live-title", "aria-live": "polite" },
    el("h2", { id: "live-title" }, "In progress"),
    el("p", { id: "live-position" }, "Waiting for the first phase…"),
    el("div", { class: "scroll" }, el("table", { id: "live-running" },
      el("thead", {}, el("tr", {}, ["Phase", "Progress", "Elapsed", "Requests", "Errors", "req/s", "p99"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}))),
    el("h3", {}, "Finished phases"),
    el("div", { class: "scroll" }, el("table", { id: "live-finished" },
      el("thead", {}, el("tr", {}, ["Phase", "Requests", "Errors", "req/s", "p99", "Took"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}))),
    el("p", { id: "live-error", class: "error", role: "alert" }),
    stop);
}

function showLive(st) {
  const pos = document.getElementById("live-position");
  if (!pos) return;
  const parts = [];
  if (st.phases) parts.push(`phase ${st.phase} of ${st.phases}`);
  if (st.rounds) parts.push(`round ${st.round} of ${st.rounds}`);
  parts.push(duration(st.elapsed_seconds) + " elapsed");
  parts.push(st.left_seconds === null ? "time left unknown" : "about " + duration(st.left_seconds) + " left");
  pos.textContent = parts.join(", ");
  const ms = (v) => v === null || v === undefined ? "—" : num(v, 2) + " ms";
  document.querySelector("#live-running tbody").replaceChildren(...st.running.map((p) => el("tr", { "data-phase": p.name },
    el("td", {}, p.name),
    el("td", {}, el("progress", { max: 1, value: p.fraction, "aria-label": p.name + " progress" }), " " + Math.round(p.fraction * 100) + " %"),
    el("td", { class: "num" }, duration(p.elapsed_seconds)),
    el("td", { class: "num", "data-requests": p.requests }, num(p.requests)),
    el("td", { class: "num" }, num(p.errors)),
    el("td", { class: "num" }, num(p.rps)),
    el("td", { class: "num" }, ms(p.p99_ms)))));
  const none = el("tr", {}, el("td", { colspan: 6, class: "muted" }, "None yet."));
  document.querySelector("#live-finished tbody").replaceChildren(...(st.finished.length ? [] : [none]), ...st.finished.map((p) => el("tr", {},
    el("td", {}, p.name + (p.interrupted ? " (interrupted)" : "")),
    el("td", { class: "num" }, num(p.requests)), el("td", { class: "num" }, num(p.errors)),
    el("td", { class: "num" }, num(p.rps)), el("td", { class: "num" }, ms(p.p99_ms)),
    el("td", { class: "num" }, duration(p.elapsed_seconds)))));
}

// follow reads the run's server-sent events (through fetch, so the token
// goes in a header) until the run ends, then shows the finished run.
async function follow(id) {
  if (liveAbort) liveAbort.abort();
  const ctl = new AbortController();
  liveAbort = ctl;
  try {
    const resp = await api("/v1/runs/" + encodeURIComponent(id) + "/events", { signal: ctl.signal, headers: { "Accept": "text/event-stream" } });
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (event === "progress") showLive(JSON.parse(data));
        if (event === "end") {
          if (liveAbort === ctl) route();
          return;
        }
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") {
      const err = document.getElementById("live-error");
      if (err) err.textContent = "Lost the run's progress: " + e.message;
    }
  }
}

// ---- trends across runs ----

async function trendsPage(params) {
  show(el("h1", {}, "Trends"), el("p", {}, "Loading…"));
  const { runs } = await getJSON("/v1/runs");
  const profiles = [...new Set(runs.map((r) => r.profile))].sort();
  const profile = params.get("profile") || profiles[0] || "";
  const select = el("select", { id: "trend-profile" }, profiles.map((p) => el("option", { value: p, selected: p === profile }, p)));
  select.addEventListener("change", () => { location.hash = "#/trends?profile=" + encodeURIComponent(select.value); });
  const baseline = (runs.find((r) => r.baseline && r.profile === profile) || {}).id;
  const charts = el("div", { class: "charts" });
  show(el("h1", {}, "Trends"),
    el("div", { class: "filters" }, el("label", { for: "trend-profile" }, "Profile ", select)),
    el("p", { class: "muted" }, "Each point is a complete run (click it to open the run). A dashed line marks a change point (the first run at the new level), a ring the baseline."),
    charts);
  if (!profile) { charts.append(el("p", {}, "No runs yet.")); return; }
  for (const [metric, title] of TREND_METRICS) {
    const box = el("figure", { class: "trend", "data-metric": metric }, el("figcaption", {}, title), el("p", { class: "muted" }, "Loading…"));
    charts.append(box);
    const arms = await Promise.all(["graphql", "rest", "delta"].map((arm) =>
      getJSON(`/v1/history/changes?profile=${encodeURIComponent(profile)}&metric=${metric}.${arm}`).catch((e) => ({ error: e.message }))));
    box.replaceChildren(el("figcaption", {}, title), trendChart(arms[0], arms[1], baseline),
      el("p", { class: "subcaption" }, "GraphQL's variance from REST"), trendChart(arms[2], null, baseline, "GraphQL − REST"));
  }
}

// trendChart draws a series (and a second, REST, beside it) over the runs
// with its change points and the baseline; every point links to its run.
function trendChart(a, b, baseline, label) {
  if (a.error) return el("p", { class: "error" }, a.error);
  const series = [[a, "graphql", label || "GraphQL"]];
  if (b && !b.error && b.runs.some((r) => r.value !== null)) series.push([b, "rest", "REST"]);
  const values = series.flatMap(([s]) => s.runs.map((r) => r.value).filter((v) => v !== null));
  const wrap = el("div", { class: "trend-chart", "data-series": series.length, "data-changes": a.changes.length });
  if (!values.length) { wrap.append(el("p", { class: "muted" }, "Not measured in any run of this profile.")); return wrap; }
  const W = 640, H = 190, L = 64, R = 12, T = 12, B = 28;
  let lo = Math.min(...values), hi = Math.max(...values);
  if (hi === lo) { hi += Math.abs(hi) * 0.05 || 1; lo -= Math.abs(lo) * 0.05 || 1; }
  const pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
  const n = a.runs.length;
  const x = (i) => L + (n > 1 ? (i * (W - L - R)) / (n - 1) : (W - L - R) / 2);
  const y = (v) => T + ((hi - v) * (H - T - B)) / (hi - lo);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": (label || "GraphQL and REST") + " over " + n + " runs, " + a.changes.length + " change points" });
  for (let k = 0; k <= 4; k++) {
    const v = lo + ((hi - lo) * k) / 4;
    g.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }),
      svg("text", { x: L - 6, y: y(v) + 4, class: "tick", "text-anchor": "end" }, num(v, Math.abs(hi - lo) < 10 ? 2 : 0)));
  }
  g.append(svg("text", { x: L, y: H - 6, class: "tick" }, when(a.runs[0].started_at).slice(0, 16)),
    svg("text", { x: W - R, y: H - 6, class: "tick", "text-anchor": "end" }, when(a.runs[n - 1].started_at).slice(0, 16)));
  for (const c of a.changes) {
    g.append(svg("line", { x1: x(c.index), x2: x(c.index), y1: T, y2: H - B, class: "change", "data-run": c.run }),
      svg("text", { x: x(c.index) + 3, y: T + 10, class: "change-label" }, "change"));
  }
  for (const [s, arm, name] of series) {
    const pts = s.runs.map((r, i) => [r, i]).filter(([r]) => r.value !== null);
    g.append(svg("polyline", { points: pts.map(([r, i]) => `${x(i)},${y(r.value)}`).join(" "), class: "line " + arm }));
    for (const [r, i] of pts) {
      const link = svg("a", { href: "#/run/" + encodeURIComponent(r.id), class: "point-link" },
        svg("circle", { cx: x(i), cy: y(r.value), r: r.id === baseline ? 6 : 3.5, class: "point " + arm + (r.id === baseline ? " baseline" : ""), "data-run": r.id }),
        svg("title", {}, `${name} ${num(r.value, 2)} ${s.unit || ""}, run ${r.id}, ${(VERDICTS[r.verdict] || [r.verdict])[0]}`));
      g.append(link);
    }
  }
  wrap.append(g, el("p", { class: "legend" }, series.map(([s, arm, name]) => el("span", { class: "key " + arm }, name + (s.unit ? " (" + s.unit + ")" : ""))),
    a.changes.map((c) => el("span", { class: "key change" }, `change at ${c.run}: ${num(c.before, 2)} → ${num(c.after, 2)} (${c.p_value < 0.0001 ? "p < 0.0001" : "p = " + num(c.p_value, 4)})`))));
  return wrap;
}

// ---- routing ----

// route draws the page the location's hash names. keep is the id of the
// filter the reader changed to get here: the page is drawn anew around
// it, so the focus goes back to it (unless it moved meanwhile), and the
// reader keeps their place on a keyboard.
async function route(keep) {
  if (liveAbort) { liveAbort.abort(); liveAbort = null; }
  const [path, query] = (location.hash.replace(/^#/, "") || "/").split("?");
  const params = new URLSearchParams(query || "");
  for (const a of document.querySelectorAll("nav a")) {
    const on = (a.dataset.nav === "trends") === path.startsWith("/trends");
    if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  try {
    if (path.startsWith("/run/")) await runPage(decodeURIComponent(path.slice(5)));
    else if (path.startsWith("/trends")) await trendsPage(params);
    else await runsPage(params);
  } catch (e) {
    show(el("h1", {}, "soakd"), failure(e));
  }
  const lost = document.activeElement === null || document.activeElement === document.body || document.activeElement === main;
  if (keep && lost) (document.getElementById(keep) || main).focus();
  main.dataset.ready = path;
}

document.getElementById("token-form").addEventListener("submit", tokenGiven);
// A navigation focuses the new page's main, so a keyboard goes on from
// its top; a filter (a select of the page) keeps the focus (see route).
window.addEventListener("hashchange", () => {
  const a = document.activeElement;
  const keep = a instanceof HTMLSelectElement && a.id && main.contains(a) ? a.id : "";
  route(keep);
  if (!keep) main.focus();
});
route();
