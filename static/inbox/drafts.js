// A bot reply waiting for approval (templates/inbox/_draft.html): Enter on the focused draft
// approves it, as its Approve button would. Only the card itself: Enter inside the edit box
// types a new line, and Enter on a button presses that button.
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
})();
