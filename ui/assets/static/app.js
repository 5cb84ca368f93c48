// Progressive enhancement only: every flow works without this file.
(function () {
  "use strict";
  function copyFrom(button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field) return;
    var text = field.value !== undefined ? field.value : field.textContent;
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      button.setAttribute("aria-live", "polite");
      setTimeout(function () { button.textContent = label; }, 2000);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { field.select(); document.execCommand("copy"); done(); });
    } else {
      field.select();
      document.execCommand("copy");
      done();
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-copy]").forEach(function (b) {
      b.hidden = false;
      b.addEventListener("click", function () { copyFrom(b); });
    });
    document.querySelectorAll("[data-select-on-focus]").forEach(function (f) {
      f.addEventListener("focus", function () { f.select(); });
    });
    // After a refused form, start at the first field to fix.
    var invalid = document.querySelector("input[aria-invalid=true], textarea[aria-invalid=true], fieldset[aria-invalid=true] input");
    if (invalid) { invalid.focus(); }
    document.querySelectorAll("form[data-busy]").forEach(function (form) {
      form.addEventListener("submit", function () {
        var b = form.querySelector("button[type=submit]");
        if (b) { b.setAttribute("aria-busy", "true"); b.textContent = form.getAttribute("data-busy"); }
      });
    });
  });
})();
