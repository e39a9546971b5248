/* Evidentia UI: keyboard triage, validator-input search, copy buttons.
   Everything is delegated on document so it keeps working after htmx swaps.
   Untrusted text is only ever handled through textContent, never innerHTML. */
(function () {
  "use strict";

  var selectedTaskId = null;

  function csrfHeaders() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}"); } catch (e) { return {}; }
  }

  function typingInField(event) {
    var el = event.target;
    if (!el || !el.tagName) return false;
    var tag = el.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || el.isContentEditable;
  }

  /* ---- Queue selection ------------------------------------------------------------ */
  function queueRows() {
    return Array.prototype.slice.call(document.querySelectorAll("#queue-list tr[data-task-id]"));
  }

  function selectRow(row) {
    queueRows().forEach(function (r) { r.classList.remove("selected"); r.removeAttribute("aria-selected"); });
    if (!row) { selectedTaskId = null; return; }
    row.classList.add("selected");
    row.setAttribute("aria-selected", "true");
    selectedTaskId = row.getAttribute("data-task-id");
    row.scrollIntoView({ block: "nearest" });
  }

  function selectedRow() {
    var rows = queueRows();
    for (var i = 0; i < rows.length; i++) { if (rows[i].getAttribute("data-task-id") === selectedTaskId) return rows[i]; }
    return null;
  }

  function moveSelection(delta) {
    var rows = queueRows();
    if (!rows.length) return;
    var current = selectedRow();
    var index = current ? rows.indexOf(current) + delta : (delta > 0 ? 0 : rows.length - 1);
    index = Math.max(0, Math.min(rows.length - 1, index));
    selectRow(rows[index]);
  }

  var ACTIONS = { s: "satisfied", r: "revise", a: "abandon" };
  var LABELS = { satisfied: "Mark as satisfied (close the task)", revise: "Request a revision", abandon: "Abandon the task" };

  function actOnQueueRow(row, action) {
    var title = row.getAttribute("data-title") || ("task " + row.getAttribute("data-task-id"));
    var comment = "";
    if (action === "revise") {
      comment = window.prompt("Revision for #" + row.getAttribute("data-task-id") + " " + title + "\nWhat should change?");
      if (comment === null || !comment.trim()) return;
    } else if (!window.confirm(LABELS[action] + "?\n#" + row.getAttribute("data-task-id") + " " + title)) {
      return;
    }
    var next = row.nextElementSibling || row.previousElementSibling;
    if (next && next.getAttribute("data-task-id")) selectedTaskId = next.getAttribute("data-task-id");
    htmx.ajax("POST", row.getAttribute("data-action-url"), {
      source: row,
      target: "#queue-list",
      swap: "outerHTML",
      headers: csrfHeaders(),
      values: {
        action: action, comment: comment, version: row.getAttribute("data-version"),
        return_to: "queue", filters: window.location.search.replace(/^\?/, "")
      }
    });
  }

  /* ---- Detail page actions ---------------------------------------------------------- */
  function actOnDetail(action) {
    var panel = document.getElementById("task-actions");
    if (!panel) return false;
    if (action === "revise") {
      var box = panel.querySelector("textarea[name=comment]");
      if (box) { box.focus(); return true; }
      return false;
    }
    var button = panel.querySelector("button[value=" + action + "]");
    if (button) { button.click(); return true; }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typingInField(event)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var key = event.key;
    var inQueue = !!document.getElementById("queue-list");
    if (key === "?") {
      var help = document.getElementById("kbd-help");
      if (help) help.hidden = !help.hidden;
      event.preventDefault();
      return;
    }
    if (key === "/") {
      var search = document.getElementById("validator-input-search") || document.querySelector("#queue-filters input[type=search]");
      if (search) { search.focus(); search.select(); event.preventDefault(); }
      return;
    }
    if (inQueue) {
      if (key === "j" || key === "ArrowDown") { moveSelection(1); event.preventDefault(); return; }
      if (key === "k" || key === "ArrowUp") { moveSelection(-1); event.preventDefault(); return; }
      var row = selectedRow();
      if (key === "Enter" && row) {
        var link = row.querySelector("a.open");
        if (link) link.click();
        event.preventDefault();
        return;
      }
      if (ACTIONS[key] && row) { event.preventDefault(); actOnQueueRow(row, ACTIONS[key]); }
      return;
    }
    if (ACTIONS[key] && actOnDetail(ACTIONS[key])) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var row = event.target.closest && event.target.closest("#queue-list tr[data-task-id]");
    if (row) selectRow(row);
  });

  document.addEventListener("htmx:afterSettle", function () {
    if (!document.getElementById("queue-list")) return;
    var row = selectedRow();
    if (row) { row.classList.add("selected"); }
  });

  /* ---- Viewer search -------------------------------------------------------------- */
  var searchState = new WeakMap();

  function viewerFor(input) {
    var id = input.getAttribute("data-viewer-search");
    return document.getElementById(id);
  }

  function clearMarks(viewer) {
    viewer.querySelectorAll(".l.hit, .l.current").forEach(function (line) {
      line.classList.remove("hit", "current");
      if (line.querySelector("mark")) line.textContent = line.textContent;
    });
  }

  function markLine(line, needle) {
    var text = line.textContent;
    var lower = text.toLowerCase();
    var at = 0, pos, frag = document.createDocumentFragment();
    while ((pos = lower.indexOf(needle, at)) !== -1) {
      frag.appendChild(document.createTextNode(text.slice(at, pos)));
      var mark = document.createElement("mark");
      mark.textContent = text.slice(pos, pos + needle.length);
      frag.appendChild(mark);
      at = pos + needle.length;
    }
    frag.appendChild(document.createTextNode(text.slice(at)));
    line.textContent = "";
    line.appendChild(frag);
  }

  function runSearch(input, step) {
    var viewer = viewerFor(input);
    if (!viewer) return;
    var countEl = document.getElementById(input.getAttribute("data-count"));
    var needle = input.value.trim().toLowerCase();
    var state = searchState.get(input);
    if (!state || state.needle !== needle) {
      clearMarks(viewer);
      var hits = [];
      if (needle) {
        viewer.querySelectorAll(".l").forEach(function (line) {
          if (line.textContent.toLowerCase().indexOf(needle) !== -1) hits.push(line);
        });
        hits.slice(0, 5000).forEach(function (line) { line.classList.add("hit"); markLine(line, needle); });
      }
      state = { needle: needle, hits: hits, index: -1 };
      searchState.set(input, state);
      step = step || 1;
    }
    if (!state.hits.length) {
      if (countEl) countEl.textContent = needle ? "no matches" : "";
      return;
    }
    var prev = state.hits[state.index];
    if (prev) prev.classList.remove("current");
    state.index = (state.index + (step || 1) + state.hits.length) % state.hits.length;
    var current = state.hits[state.index];
    current.classList.add("current");
    current.scrollIntoView({ block: "center" });
    if (countEl) {
      var lineNo = Array.prototype.indexOf.call(viewer.querySelectorAll(".l"), current) + 1;
      countEl.textContent = (state.index + 1) + " / " + state.hits.length + " (line " + lineNo + ")";
    }
  }

  var searchTimer = null;
  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!input.hasAttribute || !input.hasAttribute("data-viewer-search")) return;
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { runSearch(input, 0); }, 200);
  });
  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!input.hasAttribute || !input.hasAttribute("data-viewer-search") || event.key !== "Enter") return;
    event.preventDefault();
    clearTimeout(searchTimer);
    runSearch(input, event.shiftKey ? -1 : 1);
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-search-step]");
    if (!button) return;
    var input = document.getElementById(button.getAttribute("data-search-input"));
    if (input) runSearch(input, parseInt(button.getAttribute("data-search-step"), 10));
  });

  /* ---- Copy ------------------------------------------------------------------------ */
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent;
    function done(ok) {
      var label = button.getAttribute("data-label") || button.textContent;
      button.setAttribute("data-label", label);
      button.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(function () { button.textContent = label; }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallbackCopy(text)); });
    } else {
      done(fallbackCopy(text));
    }
  });

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }
})();
