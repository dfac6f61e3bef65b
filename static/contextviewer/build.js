/* contextviewer build.js (no build step, no dependencies; loaded with defer; CSP: script-src 'self').
 * The build selection on the conversation page: turn boxes (or space on the current turn) and
 * "use summary" boxes. A fold's summary and the turns it stands for exclude each other: checking
 * one clears the other, says why beside the box it cleared (until the next change), and turns behind
 * a chosen summary are marked. A turn that holds a fold's
 * summary (the message opening it) excludes the turns that fold put away, as the server's rule
 * says: while one side is selected the other's boxes are disabled, with the reason beside them.
 * The server checks again.
 * The preview is server-rendered HTML (escaped there); nothing from transcripts is built here. */
(function () {
  "use strict";

  var form = document.getElementById("build-form");
  if (!form) return;
  var status = document.getElementById("build-selection");
  var button = document.getElementById("build-button");
  var exclusions = {}; // fold number -> [[first turn, last turn], ...]
  var holders = {}; // fold number -> the turn holding its summary as a message (it opens that turn)
  var state = { turns: {}, folds: {} };
  var previewTimer = null;

  function all(selector) {
    return Array.prototype.slice.call(document.querySelectorAll(selector));
  }

  function covers(fold, turn) {
    var ranges = exclusions[fold] || [];
    for (var i = 0; i < ranges.length; i++) {
      if (turn >= ranges[i][0] && turn <= ranges[i][1]) return true;
    }
    return false;
  }

  function keys(obj) {
    return Object.keys(obj).map(Number).sort(function (a, b) { return a - b; });
  }

  function ranges(numbers) {
    var out = [];
    for (var i = 0; i < numbers.length; i++) {
      var j = i;
      while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j++;
      out.push(i === j ? String(numbers[i]) : numbers[i] + "–" + numbers[j]);
      i = j;
    }
    return out.join(", ");
  }

  function say(text) {
    if (status) status.textContent = text;
    // The bar's control carries the latest word too, for a reader whose card is closed.
    var toggle = document.getElementById("build-toggle");
    if (!toggle) return;
    if (!toggle.dataset.title) toggle.dataset.title = toggle.getAttribute("title") || "";
    toggle.setAttribute("title", text && text !== "Nothing selected." ? text + " (key b opens the card)" : toggle.dataset.title);
  }

  // Why a turn may not be selected now (a turn holding a fold's summary and a turn that fold put
  // away exclude each other), or "" when it may.
  function blocked(turn) {
    var folds = keys(holders);
    for (var i = 0; i < folds.length; i++) {
      var f = folds[i];
      var holder = holders[f];
      if (holder !== turn && state.turns[holder] && covers(f, turn)) {
        return "Turn " + holder + " (selected) holds the summary of fold " + f + ", which put turn " + turn + " away: select either.";
      }
      if (holder === turn) {
        var away = keys(state.turns).filter(function (t) { return t !== turn && covers(f, t); });
        if (away.length) {
          return "Turn " + turn + " holds the summary of fold " + f + ", which put away turn" + (away.length > 1 ? "s " : " ") + ranges(away) + " (selected): select either.";
        }
      }
    }
    return "";
  }

  // Why the latest change cleared a box, shown beside that box until the next change:
  // "fold:N" or "turn:N" -> the words.
  var clearedWhy = {};

  function selectTurn(turn, on) {
    var replaced = [];
    var held = [];
    if (on) {
      state.turns[turn] = true;
      keys(state.folds).forEach(function (f) {
        if (!covers(f, turn)) return;
        delete state.folds[f];
        // The turn that opens with a fold's summary brings that summary itself; the others are
        // turns the summary replaced.
        if (holders[f] === turn) {
          held.push(f);
          clearedWhy["fold:" + f] = "Cleared: turn " + turn + ", which you selected, begins with this summary, so the build has it already.";
        } else {
          replaced.push(f);
          clearedWhy["fold:" + f] = "Cleared: you selected turn " + turn + ", one of the turns this summary replaced (a build holds one or the other).";
        }
      });
    } else {
      delete state.turns[turn];
    }
    // A build holds a summary or the turns it replaced, never both: say which one went, and how to get it back.
    var said = [];
    if (held.length) {
      said.push("Turn " + turn + " begins with the summary of fold " + held.join(", ") +
        ", so that fold\u2019s \u201cuse summary\u201d box was cleared: the turn brings the summary with it, and a build holds it once. " +
        "To build from the summary without the rest of turn " + turn + ", tick \u201cuse summary\u201d again.");
    }
    if (replaced.length) {
      said.push("Turn " + turn + " is one of the turns the summary of fold " + replaced.join(", ") +
        " replaced, so that summary is no longer selected (a build holds the summary or its turns, not both). " +
        "To build from the summary instead, tick its \u201cuse summary\u201d box again.");
    }
    return said.join(" ");
  }

  function selectFold(fold, on) {
    var replaced = [];
    var holder = null;
    if (on) {
      state.folds[fold] = true;
      keys(state.turns).forEach(function (t) {
        if (!covers(fold, t)) return;
        delete state.turns[t];
        if (holders[fold] === t) {
          holder = t;
          clearedWhy["turn:" + t] = "Cleared: this turn begins with the summary of fold " + fold + ", which you selected on its own.";
        } else {
          replaced.push(t);
          clearedWhy["turn:" + t] = "Cleared: the summary of fold " + fold + ", which you selected, replaced this turn.";
        }
      });
    } else {
      delete state.folds[fold];
    }
    var said = [];
    if (replaced.length) {
      said.push("The summary of fold " + fold + " replaces turn" + (replaced.length > 1 ? "s " : " ") + ranges(replaced) +
        ", so " + (replaced.length > 1 ? "they are" : "it is") + " no longer selected (a build holds the summary or its turns, not both).");
    }
    if (holder !== null) {
      said.push("Turn " + holder + " begins with that summary, so it is no longer selected: the build holds the summary once.");
    }
    return said.join(" ");
  }

  // The words beside a cleared box (after its label for a "use summary" box, after the box in a
  // turn's header), or none.
  function showCleared(box, key) {
    var anchor = box.closest("label") || box;
    if (!anchor.parentNode) return;
    var note = anchor.parentNode.querySelector(":scope > .pick-cleared");
    var why = clearedWhy[key];
    if (!why) {
      if (note) note.remove();
      return;
    }
    if (!note) {
      note = document.createElement("span");
      note.className = "pick-cleared small";
      note.setAttribute("role", "status");
      anchor.insertAdjacentElement("afterend", note);
    }
    note.textContent = why;
  }

  // The page shows the state: boxes checked, turns behind a chosen summary marked.
  function sync() {
    all("input.pick-turn").forEach(function (box) {
      var turn = Number(box.value);
      box.checked = !!state.turns[turn];
      // A checked box stays enabled (it can always be cleared); an unchecked one that would break
      // the rule is disabled and says why (title and the note beside it).
      var why = box.checked ? "" : blocked(turn);
      box.disabled = !!why;
      if (why) box.setAttribute("title", why);
      else box.removeAttribute("title");
      var note = box.parentNode && box.parentNode.querySelector(".pick-blocked");
      if (why && !note && box.parentNode) {
        note = document.createElement("span");
        note.className = "pick-blocked muted small";
        box.insertAdjacentElement("afterend", note);
      }
      if (note) {
        note.textContent = why;
        note.hidden = !why;
      }
      showCleared(box, "turn:" + turn);
      var behind = keys(state.folds).filter(function (f) { return covers(f, turn); });
      var head = box.closest("details.turn");
      if (head) {
        head.classList.toggle("picked", box.checked);
        head.classList.toggle("behind-summary", behind.length > 0);
        var summary = head.querySelector("summary");
        if (summary) {
          if (behind.length) summary.setAttribute("title", "Behind the chosen summary of fold " + behind.join(", "));
          else summary.removeAttribute("title");
        }
      }
    });
    all("input.pick-fold").forEach(function (box) {
      box.checked = !!state.folds[Number(box.value)];
      showCleared(box, "fold:" + box.value);
      var seg = box.closest(".segment");
      if (seg) seg.classList.toggle("summary-picked", all(".pick-fold:checked").some(function (b) { return seg.contains(b); }));
    });
    var turns = keys(state.turns);
    var folds = keys(state.folds);
    if (button) button.disabled = !turns.length && !folds.length;
    showCount(turns, folds);
  }

  // The bar's Build and export control says what is selected while its card is closed.
  function showCount(turns, folds) {
    var count = document.getElementById("build-count");
    var toggle = document.getElementById("build-toggle");
    if (!count) return;
    var parts = [];
    if (turns.length) parts.push(turns.length + " turn" + (turns.length > 1 ? "s" : ""));
    if (folds.length) parts.push(folds.length + " summar" + (folds.length > 1 ? "ies" : "y"));
    count.textContent = parts.length ? parts.join(" + ") + " selected" : "";
    if (toggle) toggle.classList.toggle("has-selection", parts.length > 0);
  }

  function describe() {
    var turns = keys(state.turns);
    var folds = keys(state.folds);
    var parts = [];
    if (folds.length) parts.push("the summary of fold " + folds.join(", "));
    if (turns.length) parts.push(turns.length + " turn" + (turns.length > 1 ? "s" : "") + " (" + ranges(turns) + ")");
    return parts.length ? "Selected: " + parts.join(" and ") + "." : "Nothing selected.";
  }

  function preview() {
    var url = form.getAttribute("data-preview");
    var target = document.getElementById("build-preview");
    if (!url || !target) return;
    var params = new URLSearchParams();
    keys(state.turns).forEach(function (t) { params.append("turns", t); });
    keys(state.folds).forEach(function (f) { params.append("folds", f); });
    var full = url + "?" + params.toString();
    if (window.htmx && window.htmx.ajax) {
      window.htmx.ajax("GET", full, { target: target, swap: "innerHTML" });
    } else {
      fetch(full, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
        target.innerHTML = html; // server-rendered, escaped there
      });
    }
  }

  function changed(message) {
    sync();
    say(message ? describe() + " " + message : describe());
    clearTimeout(previewTimer);
    previewTimer = setTimeout(preview, 150);
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!(box instanceof HTMLInputElement)) return;
    if (box.classList.contains("pick-turn") || box.classList.contains("pick-fold")) clearedWhy = {};
    if (box.classList.contains("pick-turn")) {
      changed(selectTurn(Number(box.value), box.checked));
    } else if (box.classList.contains("pick-fold")) {
      changed(selectFold(Number(box.value), box.checked));
    }
  });

  // Space on the current turn (j/k) selects it; Enter and o still fold and unfold.
  function currentTurnBox(event) {
    var t = event.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.tagName === "BUTTON" || t.isContentEditable)) return null;
    var turn = document.querySelector("details.turn.current");
    if (!turn) return null;
    if (t !== document.body && !turn.contains(t)) return null;
    return turn.querySelector("summary input.pick-turn");
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== " " || event.ctrlKey || event.metaKey || event.altKey) return;
    var box = currentTurnBox(event);
    if (!box) return;
    event.preventDefault();
    if (event.repeat) return;
    if (box.disabled) {
      say(describe() + " " + (box.getAttribute("title") || ""));
      return;
    }
    box.checked = !box.checked;
    box.dispatchEvent(new Event("change", { bubbles: true }));
  });
  document.addEventListener("keyup", function (event) {
    if (event.key === " " && currentTurnBox(event)) event.preventDefault(); // no toggle of the summary
  });

  // Turns loaded later (more turns, an unfolded archived segment) show the same state.
  document.body.addEventListener("htmx:afterSettle", sync);

  form.addEventListener("submit", function (event) {
    if (!keys(state.turns).length && !keys(state.folds).length) {
      event.preventDefault();
      say("Select at least one turn or one fold's summary.");
    }
  });

  var options = form.getAttribute("data-options");
  if (options) {
    fetch(options, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : { folds: {} }; })
      .then(function (data) {
        exclusions = data.folds || {};
        holders = {};
        Object.keys(data.holders || {}).forEach(function (f) { holders[Number(f)] = Number(data.holders[f]); });
        form.setAttribute("data-ready", "1");
        sync();
      });
  }
  // Boxes checked before the script ran (back/forward cache) count too.
  all("input.pick-turn:checked").forEach(function (b) { state.turns[Number(b.value)] = true; });
  all("input.pick-fold:checked").forEach(function (b) { state.folds[Number(b.value)] = true; });
  sync();
  say(describe());
})();
