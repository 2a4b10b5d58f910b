// The sandbox's message form empties itself once htmx has posted it (kept out of the template:
// the Content-Security-Policy allows no inline script and no eval, so no hx-on attributes).
document.addEventListener("htmx:afterRequest", function (event) {
  var form = event.target;
  if (form instanceof HTMLFormElement && form.hasAttribute("data-reset-after-request")) {
    form.reset();
  }
});
