// WhatsApp's customer-service window (inbox/conversations/window.py): the chat header's
// "Window closes in 3 h" counts down from the time the server rendered, and once it has passed
// the reply box is locked with its explanation, without a reload. A customer message pushes a
// fresh time (the window reopens) and the box unlocks. The server refuses a late send anyway.
(function () {
  "use strict";
  var WARN_MS = 3600 * 1000;
  var TICK_MS = 15000;
  // The words come from the badge (data-text-*), rendered in the inbox's language.
  function words(badge, name, fallback) {
    return badge.dataset[name] || fallback;
  }

  function duration(badge, ms) {
    var minutes = Math.max(1, Math.floor(ms / 60000));
    if (minutes < 60) return words(badge, "textMin", "{n} min").replace("{n}", minutes);
    return words(badge, "textH", "{n} h").replace("{n}", Math.floor(minutes / 60));
  }

  function lock(chatId, closed) {
    var composer = document.getElementById("composer-" + chatId);
    if (!composer) return;
    var fields = composer.querySelector("[data-window-lockable]");
    var note = composer.querySelector("[data-window-locked]");
    if (fields) fields.disabled = closed;
    if (note) note.hidden = !closed;
  }

  var closing = null;  // the timer set for the moment the nearest window closes

  function update() {
    var soonest = Infinity;
    document.querySelectorAll("[data-window]").forEach(function (badge) {
      // Python writes microseconds; the date format JavaScript must read has milliseconds.
      var raw = (badge.dataset.windowClosesAt || "").replace(/(\.\d{3})\d+/, "$1");
      var at = raw ? Date.parse(raw) : NaN;
      var left = isNaN(at) ? 0 : at - Date.now();
      var state = left <= 0 ? "closed" : left < WARN_MS ? "closing" : "open";
      badge.textContent = state === "closed"
        ? words(badge, "textClosed", "WhatsApp window closed: template only")
        : words(badge, "textOpen", "Window closes in {left}").replace("{left}", duration(badge, left));
      badge.classList.remove("window-open", "window-closing", "window-closed");
      badge.classList.add("window-" + state);
      badge.dataset.windowState = state;
      lock(badge.dataset.chatId, state === "closed");
      if (left > 0) soonest = Math.min(soonest, left);
    });
    clearTimeout(closing);
    // The minute tick below is too coarse for the moment itself: lock right when it comes.
    if (soonest < TICK_MS) closing = setTimeout(update, soonest + 50);
  }

  document.addEventListener("inbox:upserted", update);
  document.addEventListener("htmx:load", update);
  document.addEventListener("DOMContentLoaded", update);
  setInterval(update, TICK_MS);
  update();
})();
