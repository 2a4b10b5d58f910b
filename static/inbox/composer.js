/* The composer of the open chat: Enter sends (Shift+Enter: a new line), drafts are kept per
 * manager and chat in localStorage until sent, "typing" goes to the chat's other pages, and a
 * reply to a chat another manager has asks "Take over from X?" before it is sent (the server
 * refuses it unasked too: the confirmation names the holder, in `take_from`).
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
  var me = root.dataset.userId || "";
  var chatId = root.dataset.chatId;
  var submitted = null;
  var typingAt = 0;

  function draftKey(mode) { return "inbox.draft." + me + "." + chatId + "." + mode; }

  function composer() { return document.getElementById("composer-" + chatId); }

  function restore(box) {
    box.querySelectorAll("textarea[data-draft]").forEach(function (area) {
      var saved = localStorage.getItem(draftKey(area.dataset.draft));
      if (saved && !area.value) area.value = saved;
    });
  }

  // A freshly swapped-in composer: the draft of what was just sent goes, the others come back.
  function adopt() {
    var box = composer();
    if (!box || box.dataset.adopted) return;
    box.dataset.adopted = "1";
    if (submitted) {
      var area = box.querySelector("textarea[data-draft='" + submitted + "']");
      if (area && !area.value) localStorage.removeItem(draftKey(submitted));
      submitted = null;
    }
    restore(box);
  }

  function holder() {
    var header = document.getElementById("chat-header-" + chatId);
    if (!header || !header.dataset.holderId || header.dataset.holderId === me) return null;
    return { id: header.dataset.holderId, name: header.dataset.holderName || word("another manager") };
  }

  function ask(form, who) {
    var box = form.closest(".composer").querySelector("[data-takeover-ask]");
    box.dataset.holderId = who.id;
    box.querySelector("[data-takeover-question]").textContent = word("Take over from %(name)s?", { name: who.name });
    box.hidden = false;
    box.querySelector("[data-action='take-over-and-send']").focus();
  }

  function send(form) {
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  document.addEventListener("input", function (e) {
    var area = e.target.closest && e.target.closest(".composer textarea[data-draft]");
    if (!area) return;
    var key = draftKey(area.dataset.draft);
    if (area.value) localStorage.setItem(key, area.value); else localStorage.removeItem(key);
    var now = Date.now();
    if (area.dataset.draft === "reply" && area.value && now - typingAt > 3000 && window.inboxLive && window.inboxLive.send) {
      typingAt = now;
      window.inboxLive.send({ action: "typing" });
    }
  });

  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || e.shiftKey || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    if (!e.target.matches || !e.target.matches(".composer textarea")) return;
    e.preventDefault();
    var form = e.target.closest("form");
    var file = form.querySelector("input[type=file]");
    if (e.target.value.trim() || (file && file.files && file.files.length)) send(form);
  });

  // Capture phase: runs before htmx sends the form, and stops it while the manager decides.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.matches || !form.matches(".composer form")) return;
    if (form.dataset.composer === "reply") {
      var who = holder();
      var confirmed = form.querySelector("input[name=take_from]");
      if (who && confirmed && confirmed.value !== who.id) {
        e.preventDefault();
        e.stopPropagation();
        ask(form, who);
        return;
      }
    }
    submitted = form.dataset.composer;
  }, true);

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-takeover-ask] [data-action]");
    if (!button) return;
    var box = button.closest("[data-takeover-ask]");
    var form = box.closest(".composer").querySelector("form[data-composer='reply']");
    box.hidden = true;
    if (button.dataset.action === "take-over-and-send") {
      form.querySelector("input[name=take_from]").value = box.dataset.holderId || "";
      send(form);
    } else {
      form.querySelector("textarea").focus();
    }
  });

  document.body.addEventListener("htmx:afterSettle", adopt);
  adopt();
})();
