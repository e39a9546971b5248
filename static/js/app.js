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

  /* ---- No decision by accident ----------------------------------------------
     A key typed into a field, into a form that has just reported an error, or inside a
     dialog is text, never a shortcut; and while a decision form is open (revise, abandon,
     the queue's inline form) no other shortcut acts: Esc closes it first. */
  function shortcutsOff(event) {
    if (typingInField(event)) return true;
    var el = event.target;
    if (!el || !el.closest) return false;
    if (el.closest("dialog, [role=dialog], [role=alertdialog], [aria-modal=true]")) return true;
    var form = el.closest("form");
    return !!(form && form.querySelector('[aria-invalid="true"]'));
  }

  function decisionFormOpen() {
    return !!document.querySelector("#task-actions .inline-form:not([hidden]), #queue-inline:not([hidden])");
  }

  /* A refused field keeps its text and the focus; its error is shown beside it. */
  function showFieldError(field) {
    var id = field.getAttribute("data-error");
    var box = id && document.getElementById(id);
    field.setAttribute("aria-invalid", "true");
    if (box) {
      box.hidden = false;
      var described = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
      if (described.indexOf(id) === -1) field.setAttribute("aria-describedby", [id].concat(described).join(" "));
      announce(box.textContent.trim());
    }
    field.focus();
  }

  function clearFieldError(field) {
    if (!field) return;
    var id = field.getAttribute("data-error");
    var box = id && document.getElementById(id);
    field.removeAttribute("aria-invalid");
    if (box) box.hidden = true;
    var described = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(function (d) { return d && d !== id; });
    field.setAttribute("aria-describedby", described.join(" "));
  }

  // The browser checks `required` before submitting: its bubble is replaced by the
  // message beside the field, and the focus stays in the field.
  document.addEventListener("invalid", function (event) {
    var field = event.target;
    if (!field.hasAttribute || !field.hasAttribute("data-error")) return;
    event.preventDefault();
    showFieldError(field);
  }, true);

  // A comment of spaces is as empty as no comment: the browser refuses it too.
  document.addEventListener("input", function (event) {
    var field = event.target;
    if (!field.hasAttribute || !field.hasAttribute("data-error") || !field.required) return;
    field.setCustomValidity(field.value.trim() || !field.value ? "" : "empty");
  });

  function focusRefusedField(root) {
    var field = root && root.querySelector('[aria-invalid="true"][data-error]');
    if (!field) return false;
    field.focus();
    var end = field.value ? field.value.length : 0;
    if (field.setSelectionRange) field.setSelectionRange(end, end);
    var box = document.getElementById(field.getAttribute("data-error"));
    if (box) announce(box.textContent.trim());
    return true;
  }

  /* ---- Live region and focus ------------------------------------------------------ */
  function announce(text) {
    var live = document.getElementById("live");
    if (!live) return;
    live.textContent = "";
    setTimeout(function () { live.textContent = text; }, 50);
  }

  /* ---- Queue selection (a grid with one focusable row: roving tabindex) ------------ */
  function queueRows() {
    return Array.prototype.slice.call(document.querySelectorAll("#queue-list tr[data-task-id]"));
  }

  function selectRow(row, focus, byPointer) {
    queueRows().forEach(function (r) {
      r.classList.remove("selected");
      r.setAttribute("aria-selected", "false");
      r.setAttribute("tabindex", "-1");
    });
    if (!row) { selectedTaskId = null; return; }
    row.classList.add("selected");
    row.setAttribute("aria-selected", "true");
    row.setAttribute("tabindex", "0");
    selectedTaskId = row.getAttribute("data-task-id");
    if (focus) row.focus();
    // Not for a click (issue 47): scrolling on the mousedown's focus moved a row that was
    // partly below the fold from under the pointer, and the click landed elsewhere.
    if (!byPointer) row.scrollIntoView({ block: "nearest" });
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
    selectRow(rows[index], true);
  }

  /* Make the queue reachable with Tab even before anything is selected, and keep the
     selection (and focus, when it was in the list) across refreshes. */
  function restoreQueue(focusIt) {
    var rows = queueRows();
    if (!rows.length) { selectedTaskId = null; return; }
    var row = selectedRow();
    if (row) { selectRow(row, focusIt); return; }
    rows[0].setAttribute("tabindex", "0");
    if (focusIt) selectRow(rows[0], true);
  }

  var ACTIONS = { s: "satisfied", r: "revise", a: "abandon" };
  var pending = null;

  function postQueueAction(row, action, comment) {
    var rows = queueRows();
    var i = rows.indexOf(row);
    var next = rows[i + 1] || rows[i - 1];
    selectedTaskId = next ? next.getAttribute("data-task-id") : null;
    focusQueueAfterSwap = true;
    htmx.ajax("POST", row.getAttribute("data-action-url"), {
      source: row,
      target: "#queue-list",
      swap: "outerHTML",
      headers: csrfHeaders(),
      values: {
        action: action, comment: comment || "", version: row.getAttribute("data-version"),
        return_to: "queue", filters: window.location.search.replace(/^\?/, "")
      }
    });
  }

  function openQueueInline(row, action) {
    var panel = document.getElementById("queue-inline");
    if (!panel) return;
    var title = row.getAttribute("data-title") || "";
    var id = row.getAttribute("data-task-id");
    pending = { row: row, action: action };
    document.getElementById("queue-inline-title").textContent =
      (action === "revise" ? "Ask for a revision of #" : "Abandon #") + id + " " + title;
    var fields = document.getElementById("queue-revise-fields");
    fields.hidden = action !== "revise";
    var confirmButton = document.getElementById("queue-inline-confirm");
    confirmButton.textContent = action === "revise" ? "Send for revision" : "Yes, abandon";
    confirmButton.className = action === "revise" ? "btn btn-warn" : "btn btn-bad-solid";
    panel.hidden = false;
    if (action === "revise") {
      var box = document.getElementById("queue-comment");
      clearFieldError(box);
      box.value = "";
      box.focus();
    } else {
      confirmButton.focus();
    }
  }

  function closeQueueInline(refocus) {
    var panel = document.getElementById("queue-inline");
    if (panel) panel.hidden = true;
    clearFieldError(document.getElementById("queue-comment"));
    var row = pending && pending.row;
    pending = null;
    if (refocus && row && document.body.contains(row)) row.focus();
  }

  function confirmQueueInline() {
    if (!pending) return;
    var comment = "";
    if (pending.action === "revise") {
      var box = document.getElementById("queue-comment");
      comment = box.value.trim();
      if (!comment) { showFieldError(box); return; }
      clearFieldError(box);
    }
    var row = pending.row;
    var action = pending.action;
    closeQueueInline(false);
    postQueueAction(row, action, comment);
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    if (event.target.closest("#queue-inline-confirm")) confirmQueueInline();
    else if (event.target.closest("#queue-inline-cancel")) closeQueueInline(true);
  });

  /* ---- Detail page: inline decision forms ------------------------------------------- */
  function reveal(id, trigger) {
    var panel = document.getElementById(id);
    if (!panel) return false;
    document.querySelectorAll("#task-actions .inline-form").forEach(function (other) {
      if (other !== panel) other.hidden = true;
    });
    document.querySelectorAll("#task-actions [data-reveal]").forEach(function (b) {
      b.setAttribute("aria-expanded", b.getAttribute("data-reveal") === id ? "true" : "false");
    });
    panel.hidden = false;
    var first = panel.querySelector("[data-autofocus]") || panel.querySelector("textarea, button[type=submit]");
    if (first) first.focus();
    return true;
  }

  function conceal(id) {
    var panel = document.getElementById(id);
    if (!panel) return;
    panel.hidden = true;
    panel.querySelectorAll("[data-error]").forEach(clearFieldError);
    var trigger = document.querySelector('[data-reveal="' + id + '"]');
    if (trigger) { trigger.setAttribute("aria-expanded", "false"); trigger.focus(); }
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var opener = event.target.closest("[data-reveal]");
    if (opener) { reveal(opener.getAttribute("data-reveal"), opener); return; }
    var closer = event.target.closest("[data-conceal]");
    if (closer) conceal(closer.getAttribute("data-conceal"));
  });

  // htmx binds swapped-in content a settle delay (20 ms) after the swap. A shortcut
  // pressed inside that window would click a form or link htmx has not bound yet, and the
  // browser would submit or navigate natively (a full reload). Binding is idempotent.
  function clickBound(el) {
    if (window.htmx) window.htmx.process(el.form || el);
    el.click();
  }

  function actOnDetail(action) {
    if (action === "satisfied") {
      var ok = document.getElementById("act-satisfied");
      if (ok) { clickBound(ok); return true; }
      return false;
    }
    return reveal(action === "revise" ? "revise-panel" : "abandon-panel");
  }

  function clickIf(id) {
    var el = document.getElementById(id);
    if (el) { clickBound(el); return true; }
    return false;
  }

  var focusQueueAfterSwap = false;

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey) {
      // Ctrl+Enter submits an inline decision form.
      if (event.key === "Enter" && event.target && event.target.closest) {
        if (event.target.closest("#queue-inline")) { event.preventDefault(); confirmQueueInline(); return; }
        var submitId = event.target.getAttribute && event.target.getAttribute("data-submit-with");
        if (submitId && clickIf(submitId)) { event.preventDefault(); }
      }
      return;
    }
    if (event.altKey) return;
    if (event.key === "Escape") {
      if (event.target.closest && event.target.closest("#queue-inline")) { closeQueueInline(true); event.preventDefault(); return; }
      var inline = event.target.closest && event.target.closest("#task-actions .inline-form");
      if (inline) { conceal(inline.id); event.preventDefault(); return; }
    }
    if (shortcutsOff(event)) {
      if (event.key === "Escape" && typingInField(event)) event.target.blur();
      return;
    }
    var key = event.key;
    if (key !== "?" && decisionFormOpen()) return;
    if (key === "u" && (clickIf("undo-button") || clickIf("undo-decision"))) { event.preventDefault(); return; }
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
      if (event.target.closest && event.target.closest("#queue-inline, #queue-filters")) return;
      if (key === "j" || key === "ArrowDown") { moveSelection(1); event.preventDefault(); return; }
      if (key === "k" || key === "ArrowUp") { moveSelection(-1); event.preventDefault(); return; }
      var row = selectedRow();
      if (key === "Enter" && row) {
        var link = row.querySelector("a.open");
        if (link) link.click();
        event.preventDefault();
        return;
      }
      if (ACTIONS[key] && row) {
        event.preventDefault();
        if (ACTIONS[key] === "satisfied") postQueueAction(row, "satisfied", "");
        else openQueueInline(row, ACTIONS[key]);
      }
      return;
    }
    if (event.target.closest && event.target.closest("a, button, summary, select")) {
      if (key === "Enter" || key === " ") return;
    }
    if ((key === "j" || key === "n") && clickIf("queue-next")) { event.preventDefault(); return; }
    if ((key === "k" || key === "p") && clickIf("queue-prev")) { event.preventDefault(); return; }
    if (ACTIONS[key] && actOnDetail(ACTIONS[key])) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var row = event.target.closest && event.target.closest("#queue-list tr[data-task-id]");
    if (row) selectRow(row, false, true);
  });

  // The focus a click gives (mousedown) selects the row without scrolling it; a focus
  // moved by Tab is scrolled into view by the browser itself.
  document.addEventListener("focusin", function (event) {
    var row = event.target.closest && event.target.closest("#queue-list tr[data-task-id]");
    if (row && row.getAttribute("data-task-id") !== selectedTaskId) selectRow(row, false, true);
  });

  /* The 10-second refresh replaces the list: the element that had the focus in it (a row,
     a link in a row, a pager link) gets it back in the new list. */
  var queueFocus = null;

  function focusables(root) {
    return Array.prototype.slice.call(root.querySelectorAll("a[href], button, input, select, textarea, [tabindex]"));
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    var active = document.activeElement;
    if (!target || target.id !== "queue-list" || !active || !target.contains(active)) { queueFocus = null; return; }
    var row = active.closest("tr[data-task-id]");
    queueFocus = {
      taskId: row ? row.getAttribute("data-task-id") : null,
      onRow: active === row,
      index: focusables(row || target).indexOf(active),
      id: active.id || null
    };
  });

  function restoreQueueFocus(list) {
    var memo = queueFocus;
    queueFocus = null;
    if (!memo) return;
    if (memo.id && document.getElementById(memo.id)) { document.getElementById(memo.id).focus(); return; }
    var row = memo.taskId && list.querySelector('tr[data-task-id="' + memo.taskId + '"]');
    if (!row) { var sel = selectedRow() || queueRows()[0]; if (sel) selectRow(sel, true); return; }
    if (memo.onRow) { selectRow(row, true); return; }
    var el = focusables(row)[memo.index];
    (el || row).focus();
  }

  /* Undo from the review queue (issue 39): the undo goes back to the queue with the
     filters and page in the address bar, and the undone task's row is selected again
     (its place in the queue), instead of swapping the task's page in. */
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    var toast = elt && elt.closest && elt.closest("#undo-toast");
    if (!toast) return;
    if (!document.getElementById("queue-list")) {
      // Undone from a task page, maybe the next task's (issue 47): the undone task's page
      // comes back, and the address bar must say so too.
      undoPage = { path: event.detail.path, url: toast.getAttribute("data-undo-url") };
      return;
    }
    event.detail.parameters["return_to"] = "queue";
    event.detail.parameters["filters"] = window.location.search.replace(/^\?/, "");
    // Selected when this request's answer settles: the decision's own settle may come
    // after the key press that undoes it, and would move the selection on.
    undoSelect = { path: event.detail.path, taskId: toast.getAttribute("data-undo-task") };
  });
  var undoSelect = null;
  var undoPage = null;
  document.addEventListener("htmx:afterSwap", function (event) {
    var config = event.detail && event.detail.requestConfig;
    if (!undoPage || !config || config.path !== undoPage.path) return;
    var url = undoPage.url;
    undoPage = null;
    // Replaced, not pushed: Back still leads to the page before the decision.
    if (url && event.detail.successful !== false && window.location.pathname !== url) {
      history.replaceState(history.state, "", url);
    }
  });

  var lastQueueCount = null;
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    var list = document.getElementById("queue-list");
    if (list) {
      var config = event.detail.requestConfig;
      if (undoSelect && config && config.path === undoSelect.path) {
        selectedTaskId = undoSelect.taskId;
        undoSelect = null;
        focusQueueAfterSwap = true;
      }
      var focusIt = focusQueueAfterSwap || (target && target.id === "main");
      focusQueueAfterSwap = false;
      restoreQueue(focusIt);
      if (!focusIt && target && target.id === "queue-list") restoreQueueFocus(list);
      else queueFocus = null;
      var count = list.getAttribute("data-count");
      if (lastQueueCount !== null && count !== lastQueueCount) {
        announce(count + (count === "1" ? " task" : " tasks") + " waiting for review.");
      }
      lastQueueCount = count;
      if (!queueRows().length && focusIt) {
        var empty = document.getElementById("queue-empty");
        if (empty) { empty.setAttribute("tabindex", "-1"); empty.focus(); }
      }
      return;
    }
    lastQueueCount = null;
    if (target && target.id === "main") {
      if (focusRefusedField(target)) return;
      var title = document.getElementById("task-title") || document.querySelector("#main h1");
      if (title) {
        if (!title.hasAttribute("tabindex")) title.setAttribute("tabindex", "-1");
        title.focus();
        announce(title.textContent.trim());
      }
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var list = document.getElementById("queue-list");
    if (list) { lastQueueCount = list.getAttribute("data-count"); restoreQueue(false); }
    // A task page loaded in full (not swapped in by htmx) starts keyboard users at its
    // title too, so j/k/s/Enter work at once, whichever way the page was reached.
    if (focusRefusedField(document.getElementById("main"))) return;
    var title = document.getElementById("task-title");
    if (title && !window.location.hash &&
        (!document.activeElement || document.activeElement === document.body)) {
      title.focus({ preventScroll: true });
    }
  });

  /* ---- Phones and tablets ---------------------------------------------------
     The top navigation collapses behind a Menu button on narrow screens (CSS decides when
     the button shows); without this script the navigation simply wraps. A wide table
     scrolls inside its own container, so the page itself never scrolls sideways. */
  document.documentElement.classList.add("js");

  function setMenu(open) {
    var toggle = document.getElementById("nav-toggle");
    var bar = toggle && toggle.closest(".topbar");
    if (!bar) return;
    bar.classList.toggle("nav-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var toggle = event.target.closest("#nav-toggle");
    if (toggle) { setMenu(toggle.getAttribute("aria-expanded") !== "true"); return; }
    if (!event.target.closest(".topbar")) setMenu(false);
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var toggle = document.getElementById("nav-toggle");
    if (toggle && toggle.getAttribute("aria-expanded") === "true" && event.target.closest && event.target.closest(".topbar")) {
      setMenu(false);
      toggle.focus();
    }
  });

  function tableName(table) {
    var label = table.getAttribute("aria-label") || (table.caption && table.caption.textContent.trim());
    if (label) return label;
    var section = table.closest("section, .panel");
    var heading = section && section.querySelector("h1, h2, h3");
    // "(table)": the box must not share its name with the section it sits in (axe landmark-unique).
    return heading ? heading.textContent.trim() + " (table)" : "Table";
  }

  function wrapWideTables(root) {
    if (!root || !root.querySelectorAll) return;
    root.querySelectorAll("table.list").forEach(function (table) {
      if (table.parentElement.classList.contains("table-scroll-x")) return;
      var box = document.createElement("div");
      box.className = "table-scroll-x";
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", tableName(table));
      box.setAttribute("tabindex", "0");  // keyboard users can scroll it too
      table.parentNode.insertBefore(box, table);
      box.appendChild(table);
    });
  }

  /* A table wider than the screen says so (issue 47): on a phone its last columns (the
     queue's Claims, Trust's estimate, the judge comparison's candidate) sit off-screen
     in their scroll box, so a visible line above the box says to scroll sideways. */
  function markScrollableTables() {
    document.querySelectorAll("#main .table-scroll-x").forEach(function (box) {
      var wide = box.scrollWidth > box.clientWidth + 1;
      var hint = box.previousElementSibling;
      var has = hint && hint.classList.contains("scroll-hint");
      box.classList.toggle("is-scrollable", wide);
      if (wide && !has) {
        hint = document.createElement("p");
        hint.className = "scroll-hint";
        hint.setAttribute("aria-hidden", "true");  // the box itself is a named, focusable region
        hint.textContent = "More columns: scroll the table sideways →";
        box.parentNode.insertBefore(hint, box);
      } else if (!wide && has) {
        hint.remove();
      }
    });
  }
  var hintTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(hintTimer);
    hintTimer = setTimeout(markScrollableTables, 150);
  });

  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("nav-toggle");
    if (toggle) toggle.hidden = false;
    wrapWideTables(document.getElementById("main"));
    markScrollableTables();
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    wrapWideTables(target && target.isConnected ? target : document.getElementById("main"));
    markScrollableTables();
  });

  /* ---- No stale flash after Back ------------------------------------------------------ */
  // htmx keeps a snapshot of the page for Back; the messages in it were already read.
  // They leave the snapshot only: htmx takes it right after this event, in the same
  // task, and the same nodes go back at once, so the page keeps its messages and the
  // undo toast (with its countdown and its Undo button) when a filter pushes a URL.
  document.addEventListener("htmx:beforeHistorySave", function () {
    var box = document.getElementById("messages");
    if (!box || !box.firstChild) return;
    var kept = document.createDocumentFragment();
    while (box.firstChild) kept.appendChild(box.firstChild);
    queueMicrotask(function () {
      if (box.isConnected && !box.firstChild) box.appendChild(kept);
    });
  });
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) return;
    var box = document.getElementById("messages");
    if (box) box.textContent = "";
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
  /* ---- The selected claim (issue 26) ------------------------------------------------ */
  // The claim whose evidence fills #claim-evidence is marked aria-current in the answer
  // and in the claim list; a marked quote in a loaded evidence item is scrolled to.
  function claimIdOf(el) {
    if (el.hasAttribute("data-claim")) return el.getAttribute("data-claim");
    var link = el.querySelector("[data-claim-item]");
    return link ? link.getAttribute("data-claim-item") : null;
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "claim-evidence") return;
    var body = target.querySelector("[data-claim]");
    var id = body ? body.getAttribute("data-claim") : "";
    document.querySelectorAll("#claims-view [aria-current]").forEach(function (el) {
      el.removeAttribute("aria-current");
    });
    if (id) {
      document.querySelectorAll("#claims-view .answer-claims a.claim, #claims-view .claim-item").forEach(function (el) {
        if (claimIdOf(el) === id) el.setAttribute("aria-current", "true");
      });
    }
    var quote = target.querySelector("mark.quote");
    if (quote && quote.scrollIntoView) quote.scrollIntoView({ block: "nearest" });
  });

  /* ---- Undo window (issue 26) -----------------------------------------------------
     The toast and the task's panel count down the seconds the server gave them; at zero
     the undo button goes (the server refuses a late undo anyway). */
  var undoStarted = new WeakMap();
  var undoReloads = 0;
  // The room the toast takes at the bottom of the screen (issue 47): the page keeps it
  // free (padding) and the queue's sticky form sits above it, so the toast covers
  // neither the form's heading nor the end of the page.
  function keepToastRoom() {
    var toast = document.getElementById("undo-toast");
    var room = toast && !toast.hidden ? toast.offsetHeight + 24 : 0;
    document.documentElement.style.setProperty("--toast-room", room + "px");
  }
  function tickUndo() {
    keepToastRoom();
    document.querySelectorAll("[data-seconds-left]").forEach(function (box) {
      if (!undoStarted.has(box)) undoStarted.set(box, Date.now());
      var total = parseInt(box.getAttribute("data-seconds-left"), 10) || 0;
      var left = Math.max(0, Math.ceil(total - (Date.now() - undoStarted.get(box)) / 1000));
      var count = box.querySelector(".undo-count");
      if (count) count.textContent = String(left);
      if (left === 0 && !box.classList.contains("undo-closed")) {
        box.classList.add("undo-closed");
        box.querySelectorAll("form").forEach(function (f) { f.hidden = true; });
        var when = box.querySelector(".undo-when");
        if (when) when.textContent = " — applying now";
        // The task page shows the applied decision a moment later (a few tries at most).
        if (box.id === "pending-decision" && window.htmx && undoReloads < 5) {
          undoReloads += 1;
          setTimeout(function () {
            window.htmx.ajax("GET", window.location.pathname + window.location.search, {target: "#main", swap: "innerHTML"});
          }, 1500);
        }
      }
    });
  }
  setInterval(tickUndo, 500);
})();
