// A bot reply waiting for approval (templates/inbox/_draft.html): Enter on the focused draft
// approves it, as its Approve button would. Only the card itself: Enter inside the edit box
// types a new line, and Enter on a button presses that button. When a pushed event says a
// draft changed, the menu's "To approve" count is asked again (it is per manager).
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var card = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey) return;
    if (!(card instanceof HTMLElement) || !card.matches(".draft-card[data-draft]")) return;
    var approve = card.querySelector("[data-action=approve-draft]");
    if (!approve) return;
    event.preventDefault();
    approve.click();
  });

  var asking = false;
  function refreshCount() {
    var badge = document.querySelector("[data-drafts-waiting]");
    if (!badge || asking) return;
    asking = true;
    fetch(badge.dataset.countUrl, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (data) {
        badge.textContent = String(data.count);
        badge.hidden = !data.count;
      })
      .catch(function () {})
      .finally(function () { asking = false; });
  }
  document.addEventListener("inbox:event", function (event) {
    var ev = event.detail || {};
    if (ev.event === "draft.changed") refreshCount();
  });
})();
