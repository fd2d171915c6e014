"""The browser side of :mod:`app.components.label_picker`: its JavaScript and CSS, as strings.

Kept apart from the Python wrapper because it is another language with its own concerns (the
keyboard, timing, rendering). Inline strings, not files, so the component needs no package
data. All text from the store is set with ``textContent``: nothing from a dataset or a
researcher is ever parsed as HTML.

How it keeps labels on the right item (issue 14, problem 1): the pick (label, rule, note)
lives only here, next to the item it is drawn with. ``Enter`` sends one message with the item
id and the server's view number, the pick and the nonce, and the picker then refuses every key
(visibly: "Not applied") until the server's answer for that nonce arrives with the next item.
The server saves only when the view and item in the message are the ones it is showing. So a
label and its Enter can never be split across two reruns, and a key pressed while the next
item is on its way is refused, never silently lost or applied to the wrong item.
"""

from __future__ import annotations

__all__ = ["CSS", "JS"]

CSS = """
:host { display: block; font-family: var(--st-font, sans-serif); color: var(--st-text-color); }
.qp { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1.5rem; }
@media (max-width: 800px) { .qp { grid-template-columns: 1fr; } }
.sec { font-weight: 600; margin: 0.4rem 0 0.15rem; }
.qp-pick > .sec:first-child, .qp-pick > .banner + .sec { margin-top: 0; }
.itemid { opacity: 0.7; font-size: 0.85rem; }
.question { font-size: 1.25rem; font-weight: 600; margin: 0.1rem 0 0.3rem; white-space: pre-wrap; }
ul { margin: 0.1rem 0; padding-left: 1.4rem; }
.answer { border: 1px solid var(--st-border-color, #ddd); border-radius: 0.5rem;
  padding: 0.5rem 0.8rem; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 16rem;
  overflow-y: auto; }
.hl { background: rgba(255, 165, 0, 0.3); font-weight: 700; }
.hint { opacity: 0.7; font-size: 0.8rem; margin: 0.2rem 0; }
button { font: inherit; color: inherit; background: transparent; cursor: pointer;
  border: 1px solid var(--st-border-color, #ccc); border-radius: 0.5rem; padding: 0.3rem 0.5rem;
  width: 100%; text-align: left; margin: 0; }
button[aria-pressed="true"] { background: var(--st-primary-color, #ff4b4b); color: #fff;
  border-color: var(--st-primary-color, #ff4b4b); }
button kbd, .keys kbd { font-family: var(--st-code-font, monospace); font-size: 0.8rem;
  border: 1px solid currentColor; border-radius: 0.25rem; padding: 0 0.25rem; margin-right: 0.4rem;
  opacity: 0.8; }
.labels { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 0.3rem; }
.labels button { font-size: 0.9rem; padding: 0.3rem 0.4rem; }
.labels button kbd { margin-right: 0.3rem; }
.rules { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0.3rem; }
.rules button { font-size: 0.85rem; padding: 0.25rem 0.45rem; }
.saverow { display: flex; align-items: stretch; gap: 0.5rem; margin-top: 0.5rem; }
.saverow button { width: auto; flex: none; }
.nav { display: flex; flex-wrap: wrap; gap: 0.3rem; margin-top: 0.3rem; }
.nav button { width: auto; font-size: 0.85rem; padding: 0.2rem 0.45rem; }
.save { background: var(--st-primary-color, #ff4b4b); color: #fff; }
input { font: inherit; width: 100%; box-sizing: border-box; padding: 0.35rem;
  border: 1px solid var(--st-border-color, #ccc); border-radius: 0.5rem;
  background: var(--st-secondary-background-color, #f6f6f6); color: inherit; }
label { display: block; font-size: 0.85rem; margin-top: 0.4rem; }
.status { flex: 1; min-height: 1.4rem; margin: 0; padding: 0.3rem 0.6rem; border-radius: 0.4rem;
  font-size: 0.9rem; }
.status.success { background: rgba(33, 195, 84, 0.15); }
.status.info, .status.pick { background: rgba(28, 131, 225, 0.12); }
.status.idle { opacity: 0.75; }
.status.warning, .status.refused { background: rgba(255, 189, 69, 0.3); }
.status.error { background: rgba(255, 43, 43, 0.15); }
.status.pending { background: rgba(128, 128, 128, 0.15); }
.flagbox[hidden] { display: none; }
.banner { background: rgba(28, 131, 225, 0.12); padding: 0.25rem 0.6rem; border-radius: 0.4rem;
  font-size: 0.85rem; margin-bottom: 0.3rem; }
details.ruledesc { font-size: 0.85rem; margin-top: 0.4rem; }
details.ruledesc summary { cursor: pointer; }
details.ruledesc dt { font-weight: 600; margin-top: 0.3rem; }
details.ruledesc dd { margin: 0 0 0 1rem; opacity: 0.85; }
"""

JS = r"""
const TEXT_ENTRY = new Set(["INPUT", "TEXTAREA", "SELECT"]);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else if (k === "onclick") node.addEventListener("click", v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return node;
}

function isTextEntry(node) {
  return !!node && (TEXT_ENTRY.has(node.tagName) || node.isContentEditable);
}

function makeController(root) {
  const ctl = {
    root, data: null, view: null, itemId: null, pick: { value: null, rule: null },
    pending: null, shownAt: 0, lastAct: 0, active: 0, focus: undefined, gen: 0,
    shownAck: null, trigger: null, flagOpen: false, refused: [],
  };
  const now = () => performance.now() / 1000;
  const cap = () => Number((ctl.data && ctl.data.idle_cap) || 60);

  ctl.activity = () => {
    const t = now();
    ctl.active += Math.min(Math.max(0, t - ctl.lastAct), cap());
    ctl.lastAct = t;
  };

  ctl.status = (kind, text) => {
    const box = root.querySelector("[data-qp=status]");
    if (!box) return;
    box.className = "status " + kind;
    box.textContent = text;
  };

  ctl.send = (action, extra) => {
    if (ctl.pending) return ctl.refuse(action);
    ctl.activity();
    const nonce = Math.random().toString(36).slice(2) + Date.now().toString(36);
    const msg = Object.assign({ action, nonce, view: ctl.view, item_id: ctl.itemId,
      active: ctl.active, wall: now() - ctl.shownAt }, extra || {});
    ctl.pending = { nonce, action, since: now() };
    ctl.status("pending", action === "save" ? "Saving…" : "Opening…");
    root.host && root.host.setAttribute("data-qp-pending", "1");
    ctl.trigger("action", msg);
  };

  ctl.refuse = (what) => {
    if (!ctl.refused.includes(what)) ctl.refused.push(what);
    ctl.status("refused", `Not applied: ${what} (the next item is loading; press it again ` +
      "when it appears).");
  };

  // What the status line says about the item on screen and its pick: it replaces the last
  // acknowledgement as soon as the person acts on this item, so "Saved item A" never stays
  // beside item B's label or flag box (issue 33).
  ctl.name = () => (ctl.data ? ctl.data.item.external_id : "");
  ctl.showPick = () => {
    const d = ctl.data;
    if (!d) return;
    const label = d.labels.find((l) => l.value === ctl.pick.value);
    if (!label) {
      const keys = d.labels.map((l) => l.key).join(", ");
      return ctl.status("idle", `Item ${ctl.name()}: pick a label (${keys}), then Enter.`);
    }
    const rule = ctl.pick.rule === null ? "" : ` · rule ${ctl.pick.rule}`;
    ctl.status("pick", `Item ${ctl.name()}: ${label.title.toLowerCase()}${rule} picked; ` +
      "Enter saves.");
  };

  ctl.drawPick = () => {
    for (const b of root.querySelectorAll("[data-value]")) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.value) === ctl.pick.value));
    }
    for (const b of root.querySelectorAll("[data-rule]")) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.rule) === ctl.pick.rule));
    }
  };

  ctl.setValue = (v) => {
    if (ctl.pending) return ctl.refuse("label");
    ctl.pick.value = v;
    ctl.drawPick();
    ctl.showPick();
  };
  ctl.setRule = (r) => {
    if (ctl.pending) return ctl.refuse("rule");
    ctl.pick.rule = r === null || r === ctl.pick.rule ? null : r;
    ctl.drawPick();
    ctl.showPick();
  };

  ctl.save = () => {
    if (ctl.pending) return ctl.refuse("Enter");
    if (ctl.pick.value === null) {
      const keys = ctl.data.labels.map((l) => `${l.key} ${l.title.toLowerCase()}`).join(", ");
      return ctl.status("warning", `Pick a label first: ${keys}.`);
    }
    const note = root.querySelector("[data-qp=note]");
    ctl.send("save", { value: ctl.pick.value, rule: ctl.pick.rule, note: note ? note.value : "" });
  };

  ctl.openFlag = () => {
    if (ctl.pending) return ctl.refuse("flag");
    const box = root.querySelector("[data-qp=flagbox]");
    box.hidden = false;
    ctl.flagOpen = true;
    ctl.status("info", `Item ${ctl.name()}: why does it need review? Enter sends, Esc cancels.`);
    box.querySelector("input").focus();
  };

  ctl.sendFlag = () => {
    const reason = root.querySelector("[data-qp=reason]").value.trim();
    if (!reason) return ctl.status("warning", "Say why the item needs review, then press Enter.");
    ctl.send("flag", { reason });
  };

  ctl.render = (d) => {
    const old = root.querySelector(".qp-wrap");
    if (old) old.remove();
    const wrap = el("div", { class: "qp-wrap" });
    const item = d.item;
    const left = el("div", { class: "qp-item" });
    if (d.review) {
      left.appendChild(el("div", { class: "banner", text: "You are editing an earlier " +
        "label. Saving adds a new entry to your history (the old one is kept); Q returns to " +
        "your queue." }));
    }
    left.appendChild(el("div", { class: "itemid", text: `Item ${item.external_id}` }));
    left.appendChild(el("div", { class: "sec", text: "Question" }));
    left.appendChild(el("div", { class: "question", text: item.question }));
    left.appendChild(el("div", { class: "sec", text: "References" }));
    const refs = el("ul");
    for (const r of item.references) refs.appendChild(el("li", { text: r }));
    if (!item.references.length) refs.appendChild(el("li", { text: "(none)" }));
    left.appendChild(refs);
    if (item.choices && item.choices.length) {
      left.appendChild(el("div", { class: "sec", text: "Choices" }));
      const ch = el("ul");
      for (const c of item.choices) ch.appendChild(el("li", { text: c }));
      left.appendChild(ch);
    }
    left.appendChild(el("div", { class: "sec", text: "Candidate answer" }));
    const ans = el("div", { class: "answer", "data-qp": "answer" });
    if (!item.candidate.length) ans.appendChild(el("em", { text: "(empty answer)" }));
    for (const [text, hl] of item.candidate) {
      ans.appendChild(hl ? el("mark", { class: "hl", text }) : document.createTextNode(text));
    }
    left.appendChild(ans);
    left.appendChild(el("div", { class: "hint", text: "Words that also occur in a reference " +
      "are highlighted to help reading; overlap alone does not make an answer correct." }));

    // The picker column is laid out to fit a 1366x768 laptop screen (issue 21, item 5): the
    // labels in one row, the rules as a two-column grid of names (their descriptions are in
    // each button's tooltip and in "What the rules mean" below the fold), and the status line
    // right next to Save, so the feedback of every key is seen without scrolling.
    const right = el("div", { class: "qp-pick" });
    right.appendChild(el("div", { class: "sec", text: "Label" }));
    const labels = el("div", { class: "labels" });
    for (const l of d.labels) {
      labels.appendChild(el("button", { "data-value": l.value, "aria-pressed": "false",
        onclick: () => ctl.setValue(l.value) }, el("kbd", { text: l.key }), l.title));
    }
    right.appendChild(labels);
    right.appendChild(el("div", { class: "sec", text: "Rule that decided it" }));
    const rules = el("div", { class: "rules" });
    for (const r of d.rules) {
      const desc = [r.description, r.example ? `e.g. ${r.example}` : ""].filter(Boolean).join(" ");
      rules.appendChild(el("button", { "data-rule": r.number, "aria-pressed": "false",
        title: desc || null, onclick: () => ctl.setRule(r.number) }, `${r.number} · ${r.name}`));
    }
    rules.appendChild(el("button", { onclick: () => ctl.setRule(null) },
      el("kbd", { text: "0" }), "No rule"));
    right.appendChild(rules);
    right.appendChild(el("label", { for: "qp-note", text: "Note (optional)" }));
    right.appendChild(el("input", { id: "qp-note", "data-qp": "note", type: "text",
      placeholder: "Why? Anything odd? (/ to type here)", value: (d.pick && d.pick.note) || "" }));
    const saverow = el("div", { class: "saverow" });
    saverow.appendChild(el("button", { class: "save", "data-qp": "save",
      onclick: () => ctl.save() }, el("kbd", { text: "Enter" }),
      d.review ? "Save edit" : "Save & next"));
    saverow.appendChild(el("div", { class: "status idle", "data-qp": "status", role: "status",
      "aria-live": "polite" }));
    right.appendChild(saverow);
    const nav = el("div", { class: "nav" });
    nav.appendChild(el("button", { onclick: () => ctl.send("skip") },
      el("kbd", { text: "S" }), "Skip"));
    nav.appendChild(el("button", { onclick: () => ctl.send("back") },
      el("kbd", { text: "B" }), "Back"));
    if (d.review) {
      nav.appendChild(el("button", { onclick: () => ctl.send("forward") },
        el("kbd", { text: "F" }), "Forward"));
    }
    nav.appendChild(el("button", { onclick: () => ctl.send("queue") },
      el("kbd", { text: "Q" }), "Next unlabelled"));
    nav.appendChild(el("button", { onclick: () => ctl.openFlag() },
      el("kbd", { text: "R" }), "Flag for review"));
    right.appendChild(nav);
    const flag = el("div", { class: "flagbox", "data-qp": "flagbox", hidden: true });
    flag.appendChild(el("label", { for: "qp-reason", text: "Reason for review" }));
    flag.appendChild(el("input", { id: "qp-reason", "data-qp": "reason", type: "text",
      placeholder: "What is wrong with this item? Enter sends, Esc cancels" }));
    right.appendChild(flag);
    right.appendChild(el("div", { class: "hint", text: d.legend }));
    const described = d.rules.filter((r) => r.description || r.example);
    if (described.length) {
      const details = el("details", { class: "ruledesc" },
        el("summary", { text: "What the rules mean" }));
      const list = el("dl");
      for (const r of described) {
        list.appendChild(el("dt", { text: `${r.number} · ${r.name}` }));
        const desc = [r.description, r.example ? `e.g. ${r.example}` : ""].filter(Boolean);
        list.appendChild(el("dd", { text: desc.join(" ") }));
      }
      details.appendChild(list);
      right.appendChild(details);
    }
    const grid = el("div", { class: "qp" }, left, right);
    wrap.appendChild(grid);
    root.appendChild(wrap);
    ctl.drawPick();
  };

  ctl.update = (d) => {
    ctl.data = d;
    const ack = d.ack;
    let refused = [];
    if (ctl.pending) {
      const answered = ack && ack.nonce === ctl.pending.nonce;
      if (!answered && d.view === ctl.view) {
        if (now() - ctl.pending.since > 8) ctl.status("pending", "Still waiting for the server…");
        return;  // an older run's page: keep the item and keep refusing keys
      }
      ctl.pending = null;
      refused = ctl.refused;
      ctl.refused = [];
      root.host && root.host.removeAttribute("data-qp-pending");
    }
    const changed = d.view !== ctl.view;
    if (changed) {
      ctl.view = d.view;
      ctl.itemId = d.item.id;
      ctl.pick = { value: d.pick ? d.pick.value : null, rule: d.pick ? d.pick.rule : null };
      ctl.shownAt = now();
      ctl.lastAct = ctl.shownAt;
      ctl.active = 0;
      ctl.flagOpen = false;
      ctl.render(d);
      root.host && root.host.setAttribute("data-qp-item", String(d.item.external_id));
    }
    // The acknowledgement names the item it answered; on another item it says which one is
    // shown now, and a key refused while this item loaded is reported for this item.
    const here = d.item.external_id;
    let kind = null;
    let text = "";
    let moved = false;
    if (ack && ack.nonce !== ctl.shownAck) {
      ctl.shownAck = ack.nonce;
      kind = ack.status;
      text = ack.text || "";
      moved = !!(text && ack.item && String(ack.item) !== String(here));
    } else if (d.flash && d.flash.text) {
      kind = d.flash.kind;
      text = d.flash.text;
    }
    if (refused.length) {
      const what = refused.join(", ");
      ctl.status("refused", `Not applied to item ${here}: ${what} pressed while it loaded; ` +
        "press it again." + (text ? ` (${text})` : ""));
    } else if (text) {
      ctl.status(kind, moved ? `${text} · now showing item ${here}` : text);
    } else if (changed) {
      ctl.showPick();
    }
    if (d.focus !== ctl.focus) {
      ctl.focus = d.focus;
      const a = document.activeElement;
      if (a && a !== document.body && a !== root.host && a.blur) a.blur();
    }
  };

  ctl.onKey = (e) => {
    if (!ctl.data || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const target = e.composedPath()[0];
    const mine = target && root.contains(target);
    ctl.activity();
    if (isTextEntry(target)) {
      if (!mine) return;  // someone typing elsewhere (a search box, the dataset picker)
      const field = target.dataset.qp;
      if (field === "note" && e.key === "Enter") { e.preventDefault(); ctl.save(); }
      else if (field === "reason" && e.key === "Enter") { e.preventDefault(); ctl.sendFlag(); }
      else if (e.key === "Escape") {
        target.blur();
        if (target.dataset.qp === "reason") {
          root.querySelector("[data-qp=flagbox]").hidden = true;
          ctl.showPick();
        }
      }
      return;
    }
    const key = e.key.length === 1 ? e.key.toUpperCase() : e.key;
    const d = ctl.data;
    let handled = true;
    const label = d.labels.find((l) => l.key === key);
    if (label) ctl.setValue(label.value);
    else if (/^[0-9]$/.test(key)) {
      const n = Number(key);
      if (n === 0) ctl.setRule(null);
      else if (d.rules.some((r) => r.number === n)) ctl.setRule(n);
      else handled = false;
    } else if (key === "Enter") {
      if (target && target.tagName === "BUTTON" && mine) { handled = false; }
      else ctl.save();
    }
    else if (key === "S") ctl.send("skip");
    else if (key === "B") ctl.send("back");
    else if (key === "F" && d.review) ctl.send("forward");
    else if (key === "Q") ctl.send("queue");
    else if (key === "R") ctl.openFlag();
    else if (key === "/") root.querySelector("[data-qp=note]").focus();
    else handled = false;
    if (handled) { e.preventDefault(); e.stopPropagation(); }
  };
  ctl.onActivity = () => ctl.activity();
  window.addEventListener("keydown", ctl.onKey, true);
  window.addEventListener("pointerdown", ctl.onActivity, true);
  window.addEventListener("wheel", ctl.onActivity, { capture: true, passive: true });
  let lastMove = 0;
  ctl.onMove = () => { const t = now(); if (t - lastMove > 1) { lastMove = t; ctl.activity(); } };
  window.addEventListener("pointermove", ctl.onMove, { capture: true, passive: true });
  ctl.destroy = () => {
    window.removeEventListener("keydown", ctl.onKey, true);
    window.removeEventListener("pointerdown", ctl.onActivity, true);
    window.removeEventListener("wheel", ctl.onActivity, true);
    window.removeEventListener("pointermove", ctl.onMove, true);
  };
  return ctl;
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let ctl = parentElement.__qaevalPicker;
  if (!ctl) {
    ctl = makeController(parentElement);
    parentElement.__qaevalPicker = ctl;
  }
  ctl.trigger = setTriggerValue;
  ctl.update(data);
  const gen = ++ctl.gen;
  return () => {
    // Streamlit calls an earlier run's cleanup late in some orders: tear down only when this
    // was the last run and the picker has really left the page.
    setTimeout(() => {
      const host = parentElement.host || parentElement;
      if (ctl.gen === gen && !host.isConnected) {
        ctl.destroy();
        delete parentElement.__qaevalPicker;
      }
    }, 0);
  };
}
"""
