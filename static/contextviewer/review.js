// Review screens, keyboard-driven: digits score a scale, y/n answer a yes/no question,
// a/b/e vote in a pairwise comparison, s submits, j/k go to the next/previous item.
// Loaded as a file (strict CSP: no inline scripts); does nothing while typing in a field.
(function () {
  "use strict";
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable ||
      (tag === "INPUT" && !/^(radio|checkbox|button|submit)$/i.test(el.type));
  }
  function pick(key) {
    var form = document.getElementById("score-form") || document.getElementById("pair-form");
    if (!form) return false;
    // Scales first (digits), then yes/no, then pairwise letters: the first unanswered match wins.
    var inputs = form.querySelectorAll('input[type=radio][data-key="' + key + '"]');
    if (!inputs.length) return false;
    var chosen = inputs[0];
    for (var i = 0; i < inputs.length; i++) {
      var group = form.querySelectorAll('input[name="' + inputs[i].name + '"]:checked');
      if (!group.length) { chosen = inputs[i]; break; }
    }
    chosen.checked = true;
    chosen.focus();
    return true;
  }
  function go(id) {
    var link = document.getElementById(id);
    if (link) { window.location.assign(link.href); return true; }
    return false;
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) {
      if (ev.key === "Escape" && ev.target && ev.target.blur) ev.target.blur();
      return;
    }
    var key = ev.key;
    var handled = false;
    if (key === "s") {
      var form = document.getElementById("score-form") || document.getElementById("pair-form");
      if (form) { form.requestSubmit ? form.requestSubmit() : form.submit(); handled = true; }
    } else if (key === "j") {
      handled = go("next-item");
    } else if (key === "k") {
      handled = go("prev-item");
    } else if (key === "c") {
      var box = document.querySelector("#score-form textarea");
      if (box) { box.focus(); handled = true; }
    } else if (/^[0-9aybne]$/.test(key)) {
      handled = pick(key);
    }
    if (handled) ev.preventDefault();
  });
})();
