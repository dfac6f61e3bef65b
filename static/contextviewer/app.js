/* contextviewer app.js (no build step, no dependencies; loaded with defer; CSP: script-src 'self').
 * Keyboard: j/k next/previous turn (archived ones too), J/K next/previous message of the turn,
 * o or Enter fold/unfold, g/G first/last, / search, ? keys,
 * h handoff (after a confirmation dialog).
 * Curve: hover shows a point's figures, click opens its turn. Images load on click.
 * Transcript text is never written as HTML here: only textContent. */
(function () {
  "use strict";

  function turns() {
    return Array.prototype.slice.call(document.querySelectorAll("details.turn"));
  }

  // What j/k step through: every turn that can be seen, and each archived segment's head (a
  // closed segment's turns are behind it: j on the head opens it and enters its first turn).
  function items() {
    return Array.prototype.slice.call(document.querySelectorAll("details.turn, details.segment.archived")).filter(function (el) {
      var segment = el.parentElement && el.parentElement.closest("details.segment.archived");
      var turn = el.parentElement && el.parentElement.closest("details.turn");
      return (!segment || segment.open) && (!turn || turn.open);
    });
  }

  function current() {
    return document.querySelector("details.turn.current, details.segment.current");
  }

  function enter(segment) {
    // Open a closed archived segment (its turns load on toggle) and select its first turn.
    segment.open = true;
    var tries = 0;
    (function wait() {
      var first = segment.querySelector("details.turn");
      if (first) select(first);
      else if (++tries < 100) setTimeout(wait, 50);
    })();
  }

  function currentMessage(turn) {
    return turn.querySelector(".message.current-message");
  }

  function moveMessage(step) {
    // J/K: the messages of the open turn (the turn opens first; its messages load on toggle).
    var turn = document.querySelector("details.turn.current");
    if (!turn) return;
    if (!turn.open) turn.open = true;
    var tries = 0;
    (function wait() {
      var messages = Array.prototype.slice.call(turn.querySelectorAll(".message")).filter(function (m) {
        return m.closest("details.turn") === turn;
      });
      if (!messages.length) {
        if (++tries < 100) setTimeout(wait, 50);
        return;
      }
      var old = currentMessage(turn);
      var i = messages.indexOf(old);
      i = i < 0 ? (step > 0 ? 0 : messages.length - 1) : Math.max(0, Math.min(messages.length - 1, i + step));
      if (old) old.classList.remove("current-message");
      messages[i].classList.add("current-message");
      messages[i].scrollIntoView({ block: "nearest" });
    })();
  }

  function select(el) {
    if (!el) return;
    var old = current();
    if (old) old.classList.remove("current");
    el.classList.add("current");
    var summary = el.querySelector("summary");
    if (summary) summary.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var here = current();
    if (step > 0 && here && here.matches("details.segment") && !here.open) {
      enter(here);
      return;
    }
    var all = items();
    if (!all.length) return;
    var i = all.indexOf(here);
    if (i < 0) {
      i = step > 0 ? 0 : all.length - 1;
      // The first j on a page that begins with a closed archived segment enters its first turn.
      if (step > 0 && all[0].matches("details.segment") && !all[0].open) {
        enter(all[0]);
        return;
      }
    } else {
      i = Math.max(0, Math.min(all.length - 1, i + step));
    }
    select(all[i]);
  }

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function showKeys() {
    var dialog = document.getElementById("keys-help");
    if (dialog && !dialog.open && dialog.showModal) dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var dialog = document.getElementById("keys-help");
    if (dialog && dialog.open) return;
    if (document.querySelector("dialog[open]")) return;
    switch (event.key) {
      case "j":
        move(1);
        break;
      case "k":
        move(-1);
        break;
      case "J":
        moveMessage(1);
        break;
      case "K":
        moveMessage(-1);
        break;
      case "o":
      case "Enter": {
        var el = current();
        if (!el) {
          if (event.key === "o") move(1);
          return;
        }
        // Enter on a focused control does its own thing (a summary toggles natively).
        if (event.key === "Enter" && event.target !== document.body && event.target.tagName !== "DETAILS") return;
        el.open = !el.open;
        break;
      }
      case "g": {
        var first = items()[0];
        if (first) select(first);
        else return;
        break;
      }
      case "G": {
        var all = turns();
        var link = document.getElementById("last-turn-link");
        var more = document.querySelector(".segment.loaded .more-turns.later");
        if (more && link) {
          window.location.href = link.href;
        } else if (all.length) {
          select(all[all.length - 1]);
        } else return;
        break;
      }
      case "/": {
        var q = document.getElementById("q");
        if (!q) return;
        q.focus();
        q.select();
        break;
      }
      case "?":
        showKeys();
        break;
      case "b":
        // Build and export: open (or close) its card under the bar.
        if (!toggleBuild(true)) return;
        break;
      case "h": {
        // Handoff: the button's form asks first (a dialog; Enter confirms).
        // The button is on the bar's card: a closed bar opens first (its dialog would not show
        // inside a closed bar).
        var handoffButton = document.getElementById("handoff-button");
        if (!handoffButton) return;
        var bar = handoffButton.closest("details.overview");
        if (bar && !bar.open) bar.open = true;
        handoffButton.scrollIntoView({ block: "nearest" });
        handoffButton.click();
        break;
      }
      default:
        return;
    }
    event.preventDefault();
  });

  // A form that spends a provider call (data-confirm) asks first: its own dialog
  // (data-confirm-dialog) or a shared one saying data-confirm; only a yes submits it.
  function confirmDialogFor(form) {
    var own = form.dataset.confirmDialog && document.getElementById(form.dataset.confirmDialog);
    if (own) return own;
    var shared = document.getElementById("confirm-dialog");
    if (!shared) {
      shared = document.createElement("dialog");
      shared.id = "confirm-dialog";
      shared.className = "confirm-dialog";
      var text = document.createElement("p");
      text.className = "confirm-text";
      var buttons = document.createElement("form");
      buttons.method = "dialog";
      var yes = document.createElement("button");
      yes.type = "button";
      yes.className = "confirm-yes";
      yes.autofocus = true;
      var no = document.createElement("button");
      no.type = "submit";
      no.className = "ghost";
      no.textContent = "Cancel";
      buttons.append(yes, " ", no);
      shared.append(text, buttons);
      document.body.appendChild(shared);
    }
    shared.querySelector(".confirm-text").textContent = form.dataset.confirm;
    shared.querySelector(".confirm-yes").textContent = form.dataset.confirmYes || "Start";
    return shared;
  }

  var pendingConfirm = null;
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
    if (form.dataset.confirmed === "1") {
      delete form.dataset.confirmed;
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation(); // before htmx sees it
    var dialogEl = confirmDialogFor(form);
    if (!dialogEl.showModal) return;
    var provider = form.querySelector("select[name=provider]");
    var named = dialogEl.querySelector(".handoff-confirm-provider");
    if (named && provider) named.textContent = provider.value;
    pendingConfirm = form;
    dialogEl.showModal();
  }, true);

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) return;
    var yes = target.closest("#handoff-confirm-start, #confirm-dialog .confirm-yes");
    if (yes) {
      event.preventDefault();
      var dialogEl = yes.closest("dialog");
      if (dialogEl) dialogEl.close();
      var form = pendingConfirm || document.querySelector(".handoff-form");
      pendingConfirm = null;
      if (form) {
        form.dataset.confirmed = "1";
        form.requestSubmit();
      }
      return;
    }
    var keys = target.closest("[data-show-keys]");
    if (keys) {
      event.preventDefault();
      showKeys();
      return;
    }
    var turn = target.closest("details.turn");
    if (turn && target.closest("summary") && target.closest("summary").parentElement === turn) {
      var old = current();
      if (old && old !== turn) old.classList.remove("current");
      turn.classList.add("current");
    }
    var image = target.closest("a[data-image]");
    if (image) {
      // Click-to-load: only our own endpoint, only on request.
      event.preventDefault();
      var img = document.createElement("img");
      img.className = "loaded-image";
      img.alt = image.textContent;
      img.src = image.getAttribute("href");
      image.replaceWith(img);
    }
  });

  // The turn named in the address opens as the current one.
  function focusHash() {
    var m = /^#turn-(\d+)$/.exec(window.location.hash);
    if (!m) return;
    var el = document.getElementById("turn-" + m[1]);
    if (el) select(el);
  }
  document.addEventListener("DOMContentLoaded", focusHash);
  if (document.readyState !== "loading") focusHash();

  // A link to one message (a fact of a fold review: ?turn=N#m-ID): open turn N, which loads its
  // messages, then scroll to the message (a long turn loads its later messages until it is there).
  // Search links (?q=) are search.js's.
  function focusMessage() {
    var m = /^#m-(\d+)$/.exec(window.location.hash);
    var params = new URLSearchParams(window.location.search);
    if (!m || params.get("q") || !params.get("turn")) return;
    var tries = 0;
    (function reveal() {
      var message = document.getElementById("m-" + m[1]);
      if (message) {
        for (var d = message.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
        message.classList.add("linked");
        message.scrollIntoView({ block: "start" });
        return;
      }
      var turn = document.getElementById("turn-" + params.get("turn"));
      if (!turn || tries++ > 200) return;
      if (!turn.open) turn.open = true; // its toggle loads the turn (htmx, or loadOpened below)
      var more = turn.querySelector(".more-messages");
      if (more && window.htmx && !more.dataset.asked) {
        more.dataset.asked = "1";
        window.htmx.ajax("GET", more.getAttribute("hx-get"), { target: more, swap: "outerHTML" });
      }
      window.setTimeout(reveal, 60);
    })();
  }
  document.addEventListener("DOMContentLoaded", focusMessage);
  if (document.readyState !== "loading") focusMessage();

  // --- curve hover and click ---------------------------------------------------------------
  function setupCurve(svg) {
    if (svg.dataset.ready) return;
    svg.dataset.ready = "1";
    var points = (svg.getAttribute("data-points") || "").split(";").filter(Boolean).map(function (s) {
      var p = s.split(",");
      return { x: +p[0], position: +p[1], turn: p[2] === "" ? null : +p[2], measured: +p[3], estimated: +p[4], call: +p[5] };
    });
    if (!points.length) return;
    var line = svg.querySelector(".hover-line");
    var tip = svg.parentElement.querySelector(".curve-tip");
    var windowUrl = svg.getAttribute("data-window-url"); // .../calls/0/window/: the call's number goes in
    var nearest = null;

    function fmt(n) {
      return n.toLocaleString("en-US");
    }

    function locate(event) {
      var ctm = svg.getScreenCTM();
      if (!ctm) return null;
      var pt = svg.createSVGPoint();
      pt.x = event.clientX;
      pt.y = event.clientY;
      var x = pt.matrixTransform(ctm.inverse()).x;
      var lo = 0;
      var hi = points.length - 1;
      while (hi - lo > 1) {
        var mid = (lo + hi) >> 1;
        if (points[mid].x < x) lo = mid;
        else hi = mid;
      }
      return Math.abs(points[lo].x - x) <= Math.abs(points[hi].x - x) ? points[lo] : points[hi];
    }

    svg.addEventListener("mousemove", function (event) {
      nearest = locate(event);
      if (!nearest) return;
      line.setAttribute("x1", nearest.x);
      line.setAttribute("x2", nearest.x);
      line.classList.add("shown");
      tip.textContent =
        "call " + nearest.call + " · " + (nearest.turn === null ? "" : "turn " + nearest.turn + " · ") +
        "measured " + fmt(nearest.measured) + " · estimated " + fmt(nearest.estimated) + " tokens";
      tip.classList.add("shown");
      // Kept inside the chart: right of the pointer, or left of it near the right edge.
      var box = svg.getBoundingClientRect();
      var at = event.clientX - box.left;
      var width = tip.offsetWidth;
      var left = at + 12 + width <= box.width ? at + 12 : at - 12 - width;
      tip.style.left = Math.max(0, Math.min(left, box.width - width)) + "px";
    });
    svg.addEventListener("mouseleave", function () {
      line.classList.remove("shown");
      tip.classList.remove("shown");
    });
    // A click opens the window that call carried (it links to the call's turn).
    svg.addEventListener("click", function () {
      if (nearest && nearest.call && windowUrl) {
        window.location.href = windowUrl.replace("/calls/0/", "/calls/" + nearest.call + "/");
      }
    });
  }

  // The conversation's cards stay folded into their bar unless the reader opened them last time.
  var OVERVIEW_KEY = "contextviewer.overview-open";
  function setupOverview() {
    var overview = document.getElementById("overview");
    if (!overview || overview.dataset.ready) return;
    overview.dataset.ready = "1";
    try {
      if (window.localStorage.getItem(OVERVIEW_KEY) === "1") overview.open = true;
    } catch (e) { /* storage off: folded */ }
    overview.addEventListener("toggle", function () {
      try {
        window.localStorage.setItem(OVERVIEW_KEY, overview.open ? "1" : "0");
      } catch (e) { /* storage off */ }
    });
  }

  // Build and export: the control at the bar's right end opens its card under the bar; the page
  // remembers it for the next conversation, like the bar. A link to #build (or #exports) opens it.
  // Without this script the control is a link to the build page.
  var BUILD_KEY = "contextviewer.build-open";
  function setBuildOpen(open, remember) {
    var card = document.getElementById("build");
    var toggle = document.getElementById("build-toggle");
    if (!card || !toggle) return false;
    card.hidden = !open;
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (remember) {
      try {
        window.localStorage.setItem(BUILD_KEY, open ? "1" : "0");
      } catch (e) { /* storage off */ }
    }
    return true;
  }
  function buildOpen() {
    var card = document.getElementById("build");
    return !!card && !card.hidden;
  }
  function toggleBuild(fromKey) {
    var open = !buildOpen();
    if (!setBuildOpen(open, true)) return false;
    var card = document.getElementById("build");
    if (open && fromKey && card.scrollIntoView) card.scrollIntoView({ block: "nearest" });
    return true;
  }
  function setupBuildToggle() {
    var toggle = document.getElementById("build-toggle");
    if (!toggle || toggle.dataset.ready) return;
    toggle.dataset.ready = "1";
    var open = false;
    try {
      open = window.localStorage.getItem(BUILD_KEY) === "1";
    } catch (e) { /* storage off: closed */ }
    if (window.location.hash === "#build" || window.location.hash === "#exports") open = true;
    setBuildOpen(open, false);
    // The bar's figures keep clear of the control, however long its count of the selection grows.
    var bar = document.querySelector("#overview > summary");
    var fit = function () {
      if (!bar) return;
      var beside = window.getComputedStyle(toggle).position === "absolute"; // (a narrow window puts it under the bar)
      bar.style.paddingRight = beside ? toggle.offsetWidth + 20 + "px" : "";
    };
    if (window.ResizeObserver) new ResizeObserver(fit).observe(toggle);
    window.addEventListener("resize", fit);
    fit();
    window.addEventListener("hashchange", function () {
      if (window.location.hash === "#build" || window.location.hash === "#exports") setBuildOpen(true, false);
    });
    toggle.addEventListener("click", function (event) {
      event.preventDefault();
      toggleBuild(false);
    });
    toggle.addEventListener("keydown", function (event) {
      if (event.key !== " ") return; // a button opens on space too (Enter follows the link's click)
      event.preventDefault();
      toggleBuild(false);
    });
    document.querySelectorAll("[data-build-close]").forEach(function (button) {
      button.addEventListener("click", function () {
        setBuildOpen(false, true);
        toggle.focus();
      });
    });
  }

  // --- parts that load when opened or reached -----------------------------------------------
  // A turn, an archived segment, a sub-agent's turns load when their disclosure opens (htmx,
  // hx-trigger="toggle once"). htmx listens on an element only once it has processed it, 20 ms
  // after the swap that brought it in: one opened sooner (a quick key, a script) would never load.
  // So an open disclosure whose body still shows its "load" link, and for which htmx sent no
  // request, is loaded here. A part that fails to load says so in place, with a button to try again.
  var LOADS = "details[hx-get], .more-turns, .more-messages, a[hx-get]";

  function loadOpened(d) {
    var where = d.getAttribute("hx-target") || "";
    if (!window.htmx || !d.open || d.classList.contains("htmx-request") || where.indexOf("find ") !== 0) return;
    var target = d.querySelector(where.slice(5));
    if (!target || target.dataset.asked || !target.querySelector(":scope > a.load-link")) return;
    window.htmx.ajax("GET", d.getAttribute("hx-get"), { source: d, target: target, swap: d.getAttribute("hx-swap") || "innerHTML" });
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.target) event.detail.target.dataset.asked = "1"; // htmx asked: not again here
  });
  document.addEventListener("toggle", function (event) {
    var d = event.target;
    if (d instanceof HTMLDetailsElement && d.open && d.hasAttribute("hx-get")) {
      window.setTimeout(function () { loadOpened(d); }, 150);
    }
  }, true); // toggle does not bubble

  function showLoadError(event) {
    var source = event.detail.elt;
    var target = event.detail.target;
    var config = event.detail.requestConfig;
    if (!source || !target || !config || config.verb !== "get" || !source.matches(LOADS)) return;
    var xhr = event.detail.xhr;
    var why = event.type === "htmx:responseError" && xhr && xhr.status
      ? "the server answered " + xhr.status + (xhr.statusText ? " " + xhr.statusText : "")
      : "no answer from the server";
    var link = target.tagName === "A"; // a link that loads in its own place: the box goes after it
    var earlier = link ? target.nextElementSibling : target.querySelector(":scope > .load-error");
    if (earlier && earlier.classList.contains("load-error")) earlier.remove(); // its own box only
    var box = document.createElement("p");
    box.className = "load-error";
    box.setAttribute("role", "alert");
    box.textContent = "This part did not load (" + why + "). ";
    var again = document.createElement("button");
    again.type = "button";
    again.textContent = "Try again";
    again.addEventListener("click", function () {
      box.remove();
      window.htmx.ajax("GET", config.path, { source: source, target: target, swap: source.getAttribute("hx-swap") || "innerHTML" });
    });
    box.appendChild(again);
    if (link) target.after(box);
    else target.appendChild(box);
  }
  document.addEventListener("htmx:responseError", showLoadError);
  document.addEventListener("htmx:sendError", showLoadError);

  function setupAll() {
    setupOverview();
    setupBuildToggle();
    document.querySelectorAll("svg.curve[data-points]").forEach(setupCurve);
  }
  document.addEventListener("DOMContentLoaded", setupAll);
  document.addEventListener("htmx:load", setupAll); // a curve swapped in (a live page's update)
  if (document.readyState !== "loading") setupAll();
})();
