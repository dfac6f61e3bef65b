/* Search inside a conversation (the conversation page with ?q=): the matching messages are listed
 * in #conv-hits (data-hits: "message_id:turn;..." in the conversation's order, data-terms: the
 * words). n / N go to the next / previous match: its turn opens (htmx loads it, and the turn's
 * later messages when the match is among them), the words are marked, the blocks holding them are
 * unfolded (the rest of a long block is loaded first) and the match is scrolled to.
 * Text is only ever split and wrapped with <mark> built from textContent: never written as HTML. */
(function () {
  "use strict";

  var panel = null;
  var hits = [];
  var pattern = null;
  var index = -1;
  var pending = 0; // a go() in progress (its number): a later one supersedes it

  function escapeRegExp(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function setup() {
    panel = document.getElementById("conv-hits");
    if (!panel || panel.dataset.ready) return;
    panel.dataset.ready = "1";
    hits = (panel.getAttribute("data-hits") || "").split(";").filter(Boolean).map(function (s) {
      var p = s.split(":");
      return { id: p[0], turn: p[1] };
    });
    var words = (panel.getAttribute("data-terms") || "").split(/\s+/).filter(Boolean);
    if (words.length) {
      words.sort(function (a, b) { return b.length - a.length; });
      pattern = new RegExp("(" + words.map(escapeRegExp).join("|") + ")", "gi");
    }
    if (!hits.length) return;
    var m = /^#m-(\d+)$/.exec(window.location.hash);
    var at = 0;
    if (m) {
      for (var i = 0; i < hits.length; i++) if (hits[i].id === m[1]) at = i;
    }
    go(at);
  }

  function query() {
    var input = document.getElementById("q");
    return input ? input.value : "";
  }

  function status(text) {
    var el = panel && panel.querySelector(".hit-position");
    if (el) el.textContent = text;
  }

  function markIn(root) {
    if (!pattern || !root) return 0;
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var parent = node.parentElement;
        if (!parent || parent.closest("mark.search-hit, .msg-head, summary.turn-head")) return NodeFilter.FILTER_REJECT;
        pattern.lastIndex = 0;
        return pattern.test(node.nodeValue) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
      },
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    var count = 0;
    nodes.forEach(function (node) {
      var text = node.nodeValue;
      var frag = document.createDocumentFragment();
      var last = 0;
      pattern.lastIndex = 0;
      var found;
      while ((found = pattern.exec(text)) !== null && count < 500) {
        if (found.index > last) frag.appendChild(document.createTextNode(text.slice(last, found.index)));
        var mark = document.createElement("mark");
        mark.className = "search-hit";
        mark.textContent = found[0];
        frag.appendChild(mark);
        last = found.index + found[0].length;
        count++;
      }
      if (last < text.length) frag.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(frag, node);
    });
    return root.querySelectorAll("mark.search-hit").length;
  }

  // A message's element, or, for a tool result shown under its call, that result's blocks.
  function partsOf(id) {
    var message = document.getElementById("m-" + id);
    if (message) return [message];
    return Array.prototype.slice.call(document.querySelectorAll('[id^="b-' + id + '-"]'));
  }

  function openAround(el) {
    for (var d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
      if (!d.open) d.open = true;
    }
  }

  function later(fn) {
    window.setTimeout(fn, 60);
  }

  // Wait (bounded) for the hit's message: open its turn, load the turn's later messages if needed.
  function reveal(hit, ticket, tries) {
    if (ticket !== pending) return;
    var parts = partsOf(hit.id);
    var turn = document.getElementById("turn-" + hit.turn);
    if (!parts.length) {
      if (!turn || tries > 200) {
        status("match " + (index + 1) + " of " + hits.length + ": not found on this page");
        return;
      }
      if (!turn.open) turn.open = true; // its toggle makes htmx load the turn
      var more = turn.querySelector(".more-messages");
      if (more && window.htmx && !more.dataset.asked) {
        more.dataset.asked = "1";
        window.htmx.ajax("GET", more.getAttribute("hx-get"), { target: more, swap: "outerHTML" });
      }
      later(function () { reveal(hit, ticket, tries + 1); });
      return;
    }
    var marks = 0;
    parts.forEach(function (part) { marks += markIn(part); });
    if (!marks) {
      // The words may be in the hidden middle of a long block: load the rest, then mark again.
      var rest = null;
      parts.forEach(function (part) { rest = rest || part.querySelector("a.load-rest:not([data-asked])"); });
      if (rest && tries < 200 && window.htmx) {
        rest.dataset.asked = "1";
        window.htmx.ajax("GET", rest.getAttribute("hx-get") || rest.getAttribute("href"), {
          target: rest.getAttribute("hx-target") || rest.parentElement,
          swap: rest.getAttribute("hx-swap") || "outerHTML",
        });
        later(function () { reveal(hit, ticket, tries + 1); });
        return;
      }
    }
    document.querySelectorAll(".hit-current").forEach(function (el) { el.classList.remove("hit-current"); });
    parts.forEach(function (part) {
      part.classList.add("hit-current");
      openAround(part);
    });
    var first = null;
    parts.forEach(function (part) { first = first || part.querySelector("mark.search-hit"); });
    if (first) openAround(first);
    (first || parts[0]).scrollIntoView({ block: "center" });
    if (turn) {
      document.querySelectorAll("details.turn.current").forEach(function (el) { el.classList.remove("current"); });
      turn.classList.add("current");
    }
    if (window.history && window.history.replaceState) window.history.replaceState(null, "", "#m-" + hit.id);
    status("match " + (index + 1) + " of " + hits.length);
  }

  function go(i) {
    if (!hits.length) return;
    index = (i + hits.length) % hits.length;
    var hit = hits[index];
    if (!document.getElementById("turn-" + hit.turn)) {
      // Not on this page (another window of turns or segment): the page that opens it.
      var url = window.location.pathname + "?q=" + encodeURIComponent(query()) + "&turn=" + hit.turn + "#m-" + hit.id;
      window.location.assign(url);
      return;
    }
    pending += 1;
    status("match " + (index + 1) + " of " + hits.length + ": opening turn " + hit.turn + "…");
    reveal(hit, pending, 0);
  }

  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (!hits.length || (event.key !== "n" && event.key !== "N")) return;
    var dialog = document.querySelector("dialog[open]");
    if (dialog) return;
    event.preventDefault();
    go(index + (event.key === "n" ? 1 : -1));
  });

  document.addEventListener("click", function (event) {
    var link = event.target instanceof Element && event.target.closest("#conv-hits a[data-hit]");
    if (!link) return;
    for (var i = 0; i < hits.length; i++) {
      if (hits[i].id === link.getAttribute("data-hit") && document.getElementById("turn-" + hits[i].turn)) {
        event.preventDefault();
        go(i);
        return;
      }
    }
  });

  // A turn or the rest of a block loaded later: mark the matching messages in it too.
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!pattern || !hits.length) return;
    var root = event.target;
    if (!(root instanceof Element)) return;
    hits.forEach(function (hit) {
      partsOf(hit.id).forEach(function (part) {
        if (root.contains(part) || part.contains(root)) markIn(part);
      });
    });
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
