/* Per-manager unread badges, the Mine / Unassigned / All and status filters of live rows, and
 * the notices "assigned to you" and "snooze ended". Extends static/inbox/live.js.
 *
 * A pushed row is rendered once for the whole business, so it carries only the chat's count of
 * customer messages (data-inbound). This manager's read count per chat comes from the page
 * render (data-read), from the server for a chat the page had not shown (/inbox/chat/N/read/),
 * or from this page itself: while the chat is open, every new customer message is marked read
 * at once over the websocket, so the open chat's badge never rises.
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
  var live = window.inboxLive;
  if (!root || !live) return;
  var me = root.dataset.userId || "";
  var openChat = root.dataset.chatId || "";
  var readCounts = {};

  function chatOf(row) { return row.id.replace("chat-row-", ""); }

  function remember(scope) {
    (scope || document).querySelectorAll(".chat-row[data-read]").forEach(function (row) {
      readCounts[chatOf(row)] = Number(row.dataset.read);
    });
  }

  function showBadge(row) {
    var badge = row.querySelector("[data-unread]");
    var read = readCounts[chatOf(row)];
    if (!badge || typeof read !== "number") return;
    var unread = Math.max(0, Number(row.dataset.inbound || 0) - read);
    badge.textContent = String(unread);
    badge.hidden = unread === 0;
  }

  function markOpenRead(row) {
    var inbound = Number(row.dataset.inbound || 0);
    if (readCounts[openChat] === inbound) return;
    readCounts[openChat] = inbound;
    live.send({ action: "read", chat: Number(openChat) });
  }

  function rowArrived(row) {
    var chat = chatOf(row);
    if (row.dataset.read !== undefined) readCounts[chat] = Number(row.dataset.read);
    if (chat === openChat) { markOpenRead(row); showBadge(row); return; }
    if (typeof readCounts[chat] === "number") { showBadge(row); return; }
    fetch("/inbox/chat/" + Number(chat) + "/read/", { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (data) {
        readCounts[chat] = Number(data.read);
        var current = document.getElementById("chat-row-" + chat);
        if (current) showBadge(current);
      })
      .catch(function () { /* the badge stays hidden; the next render shows it */ });
  }

  live.filters.push(function (row, list) {
    var status = list.dataset.filterStatus || "open";
    if (status !== "any" && row.dataset.status !== status) return false;
    var view = list.dataset.filterView || "all";
    if (view === "mine" && row.dataset.assignee !== me) return false;
    if (view === "unassigned" && row.dataset.assignee !== "") return false;
    return true;
  });

  function toast(titleText, bodyText, chat) {
    var box = document.getElementById("toasts");
    if (!box) return;
    var item = document.createElement("div");
    item.className = "toast";
    item.setAttribute("role", "alert");
    item.dataset.notice = titleText;
    var title = document.createElement("span");
    title.className = "toast-title";
    title.textContent = titleText;
    var body = document.createElement("div");
    body.textContent = bodyText;
    var link = document.createElement("a");
    link.href = "/inbox/chat/" + Number(chat) + "/";
    link.textContent = word("Open chat");
    item.appendChild(title); item.appendChild(body); item.appendChild(link);
    box.appendChild(item);
    setTimeout(function () { item.remove(); }, 15000);
  }

  document.addEventListener("inbox:upserted", function (e) {
    var node = e.detail.node;
    if (node && node.classList && node.classList.contains("chat-row")) rowArrived(node);
  });

  // A message of mine (or the bot's, in a chat nobody has) was not delivered: shown on the page
  // too, whether or not this browser may show desktop notifications (notify.js does those).
  document.addEventListener("inbox:notify", function (e) {
    var msg = e.detail;
    if (msg.kind === "failed") toast(msg.title, msg.body, msg.chat);
  });

  document.addEventListener("inbox:event", function (e) {
    var ev = e.detail;
    var data = ev.data || {};
    if (ev.event === "chat.assigned" && String(data.assignee_id) === me) {
      toast("Assigned to you", data.customer || "A customer", ev.chat);
    } else if (ev.event === "chat.status" && data.woke) {
      toast("Snooze ended", data.customer || "A customer", ev.chat);
    }
  });

  // A filter change re-renders the list with this manager's read counts.
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "chat-list") remember(document);
    document.querySelectorAll(".view-tab").forEach(function (tab) {
      var input = tab.querySelector("input");
      tab.classList.toggle("active", !!input && input.checked);
    });
  });
  document.addEventListener("change", function (e) {
    if (!e.target.matches || !e.target.matches(".view-tab input")) return;
    document.querySelectorAll(".view-tab").forEach(function (tab) {
      tab.classList.toggle("active", tab.querySelector("input") === e.target);
    });
  });

  remember(document);
})();
