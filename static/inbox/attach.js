/* Attaching a file in the composer: the chosen file's name (and a way to remove it), and, when
 * the server asked "Take over from X?" about a file the browser cannot send again by itself,
 * taking over opens the file picker instead of sending the caption alone. The type and size
 * are checked by the server, by the file's content (inbox/conversations/manager_attachments.py).
 */
(function () {
  "use strict";

  function chosen(input) {
    var box = input.closest("form").querySelector("[data-attach-chosen]");
    if (!box) return;
    var file = input.files && input.files[0];
    box.querySelector("[data-attach-name]").textContent = file ? file.name : "";
    box.hidden = !file;
  }

  document.addEventListener("change", function (e) {
    if (e.target.matches && e.target.matches("[data-attach-input]")) chosen(e.target);
  });

  document.addEventListener("click", function (e) {
    var clear = e.target.closest && e.target.closest("[data-action='attach-clear']");
    if (clear) {
      var input = clear.closest("form").querySelector("[data-attach-input]");
      input.value = "";
      chosen(input);
      return;
    }
    var take = e.target.closest && e.target.closest("[data-takeover-ask][data-reattach] [data-action='take-over-and-send']");
    if (!take) return;
    e.stopPropagation();
    var ask = take.closest("[data-takeover-ask]");
    var form = ask.closest(".composer").querySelector("form[data-composer='reply']");
    form.querySelector("input[name=take_from]").value = ask.dataset.holderId || "";
    ask.hidden = true;
    delete ask.dataset.reattach;
    form.querySelector("[data-attach-input]").click();
  }, true);
})();
