/* lagless ui: keeps the console's pages live. Polls the JSON API every interval and updates
 * tables, figures and charts in place. Every value is set with textContent (never innerHTML):
 * a group id or record holding markup is shown as text and runs nothing. */
(function () {
  "use strict";
  var state = JSON.parse(document.getElementById("state").textContent);
  var every = Math.max(500, (state.interval || 1) * 1000);
  var sort = { table: null, key: null, dir: 1 };
  // sorted by the server across pages; the other columns sort the rows of the page
  var SERVER_SORTED = ["group", "state", "members", "protocol", "lag", "lag_s", "status"];

  function get(url, done) {
    var xhr = new XMLHttpRequest();
    xhr.open("GET", url);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.onload = function () {
      if (xhr.status === 200) done(JSON.parse(xhr.responseText), xhr);
    };
    xhr.send();
  }

  function text(id, value) {
    var node = document.getElementById(id);
    if (node) node.textContent = value === null || value === undefined ? "-" : String(value);
    return node;
  }

  function fmt(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "number" && !Number.isInteger(v)) return String(Math.round(v * 10) / 10);
    return String(v);
  }

  function membersText(g) {
    if (g.members_source === "not answered") return "not answered by the broker";
    return g.members + (g.members_source === "instances" ? " (instances)" : "");
  }

  function cellNode(value, cls, href) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    if (href) {
      var a = document.createElement("a");
      a.href = href;
      a.textContent = value;
      td.appendChild(a);
    } else {
      td.textContent = fmt(value);
    }
    return td;
  }

  function fill(tableId, rows, cells) {
    var table = document.getElementById(tableId);
    if (!table) return;
    if (sort.table === tableId && sort.key) {
      rows = rows.slice().sort(function (a, b) {
        var x = a[sort.key], y = b[sort.key];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sort.dir;
      });
    }
    var body = document.createElement("tbody");
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      cells(r).forEach(function (c) { tr.appendChild(c); });
      body.appendChild(tr);
    });
    table.replaceChild(body, table.tBodies[0]);
  }

  function sortable(tableId, refresh) {
    var table = document.getElementById(tableId);
    if (!table) return;
    Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th) {
      th.addEventListener("click", function () {
        var key = th.getAttribute("data-sort");
        sort.dir = sort.table === tableId && sort.key === key ? -sort.dir : 1;
        sort.table = tableId;
        sort.key = key;
        refresh();
      });
    });
  }

  function cluster() {
    get("/api/cluster", function (c) {
      var node = text("cluster", c.up
        ? "cluster " + (c.cluster || "") + ": up · " + c.groups + " groups, " + c.topics +
          " topics · sampled " + c.t + " in " + c.cycle_s + " s"
        : (c.error || "").indexOf("sampling failed") === 0
          ? c.error + " (since " + c.down_since + ")"
          : "cluster unreachable since " + c.down_since + " (" + (c.error || "") + ")");
      var bad = Object.keys(c.scrape_errors || {});
      if (node && bad.length) {
        node.textContent += " · scrape failed: " + bad.map(function (t) {
          return t + " (" + c.scrape_errors[t] + ")";
        }).join(", ");
      }
      if (node) node.className = c.up ? "up" : "down";
    });
  }

  function groupHref(name) { return "/group/" + encodeURIComponent(name); }
  function topicHref(name) { return "/topic/" + encodeURIComponent(name); }

  function overview() {
    var only = document.getElementById("only-lagging");
    var groups = [], topics = [];
    function draw() {
      fill("groups", groups, function (g) {
        return [cellNode(g.group, "name", groupHref(g.group)), cellNode(g.state),
          cellNode(membersText(g)), cellNode(g.protocol || "-"), cellNode(g.lag),
          cellNode(g.lag_s), cellNode(g.trend), cellNode(g.catch_up_s),
          cellNode(g.status, g.status)];
      });
      fill("topics", topics, function (t) {
        return [cellNode(t.topic, "name", topicHref(t.topic)), cellNode(t.partitions),
          cellNode(t.end), cellNode(t.rate)];
      });
    }
    function poll() {
      var q = "/api/groups?offset=" + (state.offset || 0) + "&limit=" + (state.limit || 100) +
        (only && only.checked ? "&lagging=1" : "");
      if (sort.table === "groups" && SERVER_SORTED.indexOf(sort.key) >= 0) {
        q += "&sort=" + sort.key + (sort.dir < 0 ? "&dir=desc" : "");
      }
      get(q, function (rows, xhr) {
        groups = rows;
        text("groups-count", xhr.getResponseHeader("X-Total-Count"));
        draw();
      });
      get("/api/topics", function (rows) { topics = rows; draw(); });
    }
    if (only) only.addEventListener("change", poll);
    sortable("groups", function () { draw(); poll(); });
    sortable("topics", draw);
    return poll;
  }

  function group() {
    var base = "/api/groups/" + encodeURIComponent(state.group);
    var range = document.getElementById("range");
    var handles = {};
    var doc = null;
    function draw() {
      if (!doc) return;
      fill("partitions", doc.partitions, function (p) {
        return [cellNode(p.topic, "name"), cellNode(p.partition),
          cellNode((p.owners || []).join(" + ") || null), cellNode(p.committed),
          cellNode(p.end), cellNode(p.lag), cellNode(p.lag_s), cellNode(p.position),
          cellNode(p.first_unfinished), cellNode(p.in_flight), cellNode(p.paused)];
      });
      fill("rebalances", doc.rebalances, function (r) {
        return [cellNode(r.at), cellNode(r.duration_s), cellNode(r.moved), cellNode(r.peak_lag)];
      });
      fill("instances", doc.instances, function (i) {
        return [cellNode(i.client_id), cellNode(i.handler), cellNode(i.host), cellNode(i.pid),
          cellNode(i.source), cellNode(i.in_flight), cellNode(i.paused)];
      });
    }
    function poll() {
      get(base, function (g) {
        doc = g;
        text("g-state", g.state);
        text("g-members", membersText(g));
        text("g-protocol", g.protocol || "-");
        text("g-lag", g.lag);
        text("g-lag-s", fmt(g.lag_s));
        var st = text("g-status", g.status);
        if (st) st.className = g.status;
        text("g-rebalances", g.rebalances_total);
        var busy = document.getElementById("g-rebalancing");
        if (busy) busy.textContent = g.rebalancing_since ? "rebalancing since " + g.rebalancing_since : "";
        draw();
      });
      var seconds = range ? Number(range.value) : 900;
      var since = new Date(Date.now() - seconds * 1000).toISOString();
      get(base + "/charts?since=" + encodeURIComponent(since), function (list) {
        if (!window.LaglessCharts) return;
        list.forEach(function (spec) {
          var node = document.getElementById(spec.id);
          if (!node) return;
          if (spec.id === "chart-e2e" && !(spec.series || []).length) {
            node.style.display = "none";
            return;
          }
          node.style.display = "";
          if (handles[spec.id]) handles[spec.id].update(spec);
          else handles[spec.id] = window.LaglessCharts.mount(node, spec);
        });
      });
    }
    if (range) range.addEventListener("change", poll);
    sortable("partitions", draw);
    return poll;
  }

  var pagePoll = state.page === "overview" ? overview() : state.page === "group" ? group() : null;
  function tick() {
    cluster();
    if (pagePoll) pagePoll();
  }
  tick();
  setInterval(tick, every);
})();
