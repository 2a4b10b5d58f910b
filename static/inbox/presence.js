/* Who else has the open chat on screen, and who is typing in it, from the chat's websocket
 * frames (live.js passes them on as "inbox:presence"). The page's heartbeat keeps it listed;
 * "is typing" fades a few seconds after the last keystroke event. And the notice of an action
 * ("Too late: Anna took this chat first"), which stays until the manager dismisses it.
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
  if (!root || !root.dataset.chatId) return;
  var me = Number(root.dataset.userId);
  var chatId = Number(root.dataset.chatId);
  var TYPING_MS = 6000;
  var viewers = [];
  var typing = {};

  function line(cls, text) {
    var el = document.createElement("span");
    el.className = cls;
    el.textContent = text;
    return el;
  }

  function render() {
    var box = document.getElementById("presence-" + chatId);
    if (!box) return;
    var now = Date.now();
    var others = viewers.filter(function (v) { return v.id !== me; }).map(function (v) { return v.name; });
    var typers = Object.keys(typing).filter(function (id) { return typing[id].until > now; })
      .map(function (id) { return typing[id].name; });
    box.textContent = "";
    box.hidden = !others.length && !typers.length;
    if (others.length) box.appendChild(line("presence-viewers", word("Also viewing: %(names)s", { names: others.join(", ") })));
    if (typers.length) box.appendChild(line("presence-typing", word(typers.length > 1 ? "%(names)s are typing…" : "%(names)s is typing…", { names: typers.join(", ") })));
  }

  document.addEventListener("inbox:presence", function (e) {
    var msg = e.detail;
    if (msg.chat !== chatId) return;
    if (msg.type === "presence") {
      viewers = msg.viewers || [];
      var ids = viewers.map(function (v) { return String(v.id); });
      Object.keys(typing).forEach(function (id) { if (ids.indexOf(id) === -1) delete typing[id]; });
    } else if (msg.user && msg.user.id !== me) {
      typing[msg.user.id] = { name: msg.user.name, until: Date.now() + TYPING_MS };
      setTimeout(render, TYPING_MS + 50);
    }
    render();
  });

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-action=dismiss-notice]");
    var box = button && button.closest("[data-chat-notice]");
    if (!box) return;
    box.hidden = true;
    box.replaceChildren();
  });

  setInterval(function () {
    if (window.inboxLive && window.inboxLive.send) window.inboxLive.send({ action: "heartbeat" });
  }, 15000);
})();
