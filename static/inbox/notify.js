/* Desktop notifications (the browser's Notification API).
 *
 * The server decides who is told what (inbox/web/live/notify.py) and sends each person's `notify`
 * messages on the inbox page's websocket; live.js hands them over as an `inbox:notify` event.
 * Here the browser shows them, when this browser was allowed to; a click focuses the tab and
 * opens the chat. Permission is asked only when the manager clicks "Allow desktop
 * notifications" on the Notifications settings page, never on its own.
 */
(function () {
  "use strict";
  var supported = "Notification" in window;

  // --- the settings page: asking for permission ----------------------------------------------
  var box = document.getElementById("notify-permission");
  var stateText = document.getElementById("notify-state");
  var allow = document.getElementById("notify-allow");

  function showPermission() {
    if (!box) return;
    var permission = supported ? Notification.permission : "unsupported";
    box.dataset.state = permission;
    stateText.textContent = {
      granted: "This browser shows desktop notifications for the kinds ticked below.",
      denied: "This browser blocks notifications from this site; allow them in the browser's site settings.",
      "default": "This browser has not been allowed to show notifications yet.",
      unsupported: "This browser cannot show desktop notifications."
    }[permission] || "";
    allow.hidden = permission !== "default";
  }

  if (box) {
    showPermission();
    allow.addEventListener("click", function () {
      var asked = Notification.requestPermission(showPermission);
      if (asked && asked.then) asked.then(showPermission);
    });
  }

  // --- the inbox page: showing them ----------------------------------------------------------
  var root = document.getElementById("inbox");
  var openChat = root && root.dataset.chatId ? Number(root.dataset.chatId) : null;

  document.addEventListener("inbox:notify", function (e) {
    var msg = e.detail;
    if (!supported || Notification.permission !== "granted") return;
    // The manager is looking at this very chat: the page itself shows what happened.
    if (msg.chat === openChat && document.visibilityState === "visible" && document.hasFocus()) return;
    var shown = new Notification(msg.title, {
      body: msg.body,
      tag: "chat-" + msg.chat + "-" + msg.kind,  // several open tabs show it once
      data: { url: msg.url, kind: msg.kind, chat: msg.chat }
    });
    shown.onclick = function () {
      window.focus();
      shown.close();
      if (msg.url && msg.url.charAt(0) === "/") location.assign(msg.url);
    };
  });
})();
