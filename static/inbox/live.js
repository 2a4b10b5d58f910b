/* The inbox page's live updates: one websocket, fragments swapped by element id, gaps replayed.
 *
 * Every event carries a per-business sequence number. The page starts from the numbers it was
 * rendered at (data-seq); an event that is not the next one means something was missed, so the
 * page asks /inbox/events/?since=N for exactly that, or re-renders its regions when the server
 * no longer has it. Fragments are HTML rendered by the server's escaping templates.
 */
(function () {
  "use strict";
  // Words in the reader's language, from the page (inbox/web/local_language.py SCRIPT_WORDS).
  var WORDS = (function () {
    try { return JSON.parse(document.getElementById("inbox-words").textContent); } catch (e) { return {}; }
  })();
  function word(text, values) {
    var out = WORDS[text] || text;
    Object.keys(values || {}).forEach(function (key) { out = out.split("%(" + key + ")s").join(values[key]); });
    return out;
  }
  var root = document.getElementById("inbox");
  if (!root) return;

  var chatId = root.dataset.chatId ? Number(root.dataset.chatId) : null;
  var eventsUrl = root.dataset.eventsUrl;
  var last = JSON.parse(root.dataset.seq || "{}");
  var pending = Number(root.dataset.pending || 0);
  var baseTitle = document.title;
  var statusEl = document.getElementById("live-status");
  var socket = null;
  var retry = 0;
  var syncing = {};
  var queued = {};
  // filters: extra row predicates; send: a frame to the server (static/inbox/status.js).
  var state = { connected: false, applied: 0, filters: [], send: send };
  window.inboxLive = state;

  // --- connection ----------------------------------------------------------------------------
  function setStatus(value, text) {
    if (!statusEl) return;
    statusEl.dataset.state = value;
    statusEl.textContent = text;
  }

  // Reconnect fast after a drop (the first retry within 250 ms, jittered so a restarted server
  // is not hit by every page at once), then back off to at most 8 s; coming back online or to
  // the tab retries at once. On open the page asks for what it missed (resyncAll), before hello.
  var timer = null;
  var held = false;  // test seam: inboxLive.drop({hold: true}) keeps the socket down

  function backoff(attempt) {
    var ceiling = attempt === 1 ? 250 : Math.min(8000, 500 * Math.pow(2, attempt - 2));
    return ceiling / 2 + Math.random() * ceiling / 2;
  }

  function schedule() {
    if (timer || held) return;
    retry = Math.min(retry + 1, 6);
    timer = setTimeout(function () { timer = null; connect(); }, backoff(retry));
  }

  function reconnectNow() {
    if (held || (socket && socket.readyState <= 1)) return;  // connecting or open
    clearTimeout(timer); timer = null;
    connect();
  }

  function connect() {
    if (held) return;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = socket = new WebSocket(scheme + location.host + root.dataset.wsPath);
    ws.onopen = function () {
      retry = 0; state.connected = true; state.openedAt = performance.now();
      setStatus("live", word("Live"));
      resyncAll();
    };
    ws.onmessage = function (e) { handle(JSON.parse(e.data)); };
    ws.onclose = function () {
      if (ws !== socket) return;
      state.connected = false;
      setStatus("offline", word("Reconnecting…"));
      schedule();
    };
  }

  window.addEventListener("online", reconnectNow);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") reconnectNow();
  });
  state.drop = function (options) {
    held = !!(options && options.hold);
    if (socket) socket.close();
  };
  state.release = function () { held = false; };

  function send(frame) {
    if (socket && socket.readyState === WebSocket.OPEN) { socket.send(JSON.stringify(frame)); return true; }
    return false;
  }

  function handle(msg) {
    if (msg.type === "batch") { (msg.events || []).forEach(handle); return; }  // a burst, in order
    if (msg.type === "presence" || msg.type === "typing") {
      document.dispatchEvent(new CustomEvent("inbox:presence", { detail: msg }));
      return;
    }
    if (msg.type === "notify") {
      document.dispatchEvent(new CustomEvent("inbox:notify", { detail: msg }));
      return;
    }
    if (msg.type === "hello") {
      Object.keys(msg.seq).forEach(function (business) {
        var known = last[business] || 0;
        if (msg.seq[business] < known) { reloadRegions(); last[business] = msg.seq[business]; }
        else if (msg.seq[business] > known) resync(business);
      });
      return;
    }
    if (msg.type !== "event" && msg.type !== "skip") return;
    var business = String(msg.business);
    var known = last[business] || 0;
    if (msg.seq <= known) return;  // already applied (a replay got it first)
    if (msg.seq === known + 1 && !syncing[business]) { apply(msg); last[business] = msg.seq; return; }
    (queued[business] = queued[business] || []).push(msg);
    resync(business);
  }

  function resync(business) {
    if (syncing[business]) return;
    syncing[business] = true;
    var url = eventsUrl + "?business=" + business + "&since=" + (last[business] || 0) +
      (chatId ? "&chat=" + chatId : "");
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (data) {
        if (data.reset) { reloadRegions(); last[business] = data.seq; }
        else data.events.forEach(function (ev) {
          if (ev.seq > (last[business] || 0)) { apply(ev); last[business] = ev.seq; }
        });
        setPending(data.pending);
        var rest = (queued[business] || []).sort(function (a, b) { return a.seq - b.seq; });
        queued[business] = [];
        rest.forEach(function (ev) {
          if (ev.seq > (last[business] || 0)) { apply(ev); last[business] = ev.seq; }
        });
      })
      .catch(function () { setTimeout(function () { resync(business); }, 2000); })
      .finally(function () { syncing[business] = false; });
  }

  function resyncAll() { Object.keys(last).forEach(resync); }

  // --- applying fragments --------------------------------------------------------------------
  function apply(ev) {
    state.applied += 1;
    if (ev.type === "skip") return;
    (ev.fragments || []).forEach(upsert);
    if (typeof ev.pending === "number") setPending(ev.pending);
    if (ev.event === "chat.changed" && ev.data && ev.data.notify) notify(ev);
    refreshList();
    document.dispatchEvent(new CustomEvent("inbox:event", { detail: ev }));
  }

  function parse(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    return t.content.firstElementChild;
  }

  function upsert(fragment) {
    var node = parse(fragment.html);
    if (!node) return;
    var existing = document.getElementById(fragment.id);
    if (fragment.scope === "list" && !matchesFilters(node)) { if (existing) existing.remove(); return; }
    var messages = fragment.container && fragment.container.indexOf("messages-") === 0 ?
      document.getElementById(fragment.container) : null;
    var stick = messages && nearBottom();
    if (existing) {
      if (existing.tagName === "DETAILS" && existing.open) node.open = true;
      existing.replaceWith(node);
    } else {
      var container = fragment.container && document.getElementById(fragment.container);
      if (!container) return;
      container.appendChild(node);
    }
    place(node);
    decorate(node);
    document.dispatchEvent(new CustomEvent("inbox:upserted", { detail: { node: node } }));
    if (window.htmx) window.htmx.process(node);
    if (stick) scrollToBottom();
  }

  // Keep the element where its data-sort says (the server's order), in its container.
  function place(node) {
    var key = node.dataset && node.dataset.sort;
    var parent = node.parentNode;
    if (!key || !parent) return;
    var before = null;
    for (var s = parent.firstElementChild; s; s = s.nextElementSibling) {
      if (s !== node && s.dataset.sort && s.dataset.sort > key) { before = s; break; }
    }
    if (node.nextElementSibling !== before) parent.insertBefore(node, before);
  }

  function matchesFilters(row) {
    var list = document.getElementById("chat-list");
    if (!list || !row.classList.contains("chat-row")) return true;
    var wantState = list.dataset.filterState, wantChannel = list.dataset.filterChannel;
    var q = (list.dataset.filterQ || "").toLowerCase();
    if (wantState && row.dataset.owner !== wantState) return false;
    if (wantChannel && row.dataset.channel !== wantChannel) return false;
    var wantLabel = list.dataset.filterLabel;
    if (wantLabel && (" " + (row.dataset.labels || "") + " ").indexOf(" " + wantLabel + " ") === -1) return false;
    if (q && (row.dataset.search || "").toLowerCase().indexOf(q) === -1) {
      var digits = q.replace(/\D/g, "");
      if (!digits || (row.dataset.search || "").indexOf(digits) === -1) return false;
    }
    return state.filters.every(function (keep) { return keep(row, list); });
  }

  function refreshList() {
    var items = document.getElementById("chat-list-items");
    var empty = document.querySelector("#chat-list .list-empty");
    if (items && empty) empty.hidden = items.children.length > 0;
  }

  // Re-render what the page shows from the server (the replay log no longer reaches back).
  function reloadRegions() {
    fetch(location.href, { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var ids = /^(chat-list$|chat-header-|handoff-|messages-|typing-|history-)/;
        doc.querySelectorAll("[id]").forEach(function (fresh) {
          if (!ids.test(fresh.id)) return;
          var current = document.getElementById(fresh.id);
          if (!current) return;
          var node = document.importNode(fresh, true);
          current.replaceWith(node);
          decorate(node);
          if (window.htmx) window.htmx.process(node);
        });
        var fresh = doc.getElementById("inbox");
        if (fresh) setPending(Number(fresh.dataset.pending || 0));
      });
  }

  // --- page details ---------------------------------------------------------------------------
  function decorate(scope) {
    if (chatId) {
      var active = document.getElementById("chat-row-" + chatId);
      document.querySelectorAll(".chat-row.active").forEach(function (r) { if (r !== active) r.classList.remove("active"); });
      if (active) active.classList.add("active");
    }
    localTimes(scope || document);
    waitingTimes(scope || document);
  }

  // Times are shown on the business's clock (body[data-time-zone], the zone the server renders
  // in), never the browser's: a manager travelling, or a laptop set to UTC, sees the shop's day.
  function zoneOptions(extra) {
    var zone = document.body && document.body.dataset.timeZone;
    var options = {};
    if (zone) options.timeZone = zone;
    for (var key in extra) options[key] = extra[key];
    return options;
  }

  function dayOf(d) {
    try { return d.toLocaleDateString("en-CA", zoneOptions({})); } catch (e) { return d.toDateString(); }
  }

  function localTimes(scope) {
    var today = dayOf(new Date());
    var locale = document.documentElement.lang || undefined;
    (scope.querySelectorAll ? scope : document).querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) return;
      if (el.closest(".handoff-head")) return;  // "handed over N ago" stays relative
      try {
        var full = d.toLocaleString(locale, zoneOptions({ hourCycle: "h23" }));
        el.title = full;
        if (el.closest(".history-table") || el.closest(".review-head")) { el.textContent = full; return; }
        el.textContent = dayOf(d) === today ?
          d.toLocaleTimeString(locale, zoneOptions({ hour: "2-digit", minute: "2-digit", hourCycle: "h23" })) :
          d.toLocaleDateString(locale, zoneOptions({ day: "numeric", month: "short" }));
      } catch (e) { /* an unknown zone name: keep the server's text */ }
    });
  }

  function waitingTimes(scope) {
    var now = Date.now();
    (scope.querySelectorAll ? scope : document).querySelectorAll("[data-waiting-since]").forEach(function (el) {
      var minutes = Math.max(0, Math.floor((now - new Date(el.dataset.waitingSince)) / 60000));
      el.textContent = word("waiting %(since)s", { since: minutes < 60 ? word("%(n)s min", { n: minutes }) :
        word("%(hours)s h %(minutes)s min", { hours: Math.floor(minutes / 60), minutes: minutes % 60 }) });
    });
  }

  function setPending(count) {
    if (typeof count !== "number" || isNaN(count)) return;
    pending = count;
    document.title = (pending > 0 ? "(" + pending + ") " : "") + baseTitle;
  }

  function notify(ev) {
    var box = document.getElementById("toasts");
    if (box) {
      var toast = document.createElement("div");
      toast.className = "toast";
      toast.setAttribute("role", "alert");
      var title = document.createElement("span");
      title.className = "toast-title";
      title.textContent = word("Waiting for a human");
      var body = document.createElement("div");
      body.textContent = (ev.data.customer || word("A customer")) + (ev.data.reason ? " · " + ev.data.reason.replace(/_/g, " ") : "");
      var link = document.createElement("a");
      link.href = "/inbox/chat/" + Number(ev.chat) + "/";
      link.textContent = word("Open chat");
      toast.appendChild(title); toast.appendChild(body); toast.appendChild(link);
      box.appendChild(toast);
      setTimeout(function () { toast.remove(); }, 15000);
    }
    if (localStorage.getItem("inbox.sound") === "on") beep();
  }

  function beep() {
    try {
      var Ctx = window.AudioContext || window.webkitAudioContext;
      var ctx = new Ctx();
      var osc = ctx.createOscillator(), gain = ctx.createGain();
      osc.frequency.value = 880; gain.gain.value = 0.08;
      osc.connect(gain); gain.connect(ctx.destination);
      osc.start(); osc.stop(ctx.currentTime + 0.25);
    } catch (e) { /* sound is optional */ }
  }

  function nearBottom() {
    var box = chatId && document.getElementById("conversation-" + chatId);
    return !!box && box.scrollHeight - box.scrollTop - box.clientHeight < 120;
  }

  function scrollToBottom() {
    var box = chatId && document.getElementById("conversation-" + chatId);
    if (box) box.scrollTop = box.scrollHeight;
  }

  // A chat opens at its newest message and stays there while what is in it settles: images
  // (their sizes are known only once loaded), players, the card above folding. Once the
  // manager scrolls up it stays where they are, until they come back to the bottom.
  function pinToBottom() {
    var box = chatId && document.getElementById("conversation-" + chatId);
    if (!box) return;
    var pinned = !document.querySelector(".messages[data-hit]");  // a search hit is shown instead
    var lastTop = box.scrollTop;
    box.addEventListener("scroll", function () {
      var atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 8;
      if (atBottom) pinned = true;
      else if (box.scrollTop < lastTop - 1) pinned = false;
      lastTop = box.scrollTop;
    }, { passive: true });
    function keep() { if (pinned) scrollToBottom(); }
    box.addEventListener("load", keep, true);  // an image inside (load does not bubble)
    if (window.ResizeObserver) {
      var watcher = new ResizeObserver(keep);
      watcher.observe(box);
      var list = document.getElementById("messages-" + chatId);
      if (list) watcher.observe(list);
    }
  }

  // --- wiring -------------------------------------------------------------------------------
  var sound = document.getElementById("sound-toggle");
  if (sound) {
    sound.checked = localStorage.getItem("inbox.sound") === "on";
    sound.addEventListener("change", function () {
      localStorage.setItem("inbox.sound", sound.checked ? "on" : "off");
      if (sound.checked) beep();
    });
  }

  document.addEventListener("click", function (e) {
    var tab = e.target.closest("[data-composer-tab]");
    if (!tab) return;
    var composer = tab.closest(".composer");
    composer.querySelectorAll("[data-composer-tab]").forEach(function (t) {
      var on = t === tab;
      t.classList.toggle("active", on);
      t.setAttribute("aria-selected", on ? "true" : "false");
    });
    composer.querySelectorAll("[data-composer]").forEach(function (f) {
      f.hidden = f.dataset.composer !== tab.dataset.composerTab;
    });
    var area = composer.querySelector("[data-composer='" + tab.dataset.composerTab + "'] textarea");
    if (area) area.focus();
  });

  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && e.target.matches(".composer textarea")) {
      e.preventDefault();
      var form = e.target.closest("form");
      if (form.requestSubmit) form.requestSubmit(); else form.submit();
    }
  });

  // After any action, fetch whatever the socket may not have delivered yet.
  document.body.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail && e.detail.elt && e.detail.elt.closest && e.detail.elt.closest("#chat-pane")) resyncAll();
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    decorate(e.detail.target && e.detail.target.parentNode || document);
    if (e.detail.target && e.detail.target.id === "chat-list") {
      var list = document.getElementById("chat-list");
      if (list) { decorate(list); refreshList(); }
    }
  });

  // "Show more chats" appends the next page; a row that moved up meanwhile is already shown.
  document.body.addEventListener("htmx:afterSettle", function () {
    var items = document.getElementById("chat-list-items");
    if (!items) return;
    var seen = {};
    Array.prototype.slice.call(items.children).forEach(function (row) {
      if (seen[row.id]) row.remove(); else seen[row.id] = true;
    });
    decorate(items);
    refreshList();
  });

  setInterval(function () { waitingTimes(document); }, 30000);
  decorate(document);
  setPending(pending);
  scrollToBottom();
  pinToBottom();
  connect();
})();
