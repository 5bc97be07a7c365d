// The exercise page: the CodeMirror editor, the verdict (render.view from the worker, built into
// the DOM here), progress, hints and the reference solution. The runner (runner.js) is started by
// its own small script first, so Python loads while this bundle is parsed.
import { EditorView, basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";
import { indentUnit } from "@codemirror/language";
import { keymap } from "@codemirror/view";
import { indentWithTab, undo } from "@codemirror/commands";
import { editorTheme } from "./theme.js";
import { bilingual, focusableScrollers, initHints, initSite, labels, lang, progress, recordRun, showStatuses, solved, statusPair, store } from "./site.js";

const SOLUTION_AFTER = 3; // failed runs after which the reference is offered behind a confirmation

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== ""));
  return node;
}

const pairOf = (entry, fields = {}) => {
  const fill = (text) => text.replace(/\{(\w+)(?::[^}]*)?\}/g, (_, name) => fields[name] ?? "");
  return { zh: fill(entry[0]), en: fill(entry[1]) };
};

/** A view (render.view's shape) for the outcomes decided on this page, not by Python. */
function pageView(status, message, extraAdvice = []) {
  return {
    status, title: statusPair(status), summary: null, message, details: "", advice: extraAdvice,
    groups: [], passed: [], skipped: [], output: "", process_stderr: "", tests: [],
  };
}

function toView(reply, limitS) {
  const L = labels();
  if (reply.timeout) {
    const view = pageView("timeout", "", [pairOf(L.advice.timeout)]);
    view.message = pairOf(L.messages.timeout, { timeout: limitS });
    view.stop = reply.timeout; // "interrupted" (soft stop) or "terminated" (fresh worker)
    return view;
  }
  if (reply.stopped) {
    const view = pageView("interrupted", pairOf(L.messages.stopped));
    view.stop = reply.stopped;
    return view;
  }
  // The interpreter broke while running this code: the CLI's name for a dead child is "crashed".
  if (reply.crashed) return pageView("crashed", reply.error);
  // The runner could not start: shown, but not remembered as a verdict on the code.
  if (reply.error) return { ...pageView("error", reply.error), runnerFailed: true };
  return reply.view;
}

function block(label, text, cls = "") {
  if (!text) return null;
  return el("div", { class: "block " + cls }, el("span", { class: "label" }, bilingual(label)), el("pre", {}, text));
}

const LABEL = (key) => pairOf(labels().labels[key]);

function testItems(names, outcome) {
  return el("ul", { class: "names" }, ...names.map((name) => el("li", { "data-name": name, "data-outcome": outcome }, el("code", {}, name))));
}

function groupItem(group, index) {
  const count = group.names.length;
  const head = el(
    "div",
    { class: "group-head" },
    el("span", { class: "outcome" }, bilingual(group.outcome_label)),
    " ",
    count === 1 ? el("code", {}, group.names[0]) : el("strong", {}, bilingual({ zh: `${count} 个测试`, en: `${count} tests` })),
    " ",
    el("span", { class: "kind" }, bilingual(group.label)),
  );
  const parts = [head];
  if (count > 1) parts.push(el("details", { class: "which" }, el("summary", {}, bilingual({ zh: "是哪些测试", en: "Which tests" })), testItems(group.names, group.outcome)));
  else parts.push(testItems(group.names, group.outcome));
  if (group.note) parts.push(el("p", { class: "note" }, bilingual(group.note)));
  const compare = group.compare;
  if (compare) {
    parts.push(el("pre", { class: "headline" }, group.headline));
    if (compare.summary) parts.push(el("p", { class: "compare-summary" }, bilingual(compare.summary)));
    parts.push(el("div", { class: "compare" }, ...compare.blocks.map((b) => block(b.label, b.text, "value"))));
  } else {
    parts.push(el("pre", { class: "message" }, group.message));
  }
  if (group.case) parts.push(block(group.case.label, group.case.text, "case"));
  if (group.details) {
    const where = el("details", {}, el("summary", {}, bilingual(LABEL("where"))), el("pre", {}, group.details));
    if (index === 0) where.open = true;
    parts.push(where);
  }
  parts.push(block(LABEL("printed"), group.stdout));
  return el("li", { class: "group " + group.outcome, "data-outcome": group.outcome, "data-kind": group.kind }, ...parts);
}

function showView(view, data) {
  const box = document.querySelector("[data-testid=verdict]");
  const list = document.querySelector("[data-testid=results]");
  box.dataset.status = view.status;
  box.dataset.stop = view.stop || "";
  const text = (value) => (value && typeof value === "object" ? bilingual(value) : value);
  const parts = [el("strong", { class: "title" }, bilingual(view.title)), view.summary ? el("span", { class: "summary" }, " ", bilingual(view.summary)) : null];
  if (view.message) parts.push(el("pre", { class: "message" }, text(view.message)));
  if (view.details) parts.push(block(LABEL("where"), view.details));
  parts.push(block(LABEL("printed_outside"), view.output));
  parts.push(block(LABEL("process_stderr"), view.process_stderr));
  if (view.advice?.length) parts.push(el("ul", { class: "advice" }, ...view.advice.map((a) => el("li", {}, bilingual(a)))));
  if (view.status === "accepted" && data.next) {
    parts.push(el("p", { class: "next" }, el("a", { href: `${data.next.id}.html`, class: "button primary", "data-testid": "next" },
      bilingual({ zh: `下一题：${data.next.id} ${data.next.title} →`, en: `Next: ${data.next.id} ${data.next.title_en} →` }))));
  }
  box.replaceChildren(...parts.filter(Boolean));
  const items = view.groups.map(groupItem);
  for (const [names, key, outcome] of [[view.passed, "passed_tests", "passed"], [view.skipped, "skipped_tests", "skipped"]]) {
    if (!names.length) continue;
    items.push(el("li", { class: "group " + outcome, "data-outcome": outcome },
      el("details", {}, el("summary", {}, el("span", { class: "outcome" }, outcome === "passed" ? "✓ " : "– "), bilingual(LABEL(key)), ` (${names.length})`),
        testItems(names, outcome))));
  }
  list.replaceChildren(...items);
  focusableScrollers(box.parentElement);
}

function clearView() {
  const box = document.querySelector("[data-testid=verdict]");
  box.dataset.status = "";
  box.dataset.stop = "";
  box.replaceChildren();
  document.querySelector("[data-testid=results]").replaceChildren();
}

function main() {
  initSite();
  const data = JSON.parse(document.getElementById("exercise-data").textContent);
  const codeKey = "code:" + data.id;
  const viewKey = "view:" + data.id;
  const runButton = document.querySelector("[data-testid=run]");
  const stopButton = document.querySelector("[data-testid=stop]");
  const undoButton = document.querySelector("[data-testid=undo-reset]");
  let running = false;
  let resetting = false;

  const view = new EditorView({
    doc: store.get(codeKey, data.starter),
    parent: document.getElementById("editor"),
    extensions: [
      basicSetup,
      python(),
      editorTheme,
      EditorView.lineWrapping, // a long line (a TODO comment, a docstring) wraps instead of hiding past the edge
      indentUnit.of("    "),
      keymap.of([indentWithTab]),
      EditorView.contentAttributes.of({ "aria-label": lang() === "en" ? "Code editor" : "代码编辑器", "aria-describedby": "editor-help", tabindex: "0" }),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        store.set(codeKey, update.state.doc.toString());
        if (!resetting) undoButton.hidden = true; // "undo reset" would now undo something else
      }),
    ],
  });
  window.mpEditor = view;

  // Started by runner.js (async), almost always before this bundle runs; should it come later, wait for it.
  const runnerReady = window.mpRunner
    ? Promise.resolve(window.mpRunner)
    : new Promise((resolve) => document.addEventListener("mp:runner", () => resolve(window.mpRunner), { once: true }));

  async function runTests() {
    if (running) return;
    running = true;
    runButton.disabled = true;
    stopButton.hidden = false;
    clearView();
    const box = document.querySelector("[data-testid=verdict]");
    box.dataset.status = "running";
    box.replaceChildren(el("strong", {}, bilingual(statusPair("running"))));
    const clicked = performance.now();
    const runner = await runnerReady;
    const reply = await runner.run(data.test, view.state.doc.toString(), data.timeout * 1000);
    const shown = toView(reply, data.timeout);
    window.mpTimings.verdicts.push(performance.now());
    window.mpTimings.runs.push(performance.now() - clicked);
    showView(shown, data);
    if (!shown.runnerFailed && !reply.stopped) {
      const counts = reply.verdict?.counts || { passed: 0, total: 0 };
      recordRun(data.id, { status: shown.status, passed: counts.passed, total: counts.total, at: new Date().toISOString() });
      store.set(viewKey, shown);
      showStatuses();
      offerSolution();
    }
    running = false;
    runButton.disabled = false;
    stopButton.hidden = true;
  }

  runButton.addEventListener("click", runTests);
  stopButton.addEventListener("click", () => window.mpRunner?.stop());
  // Ctrl/Cmd+Enter runs from anywhere on the page, the editor included.
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      event.stopPropagation(); // the editor would insert a blank line
      runTests();
    }
  }, true);
  document.querySelector("[data-testid=reset]").addEventListener("click", () => {
    resetting = true;
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: data.starter } });
    resetting = false;
    undoButton.hidden = false;
    clearView();
    store.set(viewKey, null);
  });
  undoButton.addEventListener("click", () => {
    undo(view);
    view.focus();
  });

  initHints(data.id);

  // The reference solution: offered after acceptance, or after several failed runs behind a confirmation.
  const solution = document.querySelector("[data-testid=solution]");
  const showSolution = document.querySelector("[data-testid=show-solution]");
  function offerSolution() {
    const p = progress(data.id);
    showSolution.hidden = !solved(data.id) && p.failedRuns < SOLUTION_AFTER;
    showSolution.dataset.confirm = solved(data.id) ? "" : "1";
  }
  showSolution.addEventListener("click", () => {
    const question = lang() === "en" ? "You have not solved it yet. Show the reference solution anyway?" : "还没有通过。确定要看参考答案吗？";
    if (showSolution.dataset.confirm && !window.confirm(question)) return;
    solution.hidden = false;
    showSolution.hidden = true;
    focusableScrollers(solution);
    solution.focus();
  });
  offerSolution();

  const last = store.get(viewKey);
  if (last && last.groups) showView(last, data);
  document.addEventListener("mp:lang", () => {
    view.contentDOM.setAttribute("aria-label", lang() === "en" ? "Code editor" : "代码编辑器");
  });
}

main();
