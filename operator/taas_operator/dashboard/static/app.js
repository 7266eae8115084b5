/* TaaS dashboard: one page, two views (#/ the jobs list, #/job/NS/NAME one job).
 *
 * Data comes from the server as server-sent events (EventSource reconnects by itself):
 *   /api/jobs/stream               status, snapshot (every row), changes (upserts, removals)
 *   /api/jobs/NS/NAME/stream       problem, detail (the whole job page), missing
 *   /api/jobs/NS/NAME/logs         lines ([{replica, text}]), problem, end
 * Actions are POST/DELETE with the X-TaaS-Dashboard header. Every text from the server is set
 * with textContent (never parsed as HTML). No framework: the page is small and ships in the wheel.
 */
"use strict";

const $ = (id) => document.getElementById(id);
const ACTION_HEADERS = { "X-TaaS-Dashboard": "1" };
const MAX_LOG_LINES = 5000;
const COLORS = ["#0e7490", "#a16207", "#9333ea", "#15803d", "#1d4ed8", "#dc2626", "#0891b2",
  "#ca8a04", "#c026d3", "#16a34a", "#2563eb"];

const state = {
  info: null,
  jobs: new Map(),         // "ns/name" -> summary
  rows: new Map(),         // "ns/name" -> <tr>
  listStream: null,
  jobStream: null,
  logStream: null,
  current: null,           // {ns, name}
  detail: null,
  permissions: null,
  points: [],              // [step, loss, {scalar: value}] seen for the current job
  chart: null,
  logColors: new Map(),
  logLines: 0,
};

/* ---------- small helpers ---------- */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

function age(iso) {
  if (!iso) return "";
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return duration(seconds);
}

function duration(seconds) {
  if (seconds == null || !isFinite(seconds)) return "";
  seconds = Math.round(seconds);
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m${seconds % 60 ? String(seconds % 60).padStart(2, "0") + "s" : ""}`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? String(m % 60).padStart(2, "0") + "m" : ""}`;
  return `${Math.floor(h / 24)}d`;
}

/* Progress as the TFJob status holds it (written by the operator or taas run): the names the
   status uses, read defensively so an older operator that writes none shows nothing. */
function progressOf(job) {
  const p = job && job.progress;
  if (!p) return null;
  const step = p.step ?? p.globalStep ?? null;
  const max = p.maxSteps ?? null;
  let percent = p.percent ?? p.percentage ?? null;
  if (percent == null && step != null && max) percent = (100 * step) / max;
  const eta = p.etaSeconds ?? p.remainingSeconds ?? null;
  return { percent, step, max, eta, loss: p.loss ?? null,
    rate: p.examplesPerSecond ?? null, updated: p.reportTime ?? p.lastUpdateTime ?? null,
    scalars: p.scalars || null, raw: p };
}

function stateClass(s) { return `state s-${(s || "Pending").toLowerCase()}`; }
// The state and why, as `kubectl get tfjobs` and `taas get` say them: "Waiting: ImagePullBackOff".
function stateText(job) { return job.reason ? `${job.state}: ${job.reason}` : job.state; }

function replicasText(replicas) {
  const parts = [];
  for (const [type, c] of Object.entries(replicas || {})) {
    const done = [];
    if (c.active) done.push(`${c.active} active`);
    if (c.succeeded) done.push(`${c.succeeded} ok`);
    if (c.failed) done.push(`${c.failed} failed`);
    parts.push(`${type} ${c.desired}${done.length ? " (" + done.join(", ") + ")" : ""}`);
  }
  return parts.join(" · ");
}

function replicasCell(replicas) {
  const cell = el("td", { class: "replicas-cell" });
  for (const [type, c] of Object.entries(replicas || {})) {
    const chip = el("span", { class: "chip", title: `${type}: ${c.desired} wanted, ${c.active} ` +
      `active, ${c.succeeded} succeeded, ${c.failed} failed` });
    chip.append(el("b", { text: type }), ` ${c.desired}`);
    if (c.active) chip.append(el("span", { class: "n-active", text: ` ▶${c.active}` }));
    if (c.succeeded) chip.append(el("span", { class: "n-ok", text: ` ✓${c.succeeded}` }));
    if (c.failed) chip.append(el("span", { class: "n-failed", text: ` ✗${c.failed}` }));
    cell.append(chip);
  }
  return cell;
}

function progressCell(job) {
  const p = progressOf(job);
  const cell = el("td", { class: "progress-col" });
  if (!p || p.percent == null) { cell.append(el("span", { class: "muted", text: "—" })); return cell; }
  const bar = el("div", { class: "bar" });
  const fill = el("div", {});
  fill.style.width = `${Math.min(100, Math.max(0, p.percent))}%`;
  if (job.state === "Failed") fill.className = "failed";
  bar.append(fill);
  cell.append(bar, el("span", { class: "pct", text: `${Math.floor(p.percent)}%` }));
  return cell;
}

class SignInNeeded extends Error {
  constructor(mode, message) { super(message); this.mode = mode; }
}

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) throw new SignInNeeded(response.headers.get("X-TaaS-Sign-In"), body.error || "sign in");
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

/* --auth kubernetes: the viewer's own token, sent once; the server keeps it, the page gets a
   session cookie (HttpOnly) and reloads. --auth token: the printed URL is the only way in. */
function askToSignIn(err) {
  if (err.mode !== "kubernetes") {
    showBanner(`${err.message}.`);
    return;
  }
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await act("POST", "/api/session", JSON.stringify({ token: $("signin-token").value.trim() }),
        "application/json");
      window.location.reload();
    } catch (failure) {
      $("signin-errors").textContent = failure.message;
      $("signin-errors").hidden = false;
    }
  });
  $("signin-dialog").showModal();
}

async function act(method, url, body, contentType) {
  const headers = { ...ACTION_HEADERS };
  if (contentType) headers["Content-Type"] = contentType;
  const response = await fetch(url, { method, headers, body });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function setLive(kind, text) {
  const live = $("live");
  live.dataset.state = kind;
  live.textContent = text;
}

function showBanner(text, kind) {
  const banner = $("banner");
  banner.hidden = !text;
  banner.textContent = text || "";
  banner.dataset.kind = kind || "error";
}

/* ---------- the jobs list ---------- */
function rowFor(job) {
  const key = `${job.namespace}/${job.name}`;
  const tr = el("tr", { "data-key": key, "data-state": job.state });
  const link = el("a", { href: `#/job/${encodeURIComponent(job.namespace)}/${encodeURIComponent(job.name)}`,
    text: job.name });
  const p = progressOf(job);
  tr.append(
    el("td", { class: "name" }, link),
    el("td", { text: job.namespace }),
    el("td", {}, el("span", { class: stateClass(job.state), text: stateText(job), title: job.message })),
    replicasCell(job.replicas),
    progressCell(job),
    el("td", { class: "eta", text: p && p.eta != null && job.state === "Running" ? duration(p.eta) : "" }),
    el("td", { class: "age", "data-created": job.created || "", text: age(job.created) }),
  );
  return tr;
}

function matches(job) {
  const ns = $("filter-namespace").value, st = $("filter-state").value;
  const text = $("filter-name").value.trim().toLowerCase();
  return (!ns || job.namespace === ns) && (!st || job.state === st) &&
    (!text || job.name.toLowerCase().includes(text));
}

function renderList() {
  const body = $("jobs-body");
  const keys = [...state.jobs.keys()].sort();
  const fragment = document.createDocumentFragment();
  state.rows.clear();
  let shown = 0;
  for (const key of keys) {
    const job = state.jobs.get(key);
    const tr = rowFor(job);
    state.rows.set(key, tr);
    tr.hidden = !matches(job);
    if (!tr.hidden) shown += 1;
    fragment.append(tr);
  }
  body.replaceChildren(fragment);
  updateCount(shown);
  updateNamespaces();
}

function updateCount(shown) {
  if (shown == null) shown = [...state.rows.values()].filter((r) => !r.hidden).length;
  const total = state.jobs.size;
  $("count").textContent = shown === total ? `${total} TFJob${total === 1 ? "" : "s"}`
    : `${shown} of ${total} TFJobs`;
  const empty = $("empty");
  empty.hidden = shown !== 0;
  empty.textContent = total ? "No TFJob matches the filters." :
    "No TFJobs yet. Submit one (kubectl apply -f job.yaml, taas submit, or the button above).";
}

function updateNamespaces() {
  const select = $("filter-namespace");
  const current = select.value;
  const names = [...new Set([...state.jobs.values()].map((j) => j.namespace))].sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (names.join() === have.join()) return;
  select.replaceChildren(el("option", { value: "", text: "all" }),
    ...names.map((n) => el("option", { value: n, text: n })));
  select.value = names.includes(current) ? current : "";
}

function applyChanges(changes) {
  const body = $("jobs-body");
  for (const [ns, name] of changes.removals) {
    const key = `${ns}/${name}`;
    state.jobs.delete(key);
    const tr = state.rows.get(key);
    if (tr) tr.remove();
    state.rows.delete(key);
  }
  for (const job of changes.upserts) {
    const key = `${job.namespace}/${job.name}`;
    state.jobs.set(key, job);
    const tr = rowFor(job);
    tr.hidden = !matches(job);
    const old = state.rows.get(key);
    if (old) old.replaceWith(tr);
    else {
      const next = [...state.rows.keys()].sort().find((k) => k > key);
      body.insertBefore(tr, next ? state.rows.get(next) : null);
    }
    state.rows.set(key, tr);
  }
  updateCount();
  updateNamespaces();
}

function showStatus(status) {
  if (status.problem) { showBanner(status.problem, "error"); setLive("down", "reconnecting"); }
  else { showBanner(""); setLive("up", "live"); }
  const notes = $("notes");
  notes.hidden = !status.notes.length;
  notes.replaceChildren(...status.notes.map((n) => el("div", { text: n })));
}

function openList() {
  if (state.listStream) return;
  const stream = new EventSource("/api/jobs/stream");
  state.listStream = stream;
  stream.addEventListener("status", (e) => showStatus(JSON.parse(e.data)));
  stream.addEventListener("snapshot", (e) => {
    state.jobs = new Map(JSON.parse(e.data).map((j) => [`${j.namespace}/${j.name}`, j]));
    renderList();
    document.body.dataset.listReady = "1";
  });
  stream.addEventListener("changes", (e) => applyChanges(JSON.parse(e.data)));
  stream.onopen = () => { if ($("live").dataset.state !== "down") setLive("up", "live"); };
  stream.onerror = () => {
    setLive("down", "reconnecting");
    showBanner("The dashboard server is not answering; retrying every 2 s.", "error");
  };
}

/* ---------- one job ---------- */
function closeJob() {
  for (const name of ["jobStream", "logStream"]) {
    if (state[name]) { state[name].close(); state[name] = null; }
  }
  if (state.chart) { state.chart.destroy(); state.chart = null; }
  state.current = null;
  state.detail = null;
  state.points = [];
}

function openJob(ns, name) {
  closeJob();
  state.current = { ns, name };
  $("job-ns").textContent = `namespace ${ns}`;
  $("job-name").textContent = name;
  $("job-missing").hidden = true;
  $("job-body").hidden = false;
  $("logs").replaceChildren();
  state.logLines = 0;
  $("action-message").hidden = true;
  $("replicas-body").replaceChildren();
  $("events-body").replaceChildren();
  $("timeline").replaceChildren();
  $("log-replica").replaceChildren(el("option", { value: "", text: "all replicas" }));
  $("chart").replaceChildren();
  document.body.dataset.jobReady = "";
  const base = `/api/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
  const stream = new EventSource(`${base}/stream`);
  state.jobStream = stream;
  stream.addEventListener("problem", (e) => {
    const problem = JSON.parse(e.data).problem;
    if (problem) { showBanner(problem, "error"); setLive("down", "reconnecting"); }
    else if (!state.listProblem) { showBanner(""); setLive("up", "live"); }
  });
  stream.addEventListener("detail", (e) => renderDetail(JSON.parse(e.data)));
  stream.addEventListener("missing", (e) => {
    $("job-missing").hidden = false;
    $("job-missing").textContent = `${JSON.parse(e.data).message}. It may not exist yet, may have ` +
      "been deleted, or you may not be allowed to read it. This page shows it as soon as it exists.";
    $("job-body").hidden = true;
    document.body.dataset.jobReady = "missing";
  });
  stream.onerror = () => {
    setLive("down", "reconnecting");
    showBanner("The dashboard server is not answering; retrying every 2 s.", "error");
  };
  loadPermissions(ns);
  openLogs();
}

async function loadPermissions(ns) {
  try {
    state.permissions = await getJSON(`/api/namespaces/${encodeURIComponent(ns)}/permissions`);
  } catch (err) {
    state.permissions = null;
  }
  renderActions();
}

function renderActions() {
  const perms = state.permissions;
  const job = state.detail && state.detail.job;
  const suspended = job ? job.suspended : false;
  const finished = job && (job.state === "Succeeded" || job.state === "Failed");
  const set = (button, perm, extra) => {
    const allowed = perm && perm.allowed && !extra;
    button.disabled = !allowed;
    button.title = allowed ? "" : (extra || (perm ? perm.reason : "permissions unknown"));
  };
  set($("act-suspend"), perms && perms.suspend, finished ? "the job has finished" : "");
  set($("act-resume"), perms && perms.suspend, "");
  set($("act-delete"), perms && perms.delete, "");
  const refused = [];
  if (perms && !perms.suspend.allowed) refused.push(["suspend or resume", perms.suspend.reason]);
  if (perms && !perms.delete.allowed) refused.push(["delete", perms.delete.reason]);
  const note = $("perm-note");
  note.hidden = !refused.length;
  note.textContent = refused.length ? `You may not ${refused.map((r) => r[0]).join(" or ")} ` +
    `this job: ${[...new Set(refused.map((r) => r[1]))].join("; ")}.` : "";
  $("act-suspend").hidden = suspended;
  $("act-resume").hidden = !suspended;
  $("submit-open").hidden = !(state.info && !state.info.readOnly && perms && perms.create.allowed);
}

function actionMessage(text, ok) {
  const box = $("action-message");
  box.hidden = !text;
  box.textContent = text || "";
  box.dataset.kind = ok ? "ok" : "error";
}

async function doAction(verb) {
  const { ns, name } = state.current;
  const base = `/api/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
  const perms = state.permissions;
  const perm = perms && (verb === "delete" ? perms.delete : perms.suspend);
  if (perm && !perm.allowed) { actionMessage(`Not allowed: ${perm.reason}`, false); return; }
  try {
    if (verb === "delete") await act("DELETE", base);
    else await act("POST", `${base}/${verb}`);
    actionMessage({ suspend: "Suspend requested: the operator stops the job's pods.",
      resume: "Resume requested: the operator starts the job's pods again.",
      delete: "Deleted." }[verb], true);
  } catch (err) {
    actionMessage(`${verb[0].toUpperCase() + verb.slice(1)} refused: ${err.message}`, false);
  }
}

function renderDetail(detail) {
  state.detail = detail;
  const job = detail.job;
  $("job-missing").hidden = true;
  $("job-body").hidden = false;
  const pill = $("job-state");
  pill.className = stateClass(job.state);
  pill.textContent = stateText(job);
  $("job-message").textContent = job.message;
  const tb = $("tensorboard");
  tb.hidden = !job.tensorboard;
  if (job.tensorboard) tb.href = job.tensorboard;
  const tbCommand = $("tensorboard-command");
  tbCommand.hidden = !job.tensorboard_command;
  tbCommand.querySelector("code").textContent = job.tensorboard_command || "";
  renderProgress(job);
  renderTimeline(detail.conditions);
  renderReplicas(detail.replicas, job);
  renderEvents(detail.events);
  $("yaml").textContent = detail.yaml;
  renderActions();
  document.body.dataset.jobReady = "1";
  document.body.dataset.jobState = job.state;
}

function renderProgress(job) {
  const p = progressOf(job);
  const fill = $("job-bar");
  const done = job.state === "Succeeded";
  fill.style.width = `${p && p.percent != null ? Math.min(100, p.percent) : done ? 100 : 0}%`;
  fill.className = job.state === "Failed" ? "failed" : job.state === "Succeeded" ? "done" : "";
  const facts = [];
  if (p) {
    if (p.percent != null) facts.push(["progress", `${p.percent.toFixed(1)}%`]);
    if (p.step != null) facts.push(["step", p.max ? `${p.step} / ${p.max}` : `${p.step}`]);
    if (p.loss != null) facts.push(["loss", Number(p.loss).toPrecision(4)]);
    if (p.rate != null) facts.push(["examples/s", Number(p.rate).toFixed(1)]);
    if (p.eta != null && job.state === "Running") facts.push(["ETA", duration(p.eta)]);
    if (p.updated) facts.push(["reported", `${age(p.updated)} ago`]);
    addPoints(p);
  } else {
    drawChart();
    facts.push(["progress", job.state === "Succeeded" ? "done" :
      "not reported (the job does not use the taas trainer library, or has not started)"]);
  }
  if (job.started) facts.push(["running for", duration(((job.completed ?
    Date.parse(job.completed) : Date.now()) - Date.parse(job.started)) / 1000)]);
  $("job-progress").replaceChildren(...facts.map(([k, v]) =>
    el("span", { class: "fact" }, el("small", { text: k }), el("b", { text: v }))));
}

/* ---------- the loss chart (uPlot) ---------- */
function addPoints(p) {
  /* status.progress carries the latest loss and, per user scalar, its last few {step, value}:
     the page keeps every point it has seen while open (a chart of the run so far). */
  const seen = new Map(state.points.map((pt) => [pt[0], pt]));
  const point = (step) => {
    if (!seen.has(step)) seen.set(step, [step, null, {}]);
    return seen.get(step);
  };
  for (const [name, values] of Object.entries(p.scalars || {})) {
    for (const v of Array.isArray(values) ? values : []) {
      if (!v || v.step == null || typeof v.value !== "number") continue;
      if (name === "loss") point(v.step)[1] = v.value;
      else point(v.step)[2][name] = v.value;
    }
  }
  if (p.step != null && typeof p.loss === "number") point(p.step)[1] = p.loss;
  state.points = [...seen.values()].sort((a, b) => a[0] - b[0]).slice(-2000);
  drawChart();
}

function drawChart() {
  const box = $("chart");
  const pts = state.points;
  $("chart-note").textContent = pts.length ? `${pts.length} point${pts.length === 1 ? "" : "s"}` : "";
  if (!pts.length) {
    if (!box.firstChild) box.append(el("p", { class: "muted", text: "No loss reported yet." }));
    return;
  }
  const names = [...new Set(pts.flatMap((pt) => Object.keys(pt[2] || {})))].sort();
  const data = [pts.map((pt) => pt[0]), pts.map((pt) => pt[1])];
  for (const n of names) data.push(pts.map((pt) => (pt[2] && n in pt[2] ? pt[2][n] : null)));
  const key = names.join(",");
  if (state.chart && state.chart.key === key) { state.chart.setData(data); return; }
  if (state.chart) state.chart.destroy();
  box.replaceChildren();
  const width = Math.max(280, box.clientWidth || 480);
  const series = [{ label: "step" }, { label: "loss", stroke: "#2563eb", width: 2, spanGaps: true }];
  names.forEach((n, i) => series.push({ label: n, stroke: COLORS[(i + 2) % COLORS.length],
    width: 1.5, spanGaps: true, scale: "y2" }));
  const axes = [{ label: "step" }, { label: "loss" }];
  if (names.length) axes.push({ side: 1, scale: "y2", grid: { show: false } });
  state.chart = new uPlot({ width, height: 220, series, axes,
    scales: { x: { time: false } }, legend: { live: true } }, data, box);
  state.chart.key = key;
}

/* ---------- timeline, replicas, events ---------- */
function renderTimeline(conditions) {
  const list = $("timeline");
  list.replaceChildren(...conditions.map((c) => {
    const item = el("li", { class: `cond ${c.status === "True" ? "on" : "off"} t-${c.type.toLowerCase()}` });
    item.append(
      el("div", { class: "cond-head" }, el("b", { text: c.type }),
        el("span", { class: "muted", text: ` ${c.status === "True" ? "" : "(no longer) "}` +
          `${c.time ? new Date(c.time).toLocaleTimeString() + " · " + age(c.time) + " ago" : ""}` })),
      el("div", { class: "cond-msg", text: c.message || c.reason }));
    return item;
  }));
}

function renderReplicas(replicas, job) {
  const body = $("replicas-body");
  const select = $("log-replica");
  const have = new Set([...select.options].map((o) => o.value));
  body.replaceChildren(...replicas.map((r) => {
    const short = r.name.startsWith(job.name + "-") ? r.name.slice(job.name.length + 1) : r.name;
    if (!have.has(short)) { select.append(el("option", { value: short, text: short })); have.add(short); }
    const tr = el("tr", { "data-replica": short, "data-phase": r.phase });
    const logs = el("a", { href: "#", text: "logs", class: "small" });
    logs.addEventListener("click", (e) => { e.preventDefault(); select.value = short; openLogs(); });
    tr.append(
      el("td", { class: "mono" }, el("span", { class: "dot", style: `background:${colorFor(short)}` }), short),
      el("td", {}, el("span", { class: `phase p-${r.phase.toLowerCase().replace(/[^a-z]/g, "")}`, text: r.phase })),
      el("td", { text: String(r.restarts) }),
      el("td", { text: r.exit_code == null ? "" : String(r.exit_code) }),
      el("td", { text: r.reason, title: r.message }),
      el("td", { class: "mono", text: r.node }),
      el("td", { text: r.phase === "-" ? "" : age(r.started) }),
      el("td", {}, logs));
    return tr;
  }));
  $("replica-counts").textContent = replicasText(job.replicas);
}

function renderEvents(events) {
  const body = $("events-body");
  body.replaceChildren(...events.slice().reverse().map((e) => el("tr", { class: e.type === "Warning" ? "warn" : "" },
    el("td", { text: e.type }), el("td", { text: e.reason }), el("td", { text: e.message }),
    el("td", { text: String(e.count) }), el("td", { text: e.last_time ? `${age(e.last_time)} ago` : "" }))));
  if (!events.length) body.append(el("tr", {}, el("td", { colspan: "5", class: "muted", text: "No events." })));
}

/* ---------- logs ---------- */
function colorFor(replica) {
  if (!state.logColors.has(replica)) state.logColors.set(replica, COLORS[state.logColors.size % COLORS.length]);
  return state.logColors.get(replica);
}

function openLogs() {
  if (state.logStream) state.logStream.close();
  const { ns, name } = state.current;
  const replica = $("log-replica").value;
  const box = $("logs");
  box.replaceChildren();
  state.logLines = 0;
  $("log-note").textContent = "";
  const query = replica ? `?replica=${encodeURIComponent(replica)}` : "";
  const stream = new EventSource(`/api/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/logs${query}`);
  state.logStream = stream;
  stream.addEventListener("lines", (e) => {
    const fragment = document.createDocumentFragment();
    for (const line of JSON.parse(e.data)) {
      const row = el("div", { class: "line" });
      const prefix = el("span", { class: "prefix", text: `[${line.replica}]` });
      prefix.style.color = colorFor(line.replica);
      row.append(prefix, ` ${line.text}`);
      fragment.append(row);
      state.logLines += 1;
    }
    box.append(fragment);
    while (state.logLines > MAX_LOG_LINES) { box.firstChild.remove(); state.logLines -= 1; }
    if ($("log-follow").checked) box.scrollTop = box.scrollHeight;
    document.body.dataset.logLines = String(state.logLines);
  });
  stream.addEventListener("problem", (e) => { $("log-note").textContent = JSON.parse(e.data).problem; });
  stream.addEventListener("end", () => { $("log-note").textContent = "end of logs"; stream.close(); });
}

/* ---------- submit: a form (the TFJob it makes shown as fields change) or pasted YAML ----------
   The form's fields go to the server as they are typed; it builds the TFJob (and a program's
   ConfigMap) as `taas submit train.py` does and checks it as `taas validate` does, answering
   {yaml} or 422 {problems: [{field, message}]}, each shown under its field. */
const FORM_FIELDS = ["name", "workers", "ps", "gpus_per_worker", "image", "cpu", "memory", "env",
  "file_name", "args", "program", "command"];
const MAX_PROGRAM_BYTES = 1024 * 1024;
const submitState = { mode: "form", timer: null, seq: 0 };

function namespaceQuery() {
  const ns = $("submit-namespace").value.trim();
  return ns ? `?namespace=${encodeURIComponent(ns)}` : "";
}

function formRuns() { return document.querySelector('#form-pane input[name="runs"]:checked').value; }

function formBody() {
  const body = { chief: $("f-chief").checked, runs: formRuns() };
  for (const key of FORM_FIELDS) body[key] = document.querySelector(`#form-pane [name="${key}"]`).value;
  return JSON.stringify(body);
}

async function sendForm(path) {
  const response = await fetch(`${path}${namespaceQuery()}`, { method: "POST",
    headers: { ...ACTION_HEADERS, "Content-Type": "application/json" }, body: formBody() });
  const data = await response.json().catch(() => ({}));
  return { ok: response.ok, data, problems: data.problems ||
    (response.ok ? [] : [{ field: "", message: data.error || `HTTP ${response.status}` }]) };
}

/* Each problem under its field; the rest (and a repeat of all) in the box below the form. */
function showProblems(problems) {
  for (const field of document.querySelectorAll("#form-pane [data-field]")) {
    delete field.dataset.invalid;
    for (const old of field.querySelectorAll(".field-error")) old.remove();
  }
  const general = [];
  for (const problem of problems) {
    const field = problem.field &&
      document.querySelector(`#form-pane [data-field="${CSS.escape(problem.field)}"]`);
    if (field) {
      field.dataset.invalid = "1";
      field.append(el("small", { class: "field-error", text: problem.message }));
    } else general.push(problem.message);
  }
  const errors = $("submit-errors");
  errors.hidden = !general.length;
  errors.textContent = general.join("\n");
}

function schedulePreview() {
  clearTimeout(submitState.timer);
  submitState.timer = setTimeout(previewForm, 300);
}

async function previewForm() {
  const seq = ++submitState.seq;
  let answer;
  try { answer = await sendForm("/api/jobs/preview"); }
  catch (err) { answer = { ok: false, data: {}, problems: [{ field: "", message: err.message }] }; }
  if (seq !== submitState.seq) return;  // a later preview is on its way
  showProblems(answer.problems);
  const box = $("form-yaml");
  if (answer.ok) {
    box.textContent = answer.data.yaml;
    box.dataset.stale = "";
    $("preview-note").textContent = `(namespace ${answer.data.namespace})`;
  } else {
    box.dataset.stale = "1";
    $("preview-note").textContent = box.textContent ? "(the last valid one: fix the fields marked)" : "";
  }
  document.body.dataset.previewed = String(seq);
}

function showSubmitMode(mode) {
  submitState.mode = mode;
  $("tab-form").setAttribute("aria-selected", String(mode === "form"));
  $("tab-yaml").setAttribute("aria-selected", String(mode === "yaml"));
  $("form-pane").hidden = mode !== "form";
  $("yaml-pane").hidden = mode !== "yaml";
  showProblems([]);
  if (mode === "form") previewForm();
}

function showRuns() {
  const program = formRuns() === "program";
  $("runs-program").hidden = !program;
  $("runs-command").hidden = program;
  $("f-name").placeholder = program ? "from the file name" : "needed for a command";
}

async function uploadProgram() {
  const file = $("f-upload").files[0];
  if (!file) return;
  if (file.size > MAX_PROGRAM_BYTES) {
    showProblems([{ field: "program", message: `Program ${JSON.stringify(file.name)} is larger than ` +
      "a ConfigMap holds (1 MiB); fix: build an image FROM the trainer image with your code copied in" }]);
    return;
  }
  $("f-program").value = await file.text();
  $("f-file-name").value = file.name;
  schedulePreview();
}

async function submitJob(event) {
  event.preventDefault();
  let made;
  if (submitState.mode === "form") {
    clearTimeout(submitState.timer);
    submitState.seq += 1;  // a preview still on its way is not shown over the answer
    const answer = await sendForm("/api/jobs/form").catch((err) =>
      ({ ok: false, problems: [{ field: "", message: err.message }] }));
    if (!answer.ok) { showProblems(answer.problems); return; }
    made = answer.data;
  } else {
    try {
      made = await act("POST", `/api/jobs${namespaceQuery()}`, $("submit-yaml").value, "application/yaml");
    } catch (err) {
      showProblems([{ field: "", message: err.message }]);
      return;
    }
  }
  $("submit-dialog").close();
  location.hash = `#/job/${encodeURIComponent(made.namespace)}/${encodeURIComponent(made.name)}`;
}

function openSubmit() {
  showSubmitMode(submitState.mode);
  $("submit-dialog").showModal();
}

/* ---------- routing ---------- */
function route() {
  const match = location.hash.match(/^#\/job\/([^/]+)\/([^/]+)$/);
  if (match) {
    $("list-view").hidden = true;
    $("job-view").hidden = false;
    const ns = decodeURIComponent(match[1]), name = decodeURIComponent(match[2]);
    if (!state.current || state.current.ns !== ns || state.current.name !== name) openJob(ns, name);
    document.title = `${name} · TaaS`;
  } else {
    closeJob();
    $("job-view").hidden = true;
    $("list-view").hidden = false;
    document.title = "TFJobs · TaaS";
  }
}

function tick() {
  for (const cell of document.querySelectorAll("#jobs-body td.age")) {
    const text = age(cell.dataset.created);
    if (cell.textContent !== text) cell.textContent = text;
  }
}

async function start() {
  try {
    state.info = await getJSON("/api/info");
    $("where").textContent = state.info.where + (state.info.user ? ` · signed in as ${state.info.user}` : "") + (state.info.readOnly ? " · read-only" : "");
    if (!state.info.readOnly && state.info.mode === "cluster") {
      const ns = state.info.defaultNamespace || "default";
      const perms = await getJSON(`/api/namespaces/${encodeURIComponent(ns)}/permissions`).catch(() => null);
      $("submit-open").hidden = !(perms && perms.create.allowed);
      $("submit-namespace").value = ns;
    }
  } catch (err) {
    if (err instanceof SignInNeeded) { askToSignIn(err); return; }
    showBanner(`The dashboard server is not answering (${err.message}); reload when it is back.`);
  }
  for (const id of ["filter-namespace", "filter-state", "filter-name"]) {
    $(id).addEventListener("input", () => {
      let shown = 0;
      for (const [key, tr] of state.rows) {
        tr.hidden = !matches(state.jobs.get(key));
        if (!tr.hidden) shown += 1;
      }
      updateCount(shown);
    });
  }
  $("act-suspend").addEventListener("click", () => doAction("suspend"));
  $("act-resume").addEventListener("click", () => doAction("resume"));
  $("act-delete").addEventListener("click", () => { $("confirm-delete").hidden = false; });
  $("confirm-no").addEventListener("click", () => { $("confirm-delete").hidden = true; });
  $("confirm-yes").addEventListener("click", () => { $("confirm-delete").hidden = true; doAction("delete"); });
  $("log-replica").addEventListener("change", openLogs);
  $("submit-open").addEventListener("click", openSubmit);
  $("submit-form").addEventListener("submit", submitJob);
  $("submit-cancel").addEventListener("click", () => $("submit-dialog").close());
  $("tab-form").addEventListener("click", () => showSubmitMode("form"));
  $("tab-yaml").addEventListener("click", () => showSubmitMode("yaml"));
  $("form-pane").addEventListener("input", (event) => {
    if (event.target.name === "runs") showRuns();
    if (event.target.id !== "f-upload") schedulePreview();
  });
  $("f-upload").addEventListener("change", uploadProgram);
  $("submit-namespace").addEventListener("input", () => { if (submitState.mode === "form") schedulePreview(); });
  window.addEventListener("hashchange", route);
  setInterval(tick, 5000);
  openList();
  route();
}

start();
