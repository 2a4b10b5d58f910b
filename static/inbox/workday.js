// A manager's tools beside the live inbox: the search hit shown highlighted, the contact panel
// folded on narrow screens, the handoff card folded to its one line on a phone, and canned replies offered by typing "/" in the reply box.
// Text only: canned replies go into the textarea as text, and the popup is built with
// textContent, so nothing a business wrote becomes markup.
(function () {
  "use strict";

  // --- the search hit ------------------------------------------------------------------------
  function showHit() {
    var box = document.querySelector(".messages[data-hit]");
    if (!box) return;
    var hit = document.getElementById("msg-" + box.dataset.hit);
    if (!hit) return;
    hit.classList.add("msg-hit");
    hit.setAttribute("tabindex", "-1");
    hit.scrollIntoView({ block: "center" });
  }

  // --- the contact panel ---------------------------------------------------------------------
  function foldPanel() {
    var panel = document.querySelector("[data-contact-panel]");
    if (panel && window.matchMedia("(max-width: 1100px)").matches) panel.open = false;
  }

  // --- the handoff card ----------------------------------------------------------------------
  // On a phone the card folds to its one-line summary so the messages keep the screen; a card
  // the manager opened stays open when a push renders it anew.
  var opened = {};

  function foldHandoff(scope) {
    if (!window.matchMedia("(max-width: 800px)").matches) return;
    var cards = scope.matches && scope.matches("[data-handoff-card]") ? [scope] :
      Array.prototype.slice.call(scope.querySelectorAll("[data-handoff-card]"));
    cards.forEach(function (card) {
      var slot = card.closest(".handoff-slot");
      card.open = !!(slot && opened[slot.id]);
    });
  }

  document.addEventListener("toggle", function (e) {
    var card = e.target;
    if (!card.matches || !card.matches("[data-handoff-card]")) return;
    var slot = card.closest(".handoff-slot");
    if (slot) opened[slot.id] = card.open;
  }, true);

  document.addEventListener("inbox:upserted", function (e) {
    if (e.detail && e.detail.node && e.detail.node.querySelectorAll) foldHandoff(e.detail.node);
  });

  // --- canned replies ------------------------------------------------------------------------
  var cache = {};
  var TRIGGER = /(?:^|\s)\/([^\s\/]*)$/;

  function load(url) {
    if (!cache[url]) {
      cache[url] = fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
        .then(function (data) { return data.replies || []; })
        .catch(function () { delete cache[url]; return []; });
    }
    return cache[url];
  }

  function popupFor(area) {
    var id = area.getAttribute("aria-controls");
    return id ? document.getElementById(id) : null;
  }

  function close(area) {
    var popup = popupFor(area);
    if (popup) { popup.hidden = true; popup.textContent = ""; }
    area.removeAttribute("aria-activedescendant");
    area.setAttribute("aria-expanded", "false");
  }

  function trigger(area) {
    var before = area.value.slice(0, area.selectionStart);
    var found = TRIGGER.exec(before);
    return found ? { query: found[1].toLowerCase(), start: before.length - found[1].length - 1 } : null;
  }

  function matches(reply, query) {
    if (!query) return true;
    return (reply.shortcut || "").toLowerCase().indexOf(query) === 0 ||
      reply.title.toLowerCase().indexOf(query) !== -1;
  }

  function select(popup, index) {
    var items = popup.querySelectorAll("[role=option]");
    if (!items.length) return;
    index = (index + items.length) % items.length;
    items.forEach(function (item, i) { item.setAttribute("aria-selected", i === index ? "true" : "false"); });
    popup.dataset.active = String(index);
    var area = popup.closest("form").querySelector("textarea");
    area.setAttribute("aria-activedescendant", items[index].id);
    items[index].scrollIntoView({ block: "nearest" });
  }

  function open(area) {
    var at = trigger(area);
    var popup = popupFor(area);
    if (!at || !popup) { close(area); return; }
    load(area.dataset.cannedUrl).then(function (replies) {
      var now = trigger(area);
      if (!now || now.query !== at.query) return;
      var shown = replies.filter(function (reply) { return matches(reply, at.query); }).slice(0, 8);
      popup.textContent = "";
      if (!shown.length) { close(area); return; }
      shown.forEach(function (reply, i) {
        var item = document.createElement("li");
        item.id = popup.id + "-opt-" + reply.id;
        item.setAttribute("role", "option");
        item.className = "canned-option";
        item.dataset.index = String(i);
        var title = document.createElement("strong");
        title.textContent = reply.title + (reply.shortcut ? "  /" + reply.shortcut : "");
        var text = document.createElement("span");
        text.textContent = reply.text;
        item.appendChild(title);
        item.appendChild(text);
        item._reply = reply;
        popup.appendChild(item);
      });
      popup.hidden = false;
      area.setAttribute("aria-expanded", "true");
      select(popup, 0);
    });
  }

  function choose(area, item) {
    var at = trigger(area);
    if (!at || !item || !item._reply) { close(area); return; }
    var caret = area.selectionStart;
    var text = item._reply.text;
    area.value = area.value.slice(0, at.start) + text + area.value.slice(caret);
    var end = at.start + text.length;
    area.setSelectionRange(end, end);
    close(area);
    area.focus();
  }

  document.addEventListener("input", function (e) {
    if (e.target.matches && e.target.matches("textarea[data-canned-url]")) open(e.target);
  });

  document.addEventListener("keydown", function (e) {
    var area = e.target;
    if (!area.matches || !area.matches("textarea[data-canned-url]")) return;
    var popup = popupFor(area);
    if (!popup || popup.hidden) return;
    var active = Number(popup.dataset.active || 0);
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      select(popup, active + (e.key === "ArrowDown" ? 1 : -1));
    } else if ((e.key === "Enter" && !e.ctrlKey && !e.metaKey && !e.shiftKey) || e.key === "Tab") {
      e.preventDefault();
      e.stopPropagation();
      choose(area, popup.querySelectorAll("[role=option]")[active]);
    } else if (e.key === "Escape") {
      e.preventDefault();
      close(area);
    }
  }, true);

  document.addEventListener("mousedown", function (e) {
    var item = e.target.closest && e.target.closest(".canned-option");
    if (!item) return;
    e.preventDefault();
    choose(item.closest("form").querySelector("textarea"), item);
  });

  document.addEventListener("focusout", function (e) {
    if (e.target.matches && e.target.matches("textarea[data-canned-url]")) close(e.target);
  });

  showHit();
  foldPanel();
  foldHandoff(document);
})();
