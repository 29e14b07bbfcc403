// The exporter's page: the groups with their status (#), and a group's page (#group=NAME) with its
// problems and what to do, lag over the last hour, the ownership map, lag per partition and its
// members. Reads the JSON API only (/v1/groups, /v1/groups/G/overview, /v1/groups/G/history) and
// asks /v1/refreshed twice a second whether the exporter refreshed since it drew (a commit shows at
// once), and draws again then, or every refresh interval at least. No library: the maps are grids of <i> cells built as one
// string (a 4,096-partition group is 4,096 cells, no rows), the charts inline SVG.
"use strict";
(function () {
  const HOUR_MS = 3600 * 1000;
  const SEVERITY = { NOTFOUND: 0, OK: 1, WARN: 2, ERR: 3, STOP: 4, STALL: 5, REWIND: 6 };
  const POLL_MS = 500; // how often the page asks whether anything is new (a few bytes)
  const MAX_ROWS = 25; // the partition table lists the most lagging; the grids show every partition
  const page = { group: null, timer: null, intervalMs: 5000, renders: 0, firstRenderMs: null,
    lastRefreshMs: null, generation: 0, overview: null, history: null, shown: undefined,
    shownAtMs: null, dueMs: 0 };
  window.zkPage = page; // read by tests and scripts/bench/page_load.py

  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const num = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
  const clip = (s, n) => (s.length > n ? `${s.slice(0, n)}…` : s);
  const badge = (s) => `<span class="badge ${esc(s)}">${esc(s)}</span>`;
  const when = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "–");

  async function getJSON(url) {
    const answer = await fetch(url, { cache: "no-store" });
    const doc = await answer.json();
    if (!answer.ok || doc.error) throw Object.assign(new Error(`${url}: ${doc.message || answer.status}`), { status: answer.status });
    return doc;
  }

  function route() {
    const m = location.hash.match(/^#group=(.+)$/);
    // A hand-typed "#group=50%" is no valid escape: the name as typed, rather than a page stuck loading.
    let name = null;
    if (m) try { name = decodeURIComponent(m[1]); } catch (error) { name = m[1]; }
    page.group = name;
    refresh();
  }

  async function refresh() {
    clearTimeout(page.timer);
    if (document.hidden && page.renders > 0) { // a tab nobody looks at asks the exporter nothing
      page.timer = setTimeout(refresh, page.intervalMs);
      return;
    }
    const generation = ++page.generation;
    const began = performance.now();
    try {
      const html = page.group === null ? await groupsPage() : await groupPage(page.group);
      if (generation !== page.generation) return; // the hash changed meanwhile: its refresh shows
      $("main").innerHTML = html;
      void $("main").offsetHeight; // lay it out now: the time measured below includes the layout
      $("error").hidden = true;
      page.shown = page.group;
    } catch (error) {
      if (generation !== page.generation) return;
      // The last good view stays through a failed refresh of the same page, not when it shows
      // another group (the hash changed) or a group the exporter no longer knows (404).
      const keep = page.shown === page.group && error.status !== 404;
      if (!keep) {
        $("main").innerHTML = `<p class="muted" id="nothing">Nothing to show for ${page.group === null ? "the groups" : `group ${esc(page.group)}`}.</p>`;
        page.shown = undefined;
        page.overview = null;
      }
      $("error").textContent = `Could not refresh: ${error.message}${keep ? " (the last good view stays)" : ""}`;
      $("error").hidden = false;
    }
    page.lastRefreshMs = performance.now() - began;
    page.renders += 1;
    if (page.firstRenderMs === null) page.firstRenderMs = performance.now();
    document.body.dataset.renders = String(page.renders);
    page.dueMs = performance.now() + page.intervalMs;
    page.timer = setTimeout(poll, pollMs());
  }

  // A big group's page takes a while to draw: it is drawn again at most every other such while.
  const pollMs = () => Math.max(POLL_MS, 2 * (page.lastRefreshMs || 0));

  async function poll() {
    clearTimeout(page.timer);
    const generation = page.generation;
    if (performance.now() >= page.dueMs) return refresh();
    if (!document.hidden) {
      let newer = true; // an error: refresh() shows it
      try { newer = (await getJSON("/v1/refreshed")).refreshed_at_ms !== page.shownAtMs; } catch (error) { /* newer */ }
      if (generation !== page.generation) return; // the hash changed meanwhile: its refresh runs
      if (newer) return refresh();
    }
    page.timer = setTimeout(poll, pollMs());
  }

  function setInterval_(seconds, refreshedMs) {
    page.intervalMs = Math.min(30, Math.max(1, seconds || 5)) * 1000;
    page.shownAtMs = refreshedMs;
    $("refreshed").textContent = `refreshed ${when(refreshedMs)} · every ${page.intervalMs / 1000} s`;
  }

  // ---- The groups ----
  async function groupsPage() {
    const doc = await getJSON("/v1/groups");
    setInterval_(doc.interval_s, doc.refreshed_at_ms);
    const groups = doc.groups.slice().sort((a, b) => SEVERITY[b.status] - SEVERITY[a.status] || a.group.localeCompare(b.group, undefined, { numeric: true }));
    const rows = groups.map((g) => `<tr data-group="${esc(g.group)}"><td><a href="#group=${encodeURIComponent(g.group)}">${esc(g.group)}</a></td>`
      + `<td>${badge(g.status)}</td><td class="num">${g.members}</td><td class="num">${g.partitions}</td>`
      + `<td class="num">${g.unowned_partitions}</td><td class="num">${num(g.total_lag)}</td><td class="why" title="${esc(g.why)}">${esc(clip(g.why, 300))}</td></tr>`);
    const health = doc.exporter;
    const warn = [!health.connected ? "ZooKeeper session not connected" : null, health.last_error,
      doc.log_ends_unavailable ? `some log ends unknown: ${doc.log_ends_unavailable}` : null,
      ...(doc.unreadable_groups || []).map((u) => `group ${u.group} not shown: ${u.error}`)].filter(Boolean);
    return `<h1>Groups <span class="muted">(${groups.length})</span></h1>`
      + (warn.length ? `<p class="error">${warn.map(esc).join("<br>")}</p>` : "")
      + `<table id="groups"><thead><tr><th>Group</th><th>Status</th><th class="num">Members</th><th class="num">Partitions</th>`
      + `<th class="num">Unowned</th><th class="num">Lag (messages)</th><th>Why</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
  }

  // ---- A group ----
  async function groupPage(name) {
    const path = `/v1/groups/${encodeURIComponent(name)}`;
    const [overview, history] = await Promise.all([getJSON(`${path}/overview`), getJSON(`${path}/history`)]);
    page.overview = overview;
    page.history = history;
    setInterval_(overview.interval_s, overview.refreshed_at_ms);
    const members = memberColours(overview);
    return `<h1 id="group-name">${esc(overview.group)} ${badge(overview.status)}</h1>`
      + `<p class="muted" id="why" title="${esc(overview.why)}">${esc(clip(overview.why, 300))}</p>`
      + problems(overview)
      + `<h2>Lag over the last hour</h2>`
      + `<div class="chart" id="lag-chart">${chart(history, "lag", "messages", "")}</div>`
      + `<div class="chart" id="seconds-chart">${chart(history, "max_lag_seconds", "longest wait, s", "secs")}</div>`
      + `<h2>Ownership <span class="muted">(partitions × members)</span></h2>${ownership(overview, members)}`
      + `<h2>Lag per partition</h2>${lagMap(overview)}${partitionTable(overview, members)}`
      + `<h2>Members <span class="muted">(${overview.members.length})</span></h2>${memberTable(overview, members)}`;
  }

  function problems(o) {
    const todo = o.what_to_do.length
      ? `<ul class="todo" id="todo">${o.what_to_do.map((t) => `<li>${esc(t)}</li>`).join("")}</ul>`
      : `<p id="todo">Nothing to do: ${esc(o.why)}.</p>`;
    const flagged = o.reasons.length + o.reasons_left_off;
    const reasons = o.reasons.length
      ? `<details${flagged <= 8 ? " open" : ""}><summary>Why: ${flagged} reason${flagged === 1 ? "" : "s"}</summary>`
        + `<ul class="reasons" id="reasons">${o.reasons.map((r) => `<li>${esc(r)}</li>`).join("")}`
        + (o.reasons_left_off ? `<li class="muted">and ${o.reasons_left_off} more (the maps and the table show every partition)</li>` : "")
        + "</ul></details>"
      : "";
    const nodes = o.problems.length
      ? `<h3>Nodes that could not be decoded</h3><ul class="reasons">${o.problems.map((r) => `<li>${esc(r)}</li>`).join("")}</ul>` : "";
    const ends = o.log_ends_unavailable ? `<p class="muted">Some log ends are unknown: ${esc(o.log_ends_unavailable)}</p>` : "";
    return `<h2>Problems and what to do</h2><div class="card">${todo}${reasons}${nodes}${ends}</div>`;
  }

  // The chart: the last hour up to the last refresh; a gap where the value was unknown. The SVG
  // carries its scale (data-ymax, data-plot, data-t0/t1) so a reader can turn points back into values.
  function chart(h, key, unit, cls) {
    const W = 900, H = 150, L = 56, R = 10, T = 10, B = 22, w = W - L - R, hgt = H - T - B;
    // The last hour, or since the exporter's first point when it has run for less (a minute at least).
    const t1 = h.at_ms.length ? h.at_ms[h.at_ms.length - 1] : Date.now();
    const span = Math.min(HOUR_MS, Math.max(60000, t1 - (h.at_ms.length ? h.at_ms[0] : t1)));
    const t0 = t1 - span;
    const values = h[key];
    const known = values.filter((v) => v !== null);
    const ymax = niceMax(Math.max(0, ...known));
    const x = (t) => L + ((t - t0) / span) * w;
    const y = (v) => T + hgt * (1 - v / ymax);
    const lines = [];
    let run = [];
    h.at_ms.forEach((t, i) => {
      if (values[i] === null) { if (run.length) lines.push(run); run = []; } else run.push(`${x(t).toFixed(1)},${y(values[i]).toFixed(2)}`);
    });
    if (run.length) lines.push(run);
    const grid = [0, 0.5, 1].map((f) => `<line class="axis" x1="${L}" x2="${W - R}" y1="${y(ymax * f)}" y2="${y(ymax * f)}"/>`
      + `<text x="${L - 4}" y="${y(ymax * f) + 3}" text-anchor="end">${num(ymax * f)}</text>`).join("");
    const ago = (ms) => (ms === 0 ? "now" : span >= 600000 ? `−${Math.round(ms / 60000)} min` : `−${Math.round(ms / 1000)} s`);
    const ticks = [1, 0.75, 0.5, 0.25, 0].map((f) => `<text x="${x(t1 - f * span)}" y="${H - 6}" text-anchor="middle">${ago(f * span)}</text>`).join("");
    const polylines = lines.map((pts) => `<polyline class="line ${cls}" points="${pts.join(" ")}"/>`).join("");
    const last = known.length ? values[values.length - 1] : null;
    return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(unit)} over the last hour" data-ymax="${ymax}"`
      + ` data-plot="${L} ${T} ${w} ${hgt}" data-t0="${t0}" data-t1="${t1}">${grid}${ticks}${polylines}</svg>`
      + `<div class="muted">${esc(unit)}: now <b class="now">${last === null ? "unknown" : num(last)}</b>, `
      + `highest ${num(known.length ? Math.max(...known) : null)} · ${h.at_ms.length} points, one per ${h.step_s} s`
      + `${h.at_ms.length && t1 - h.at_ms[0] < HOUR_MS ? ` · the exporter's first sample: ${when(h.at_ms[0])}` : ""}</div>`;
  }

  function niceMax(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    return [1, 2, 2.5, 5, 10].map((m) => m * p).find((m) => m >= v);
  }

  // Members in id order get colours 0..11 (then again); a thread's owner is its consumer's colour.
  function memberColours(o) {
    const index = new Map(o.members.map((m, i) => [m.id, i]));
    const kinds = new Map(o.members.map((m) => [m.id, m.kind]));
    const owner = o.owners.map((thread) => {
      const cid = thread.replace(/-\d+$/, "");
      return index.has(cid) ? { cid, cls: `o${index.get(cid) % 12}${kinds.get(cid) === "scala" ? " scala" : ""}` } : { cid, cls: "gone" };
    });
    return { index, owner };
  }

  function ownerClass(o, colours, t, i) {
    const code = t.owner[i];
    if (code < 0) return "unowned";
    return o.ownerships[t.ownership[i]] === "owned" ? colours.owner[code].cls : "gone";
  }

  function ownership(o, colours) {
    const owned = new Map();
    o.topics.forEach((t) => t.owner.forEach((c) => { if (c >= 0) { const cid = colours.owner[c].cid; owned.set(cid, (owned.get(cid) || 0) + 1); } }));
    const legend = o.members.map((m) => `<span data-member="${esc(m.id)}"><span class="sw o${colours.index.get(m.id) % 12}${m.kind === "scala" ? " scala" : ""}"></span>`
      + `${esc(m.id)} <span class="kind ${esc(m.kind)}">${m.kind === "scala" ? "Scala" : "zkconsumer"}</span> ${owned.get(m.id) || 0}</span>`).join("")
      + `<span><span class="sw unowned"></span>no owner</span><span><span class="sw gone"></span>owner not a registered member</span>`;
    const small = o.topics.reduce((n, t) => n + t.partition.length, 0) > 1024 ? " small" : "";
    const grids = o.topics.map((t, ti) => `<h3>${esc(t.topic)} <span class="muted">${t.partition.length} partitions</span></h3>`
      + `<div class="grid owners${small}" data-topic="${ti}">${t.partition.map((_, i) => `<i class="${ownerClass(o, colours, t, i)}"></i>`).join("")}</div>`).join("");
    return `<div class="legend" id="owner-legend">${legend}</div>${grids}`;
  }

  function lagMap(o) {
    let most = 0;
    o.topics.forEach((t) => t.lag.forEach((l) => { if (l !== null && l > most) most = l; }));
    const bucket = (l) => (l === null ? "lnone" : l === 0 ? "l0" : `l${Math.min(5, 1 + Math.floor((4 * Math.log(l)) / Math.log(Math.max(2, most)) + 1e-9))}`);
    const small = o.topics.reduce((n, t) => n + t.partition.length, 0) > 1024 ? " small" : "";
    const legend = `<div class="legend"><span><span class="sw l0"></span>caught up</span><span><span class="sw l1"></span>a few</span>`
      + `<span><span class="sw l5"></span>${num(most)} (the most)</span><span><span class="sw lnone"></span>unknown</span></div>`;
    return legend + o.topics.map((t, ti) => `<h3>${esc(t.topic)}</h3><div class="grid lags${small}" data-topic="${ti}">`
      + `${t.lag.map((l) => `<i class="${bucket(l)}"></i>`).join("")}</div>`).join("");
  }

  function partitionTable(o, colours) {
    const rows = [];
    o.topics.forEach((t, ti) => t.partition.forEach((p, i) => rows.push([ti, i])));
    rows.sort((a, b) => (o.topics[b[0]].lag[b[1]] ?? -1) - (o.topics[a[0]].lag[a[1]] ?? -1) || a[0] - b[0] || a[1] - b[1]);
    const shown = rows.slice(0, MAX_ROWS).map(([ti, i]) => {
      const t = o.topics[ti], code = t.owner[i];
      const owner = code < 0 ? "–" : esc(o.owners[code]);
      return `<tr data-topic="${esc(t.topic)}" data-partition="${t.partition[i]}"><td>${esc(t.topic)}</td><td class="num">${t.partition[i]}</td>`
        + `<td>${owner}</td><td class="num">${num(t.committed[i])}</td><td class="num">${num(t.log_end[i])}</td>`
        + `<td class="num lag">${num(t.lag[i])}</td><td class="num">${t.lag_seconds[i] ?? "–"}</td>`
        + `<td>${badge(o.statuses[t.status[i]])}</td><td>${esc(o.ownerships[t.ownership[i]])}</td></tr>`;
    });
    const more = rows.length > MAX_ROWS ? `<p class="muted">The ${MAX_ROWS} most lagging of ${rows.length} partitions; hover the maps for any other.</p>` : "";
    return `<table id="partitions"><thead><tr><th>Topic</th><th class="num">Partition</th><th>Owner</th><th class="num">Committed</th>`
      + `<th class="num">Log end</th><th class="num">Lag</th><th class="num">Lag, s</th><th>Status</th><th>Ownership</th></tr></thead>`
      + `<tbody>${shown.join("")}</tbody></table>${more}`;
  }

  function memberTable(o, colours) {
    if (!o.members.length) return `<p id="members" class="muted">No member is registered.</p>`;
    const rows = o.members.map((m) => {
      const sub = m.error ? `unreadable: ${esc(m.error)}`
        : m.subscription ? `${esc(m.pattern)} ${esc(Object.entries(m.subscription).map(([k, n]) => `${k}:${n}`).join(", "))}` : "–";
      return `<tr data-member="${esc(m.id)}"><td><span class="sw o${colours.index.get(m.id) % 12}${m.kind === "scala" ? " scala" : ""}"></span>${esc(m.id)}</td>`
        + `<td><span class="kind ${esc(m.kind)}">${m.kind === "scala" ? "Scala" : "zkconsumer"}</span></td>`
        + `<td>${esc(m.session || "–")}</td><td>${when(m.registered_ms)}</td><td>${sub}</td><td class="num">${m.version ?? "–"}</td></tr>`;
    });
    return `<table id="members"><thead><tr><th>Consumer id</th><th>Kind</th><th>Session</th><th>Registered</th>`
      + `<th>Subscription</th><th class="num">Version</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
  }

  // One tooltip for every cell of every grid: the cell's index among its grid's children.
  document.addEventListener("mouseover", (event) => {
    const cell = event.target, tip = $("tip");
    if (!(cell instanceof HTMLElement) || cell.tagName !== "I" || !cell.parentElement.classList.contains("grid") || !page.overview) {
      tip.hidden = true;
      return;
    }
    const o = page.overview, t = o.topics[Number(cell.parentElement.dataset.topic)];
    const i = Array.prototype.indexOf.call(cell.parentElement.children, cell);
    const code = t.owner[i];
    tip.textContent = `${t.topic}-${t.partition[i]}  ${o.statuses[t.status[i]]}\nowner: ${code < 0 ? "none" : o.owners[code]} (${o.ownerships[t.ownership[i]]})`
      + `\ncommitted ${num(t.committed[i])} · log end ${num(t.log_end[i])}\nlag ${num(t.lag[i])} messages, ${t.lag_seconds[i] ?? "–"} s`;
    tip.style.left = `${event.clientX + 12}px`;
    tip.style.top = `${event.clientY + 12}px`;
    tip.hidden = false;
  });

  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  route();
})();
