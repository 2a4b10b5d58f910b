/* Navigation on every page: the menu button whenever the bar does not hold the navigation, and
 * moving through the chat list with the keyboard.
 *
 * Fit: the bar is measured with every link laid out; if anything overflows (an admin's long menu
 * at 1280 px, a phone, a longer translation, a badge that appears), the bar gets .nav-collapsed
 * and the links go behind the menu button. Measured again when the bar or its items resize.
 * Menu: the button toggles the site menu (aria-expanded says which); Escape or a click outside
 * closes it and gives the focus back to the button; opening it moves the focus to its first link.
 * Chat list: j / ArrowDown and k / ArrowUp move the focus between rows, Enter opens the row (it is
 * a link). j and k work anywhere on the inbox page, the arrows inside the list; neither while the
 * manager types in a field.
 */
(function () {
  "use strict";

  // --- the menu ------------------------------------------------------------------------------
  var button = document.getElementById("menu-button");
  var menu = document.getElementById("site-menu");

  function setOpen(open, restoreFocus) {
    if (!button || !menu) return;
    button.setAttribute("aria-expanded", open ? "true" : "false");
    menu.classList.toggle("open", open);
    if (open) {
      var first = menu.querySelector("a, button, input, select");
      if (first) first.focus();
    } else if (restoreFocus) {
      button.focus();
    }
  }

  function isOpen() { return !!button && button.getAttribute("aria-expanded") === "true"; }

  var bar = document.getElementById("topbar");
  var nav = menu && menu.querySelector(".topnav");
  var right = menu && menu.querySelector(".topbar-right");
  var fitting = false;

  function overflows(el) { return !!el && el.scrollWidth > el.clientWidth + 1; }

  function fit() {
    if (!bar || !nav || fitting) return;
    fitting = true;
    var wasOpen = isOpen();
    if (wasOpen) menu.classList.remove("open");
    bar.classList.remove("nav-collapsed");
    var tooWide = overflows(nav) || overflows(bar) || overflows(menu) ||
      (right && right.getBoundingClientRect().right > bar.getBoundingClientRect().right + 1);
    bar.classList.toggle("nav-collapsed", tooWide);
    if (!tooWide) button.setAttribute("aria-expanded", "false");
    else if (wasOpen) menu.classList.add("open");
    fitting = false;
  }

  if (bar && nav) {
    fit();
    window.addEventListener("resize", fit);
    if (document.fonts && document.fonts.ready) document.fonts.ready.then(fit);
    if (window.ResizeObserver) {
      var watcher = new ResizeObserver(function () { window.requestAnimationFrame(fit); });
      watcher.observe(bar);
      menu.querySelectorAll(".topnav > a, .topbar-right > *").forEach(function (el) { watcher.observe(el); });
    }
  }

  if (button && menu) {
    button.addEventListener("click", function () { setOpen(!isOpen(), true); });
    document.addEventListener("click", function (e) {
      if (isOpen() && !menu.contains(e.target) && !button.contains(e.target)) setOpen(false, false);
    });
  }

  // --- the chat list ------------------------------------------------------------------------
  function typing(el) {
    if (!el || !el.tagName) return false;
    return el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName);
  }

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#chat-list-items .chat-row"))
      .filter(function (row) { return row.offsetParent !== null; });
  }

  function move(step) {
    var all = rows();
    if (!all.length) return false;
    var at = all.indexOf(document.activeElement);
    if (at === -1) at = all.indexOf(document.querySelector("#chat-list-items .chat-row.active"));
    var next = at === -1 ? (step > 0 ? 0 : all.length - 1) :
      Math.max(0, Math.min(all.length - 1, at + step));
    all[next].focus();
    all[next].scrollIntoView({ block: "nearest" });
    return true;
  }

  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && isOpen()) { e.preventDefault(); setOpen(false, true); return; }
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    var inList = !!(e.target.closest && e.target.closest("#chat-list"));
    var step = 0;
    if (e.key === "j" || (e.key === "ArrowDown" && inList)) step = 1;
    else if (e.key === "k" || (e.key === "ArrowUp" && inList)) step = -1;
    if (step && move(step)) e.preventDefault();
  });
})();
