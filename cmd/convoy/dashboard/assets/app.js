// convoy dashboard: renders the views the server pushes as server-sent events. No framework,
// no build step; every text is escaped before it reaches the page.
"use strict";

const STATES = ["failed", "updating", "dependency", "waiting", "skipped", "progressed"];
let stream = null;

function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function short(c) { return c ? c.slice(0, 12) : "none"; }
function rev(r) { return r ? esc(r.name) + (r.commit ? " <code>" + esc(short(r.commit)) + "</code>" : "") : "none"; }
function enc(s) { return encodeURIComponent(s); }

// route reads the location hash: #/, #/rollout/NAME?state=S&offset=N, #/package/NS/NAME.
function route() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  if (parts[0] === "rollout" && parts[1]) {
    return {view: "rollout", name: parts[1], state: params.get("state") || "", offset: params.get("offset") || "0"};
  }
  if (parts[0] === "package" && parts[2]) return {view: "package", namespace: parts[1], name: parts[2]};
  return {view: "fleet"};
}

function open() {
  const r = route();
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(r)) if (v !== "") q.set(k, v);
  if (stream) stream.close();
  const live = document.getElementById("live");
  live.textContent = "connecting…";
  live.className = "live";
  stream = new EventSource("/api/stream?" + q.toString());
  stream.onopen = () => { live.textContent = "live"; live.className = "live on"; };
  stream.onerror = () => { live.textContent = "reconnecting…"; live.className = "live"; };
  stream.onmessage = (ev) => render(r, JSON.parse(ev.data));
  crumbs(r);
}

function crumbs(r) {
  let html = '<a href="#/">fleet</a>';
  if (r.view === "rollout") html += ' / <a href="#/rollout/' + enc(r.name) + '">' + esc(r.name) + "</a>";
  if (r.view === "package") html += " / package " + esc(r.namespace) + "/" + esc(r.name);
  document.getElementById("crumbs").innerHTML = html;
}

function render(r, data) {
  const main = document.getElementById("main");
  if (data.error) { main.innerHTML = '<div class="banner error">' + esc(data.error) + "</div>"; return; }
  const detail = main.querySelector("#detail");
  const kept = detail ? detail.innerHTML : "";
  if (r.view === "rollout") main.innerHTML = rolloutPage(r, data);
  else if (r.view === "package") main.innerHTML = packagePage(data);
  else main.innerHTML = fleetPage(data);
  const d = main.querySelector("#detail");
  if (d && kept) d.innerHTML = kept;
}

function stalledBanner(it) {
  if (!it.stalled) return "";
  const names = (it.failures || []).map((f) => esc(f.hostedCluster));
  let html = '<div class="banner stalled"><strong>Stalled</strong>: ' + it.packages.failed + " failed";
  if (names.length) html += ": " + names.join(", ");
  if (it.stalledMessage) html += "<br>" + esc(it.stalledMessage);
  return html + "</div>";
}

// utc prints an RFC 3339 time as "2026-01-02 12:03:00 UTC".
function utc(t) { return new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC"); }

// span prints a wait of ms milliseconds as the CLI does, rounded up: "45s", "3m", "1h20m", "2d3h".
function span(ms) {
  const up = (unit) => Math.ceil(ms / unit);
  if (ms < 60e3) return up(1e3) + "s";
  if (ms < 3600e3) return up(60e3) + "m";
  if (ms < 86400e3) { const m = up(60e3); return Math.floor(m / 60) + "h" + (m % 60 ? (m % 60) + "m" : ""); }
  const h = up(3600e3);
  return Math.floor(h / 24) + "d" + (h % 24 ? (h % 24) + "h" : "");
}

// when prints a time and how far from now (ms) it is: "2026-01-02 12:03:00 UTC (in 3m)".
function when(t, now) {
  const ms = Date.parse(t) - now;
  return '<time datetime="' + esc(t) + '">' + esc(utc(t)) + "</time> (" + (ms > 0 ? "in " + span(ms) : "due") + ")";
}

// approveHint shows the command that approves a partition awaiting approval.
function approveHint(cmd) {
  return cmd ? ' <span class="approve">approve: <code class="command">' + esc(cmd) + "</code></span>" : "";
}

// stateBadge is a partition's state as a badge, with until when and the approval command.
function stateBadge(state, until, cmd, now) {
  return '<span class="badge badge-' + esc(state) + '">' + esc(state) + "</span>" +
    (until ? ' <span class="muted until">until ' + when(until, now) + "</span>" : "") + approveHint(cmd);
}

// gateBanner says what holds the rollout and which revision a rollback rejected.
function gateBanner(it, now) {
  let html = "";
  const g = it.gate;
  if (g) {
    html += '<div class="banner gated" data-gate="' + esc(g.type) + '"><strong>Held by ' + esc(g.type) + "</strong>" +
      (g.partition ? " on partition " + esc(g.partition) : "") + (g.until ? " until " + when(g.until, now) : "") +
      (g.message ? "<br>" + esc(g.message) : "") + (g.type === "Approval" ? approveHint((it.approveCommands || {})[g.partition]) : "") + "</div>";
  }
  if (it.rejectedRevision) {
    html += '<div class="banner stalled rejected"><strong>Rejected</strong> ' + rev(it.rejectedRevision) +
      ": a rollback rejected it; a new commit or template change makes the next revision</div>";
  }
  return html;
}

// promotionCard says which commit the upstream sectors let through and what each of their
// management clusters did with the GitSource's newest commit.
function promotionCard(it) {
  const p = it.promotion;
  if (!p) return "";
  const short = (c) => (c ? "<code>" + esc(c.slice(0, 12)) + "</code>" : '<span class="muted">none yet</span>');
  let html = '<div class="promotion" data-promoted="' + esc(p.commit || "") + '"><div class="row"><span>promoted ' + short(p.commit) +
    (p.byHand ? ' <span class="pill tone-held">by hand</span>' : "") + "</span><span>head " + short(p.headCommit) + "</span></div>";
  if (p.message) html += '<div class="banner gated">' + esc(p.message) + "</div>";
  if (p.headCommit && p.headCommit !== p.commit) {
    html += (p.upstream || []).map((u) => '<div class="row sector" data-sector="' + esc(u.sector) + '"><strong>' + esc(u.sector) + "</strong>" +
      (u.managementClusters || []).map((m) => '<span class="pill tone-' + sectorTone(m.state) + '" data-management-cluster="' + esc(m.name) + '">' +
        esc(m.name) + " " + esc(m.state || "not started") + (m.progress ? " " + esc(m.progress) : "") + "</span>").join(" ") +
      (u.completedAt ? ' <span class="muted">completed <time datetime="' + esc(u.completedAt) + '">' + esc(utc(u.completedAt)) + "</time></span>" : "") +
      "</div>").join("");
  }
  return html + "</div>";
}

// sectorTone colours what a management cluster did with a commit.
function sectorTone(state) {
  const tones = { Completed: "good", Failed: "bad", Rejected: "bad", Progressing: "progress", Superseded: "unknown" };
  return Object.hasOwn(tones, state) ? tones[state] : "held";
}

// conditionPills shows each condition coloured by its tone, which the server decides from what
// the condition type means (good, bad, progress, held, unknown).
function conditionPills(conds) {
  return (conds || []).map((c) => '<span class="pill condition tone-' + esc(c.tone || "unknown") + '" data-condition="' + esc(c.type) +
    '" title="' + esc(c.reason + ": " + c.message) + '">' + esc(c.type) + "=" + esc(c.status) + "</span>").join(" ");
}

function partitionBar(p) {
  const t = p.total || 1;
  return '<div class="bar" title="' + p.progressed + "/" + p.total + ' progressed"><span class="progressed" style="width:' +
    (100 * p.progressed / t) + '%"></span><span class="updating" style="width:' + (100 * Math.max(0, p.updated - p.progressed) / t) + '%"></span></div>';
}

function fleetPage(v) {
  if (!v.items.length) return '<p class="muted">No HostedClusterPackages found.</p>';
  return "<h1>Fleet</h1>" + v.items.map((it) => {
    const c = it.packages;
    const now = Date.now();
    const parts = (it.partitions || []).map((p) => '<div class="partition" data-partition="' + esc(p.name) + '"><span class="name">' + esc(p.name) +
      "</span>" + partitionBar(p) + "<span>" + p.progressed + "/" + p.total + " " +
      stateBadge(p.state, p.until, (it.approveCommands || {})[p.name], now) + "</span></div>").join("");
    return '<div class="card hcp" data-name="' + esc(it.name) + '"><div class="row"><h2><a href="#/rollout/' + enc(it.name) + '">' + esc(it.name) +
      '</a></h2><span class="muted">' + esc(it.strategy) + (it.paused ? ", paused" : "") + "</span></div>" + stalledBanner(it) + gateBanner(it, now) + promotionCard(it) +
      '<div class="row"><span>current ' + rev(it.currentRevision) + "</span><span>update " + rev(it.updateRevision) + "</span></div>" +
      '<div class="row counts">' + c.total + " total · " + c.updated + " updated · " + c.available + " available · " + c.progressed +
      " progressed · " + c.failed + " failed · " + (c.skipped || 0) + " skipped" +
      (c.waiting ? ' · <span class="state-text-dependency">' + c.waiting + " waiting for dependencies</span>" : "") + "</div>" + dependsOnRow(it) + parts +
      '<div class="row">' + conditionPills(it.conditions) + "</div></div>";
  }).join("");
}

function rolloutPage(r, v) {
  const b = v.budget;
  const now = v.now ? Date.parse(v.now) : Date.now();
  let html = "<h1>" + esc(v.name) + "</h1>" + stalledBanner(v) + gateBanner(v, now);
  html += '<div class="card"><div class="row"><span>current ' + rev(v.currentRevision) + '</span><span id="update" data-commit="' +
    esc(v.updateRevision ? v.updateRevision.commit : "") + '">update ' + rev(v.updateRevision) +
    '</span><span>budget <strong id="budget">' + (b.max ? b.inUse + "/" + b.max + " slots" : b.inUse + " updating, no limit") +
    '</strong></span></div><div class="row">' + conditionPills(v.conditions) + "</div></div>";
  html += '<div class="card"><div class="row legend">' + STATES.map((s) => '<a href="#/rollout/' + enc(r.name) + (r.state === s ? "" : "?state=" + s) +
    '"><span><i class="state-' + s + '"></i>' + s + "</span></a>").join("") + "</div>";
  html += (v.grid || []).map((row) => gridRow(r, row, v.query, now)).join("") || '<p class="muted">No targets yet.</p>';
  html += '<div id="detail" class="detail muted">Select a cell to see its cluster.</div></div>';
  html += failedList(v) + waitingList(v) + '<div class="card"><h2>Timeline</h2>' + timelineSVG(v) + "</div>";
  return html;
}

function gridRow(r, row, q, now) {
  const counts = STATES.filter((s) => row.counts[s]).map((s) => row.counts[s] + " " + s).join(" · ");
  const cells = row.cells.map((c) => '<button class="cell state-' + c.state + '" data-cluster="' + esc(c.hostedCluster) + '" data-state="' + c.state +
    '" data-package="' + esc(c.package || "") + '" data-message="' + esc((c.reason ? c.reason + ": " : "") + (c.message || "")) +
    '" title="' + esc(c.hostedCluster + " · " + c.state + (c.message ? " · " + c.message : "")) + '"></button>').join("");
  let more = "";
  const next = q.offset + q.limit;
  if (row.matching > next || q.offset > 0) {
    const base = "#/rollout/" + enc(r.name) + "?" + (q.state ? "state=" + q.state + "&" : "");
    more = '<div class="muted">cells ' + (q.offset + 1) + "–" + Math.min(next, row.matching) + " of " + row.matching +
      (q.offset > 0 ? ' <a href="' + base + "offset=" + Math.max(0, q.offset - q.limit) + '">previous</a>' : "") +
      (row.matching > next ? ' <a href="' + base + "offset=" + next + '">next</a>' : "") + "</div>";
  }
  return '<div class="grid-row" data-partition="' + esc(row.partition) + '"><div class="row"><strong>' + esc(row.partition) + "</strong><span>" +
    stateBadge(row.state || "", row.until, row.approveCommand, now) + '</span><span class="muted">' + counts + "</span></div>" + checksList(row.checks) +
    '<div class="cells">' + cells +
    "</div>" + more + "</div>";
}

// checksList shows a partition's checks: state, evaluations, last value and message.
function checksList(checks) {
  if (!checks || !checks.length) return "";
  return '<ul class="checks">' + checks.map((c) => '<li class="check" data-check="' + esc(c.name) + '" data-state="' + esc(c.state) + '">' +
    '<span class="badge badge-check-' + esc(c.state) + '">' + esc(c.state) + "</span> <strong>" + esc(c.name) + "</strong> " +
    '<span class="muted">' + c.passes + " passed · " + c.failures + " failed" + (c.inconclusive ? " · " + c.inconclusive + " inconclusive in a row" : "") +
    (c.lastEvaluated ? " · evaluated " + esc(utc(c.lastEvaluated)) : "") + "</span>" +
    (c.lastValue ? ' <code class="value">' + esc(c.lastValue) + "</code>" : "") + (c.message ? ' <span class="message">' + esc(c.message) + "</span>" : "") +
    "</li>").join("") + "</ul>";
}

function failedList(v) {
  const failed = [];
  for (const row of v.grid || []) for (const c of row.cells) if (c.state === "failed") failed.push(c);
  if (!failed.length) return "";
  return '<div class="card"><h2>Failed</h2><ul class="failures">' + failed.map((c) => '<li class="failed-cluster"><strong class="state-text-failed">' +
    esc(c.hostedCluster) + "</strong> " + esc(c.reason) + ": " + esc(c.message) + (c.package ? ' <a href="#/package/' + c.package.split("/").map(enc).join("/") +
    '">package</a>' : "") + "</li>").join("") + "</ul></div>";
}

// dependsOnRow names the HostedClusterPackages a rollout waits for on each HostedCluster.
function dependsOnRow(it) {
  const deps = it.dependsOn || [];
  return deps.length ? '<div class="row depends-on">depends on ' + deps.map((d) => '<a href="#/rollout/' + enc(d) + '">' + esc(d) + "</a>").join(", ") + "</div>" : "";
}

// waitingList shows the Packages that wait for a dependency to be available on their cluster, or
// for their dependants to be gone before they are deleted, as the status samples them.
function waitingList(v) {
  const waiting = v.waiting || [];
  if (!waiting.length) return "";
  const n = (v.packages && v.packages.waiting) || 0;
  return '<div class="card"><h2>Waiting for dependencies' + (n > waiting.length ? " (" + waiting.length + " of " + n + ")" : "") + '</h2><ul class="waiting">' +
    waiting.map((w) => '<li class="waiting-cluster" data-cluster="' + esc(w.hostedCluster) + '" data-dependency="' + esc(w.dependency) + '"><strong class="state-text-dependency">' +
      esc(w.hostedCluster) + "</strong> " + esc(w.reason) + ": " + esc(w.message || "waits for " + w.dependency) + "</li>").join("") + "</ul></div>";
}

function timelineSVG(v) {
  const spans = v.timeline || [];
  const started = spans.filter((s) => s.start);
  if (!started.length) return '<p class="muted">The update revision has not started yet.</p>';
  const now = Date.parse(v.now);
  const t0 = Math.min(...started.map((s) => Date.parse(s.start)));
  const width = 600, left = 80, rowH = 22, range = Math.max(1000, now - t0);
  const x = (t) => left + (width - left - 10) * (t - t0) / range;
  let svg = '<svg class="timeline" viewBox="0 0 ' + width + " " + (spans.length * rowH + 24) + '" width="100%" role="img" aria-label="timeline">';
  spans.forEach((s, i) => {
    const y = i * rowH + 4;
    svg += '<text x="0" y="' + (y + 13) + '">' + esc(s.partition) + "</text>";
    if (!s.start) { svg += '<text class="pending" x="' + left + '" y="' + (y + 13) + '">waiting for its turn</text>'; return; }
    const a = x(Date.parse(s.start)), e = s.end ? x(Date.parse(s.end)) : x(now);
    svg += '<rect class="span" data-partition="' + esc(s.partition) + '" x="' + a + '" y="' + y + '" width="' + Math.max(2, e - a) + '" height="16" rx="3" fill="' +
      (s.end ? "#2e9e5b" : "#2f7fd8") + '"><title>' + esc(s.partition + ": " + s.start + " → " + (s.end || "running")) + "</title></rect>";
  });
  const secs = Math.round(range / 1000);
  svg += '<text x="' + left + '" y="' + (spans.length * rowH + 18) + '">0s</text><text x="' + (width - 40) + '" y="' + (spans.length * rowH + 18) + '">' + secs + "s</text>";
  return svg + "</svg>";
}

function packagePage(p) {
  let html = "<h1>Package " + esc(p.namespace) + "/" + esc(p.name) + "</h1>";
  if (p.owner) html += '<p>Owned by <a href="#/rollout/' + enc(p.owner) + '">' + esc(p.owner) + "</a></p>";
  if (p.lastError) html += '<div class="banner stalled" id="last-error">' + esc(p.lastError) + "</div>";
  html += '<div class="card"><div class="row"><span>spec <code>' + esc(short(p.revision)) + "</code></span><span>applied <code>" + esc(short(p.applied)) +
    "</code></span><span>attempted <code>" + esc(short(p.attempted)) + "</code></span>" + (p.paused ? '<span class="pill tone-held">paused</span>' : "") +
    '</div><div class="row">' + conditionPills(p.conditions) + "</div></div>";
  html += '<div class="card"><h2>Phases</h2>' + (p.phases.length ? p.phases.map((ph, i) => '<div class="phase" data-phase="' + esc(ph.name) + '"><div class="row"><strong>' +
    (i + 1) + ". " + esc(ph.name) + '</strong><span class="pill">' + esc(ph.target) + '</span><span class="pill ' + (ph.available ? "tone-good\">available" : "tone-bad\">not available") +
    "</span>" + (ph.message ? '<span class="muted">' + esc(ph.message) + "</span>" : "") + '</div><div class="scroll"><table>' +
    ph.objects.map((o) => "<tr><td>" + esc(o.kind) + "</td><td>" + esc(o.namespace ? o.namespace + "/" + o.name : o.name) + '</td><td class="hide-narrow">' + esc(o.target) +
    "</td></tr>").join("") + "</table></div></div>").join("") : '<p class="muted">No phase applied yet.</p>') + "</div>";
  html += '<div class="card"><h2>Events</h2><div class="scroll"><table class="events">' + (p.events.length ? p.events.map((e) => "<tr><td>" + esc(e.type) + "</td><td>" +
    esc(e.reason) + "</td><td>" + esc(e.message) + '</td><td class="hide-narrow">' + esc(e.last) + "</td></tr>").join("") : '<tr><td class="muted">No events.</td></tr>') +
    "</table></div></div>";
  return html;
}

// A click on a cell shows its cluster, state and message, with a link to its Package.
document.addEventListener("click", (ev) => {
  const cell = ev.target.closest(".cell");
  if (!cell) return;
  const d = document.getElementById("detail");
  const pkg = cell.dataset.package;
  d.className = "detail";
  d.innerHTML = "<strong>" + esc(cell.dataset.cluster) + '</strong> <span class="pill">' + esc(cell.dataset.state) + "</span> " + esc(cell.dataset.message) +
    (pkg ? ' <a class="package-link" href="#/package/' + pkg.split("/").map(enc).join("/") + '">open Package ' + esc(pkg) + "</a>" : "");
});
window.addEventListener("hashchange", open);
open();
