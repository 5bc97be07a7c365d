// The exercise page: the CodeMirror editor and the verdict display. The runner (runner.js) is
// started by its own small script first, so Python loads while this bundle is parsed.
import { EditorView, basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";
import { indentUnit } from "@codemirror/language";
import { Prec } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { indentWithTab, undo } from "@codemirror/commands";
import { initSite, lang, statusText, store } from "./site.js";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children.filter((c) => c !== null && c !== undefined && c !== ""));
  return node;
}

function toVerdict(reply, limitS) {
  if (reply.timeout) {
    return {
      status: "timeout",
      stop: reply.timeout, // "interrupted" (soft stop) or "terminated" (fresh worker)
      message: lang() === "en" ? `Stopped after the ${limitS} s time limit.` : `超过时间限制（${limitS} 秒），已停止。`,
      tests: [],
    };
  }
  // The interpreter broke while running this code: the CLI's name for a dead child is "crashed".
  if (reply.crashed) return { status: "crashed", message: reply.error, tests: [] };
  // The runner could not start: shown, but not remembered as a verdict on the code.
  if (reply.error) return { status: "error", message: reply.error, tests: [], runnerFailed: true };
  return reply.verdict;
}

function block(cls, labelZh, labelEn, text) {
  if (!text) return null;
  return el("div", { class: cls }, el("span", { class: "label" }, lang() === "en" ? labelEn : labelZh), el("pre", {}, text));
}

function showVerdict(verdict) {
  const box = document.querySelector("[data-testid=verdict]");
  const list = document.querySelector("[data-testid=results]");
  box.dataset.status = verdict.status;
  box.dataset.stop = verdict.stop || "";
  const tests = verdict.tests || [];
  const passed = tests.filter((t) => t.outcome === "passed").length;
  const parts = [
    el("strong", {}, statusText(verdict.status)),
    tests.length ? ` ${passed}/${tests.length}` : "",
    block("message", "原因", "Why", verdict.message),
    block("details", "位置", "Where", verdict.details),
    block("stdout", "测试之外的输出", "Printed outside tests", verdict.output),
  ];
  box.replaceChildren(...parts.filter((part) => part));
  list.replaceChildren(
    ...tests.map((t) =>
      el(
        "li",
        { class: "test " + t.outcome, "data-outcome": t.outcome, "data-name": t.name },
        el("span", { class: "outcome" }, t.outcome),
        " ",
        el("code", {}, t.name),
        block("message", "断言", "Assertion", t.message),
        block("details", "位置", "Where", t.details),
        block("stdout", "输出", "Output", t.stdout),
      ),
    ),
  );
}

function main() {
  initSite();
  const data = JSON.parse(document.getElementById("exercise-data").textContent);
  const codeKey = "code:" + data.id;
  const verdictKey = "verdict:" + data.id;
  const runButton = document.querySelector("[data-testid=run]");
  const undoButton = document.querySelector("[data-testid=undo-reset]");
  let running = false;
  let resetting = false;

  const view = new EditorView({
    doc: store.get(codeKey, data.starter),
    parent: document.getElementById("editor"),
    extensions: [
      basicSetup,
      python(),
      indentUnit.of("    "),
      keymap.of([indentWithTab]),
      Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => (runTests(), true) }])),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        store.set(codeKey, update.state.doc.toString());
        if (!resetting) undoButton.hidden = true; // "undo reset" would now undo something else
      }),
    ],
  });
  window.mpEditor = view;

  const runner = window.mpRunner; // started by runner.js before this bundle was even parsed

  async function runTests() {
    if (running) return;
    running = true;
    runButton.disabled = true;
    const box = document.querySelector("[data-testid=verdict]");
    box.dataset.status = "running";
    box.replaceChildren(el("strong", {}, statusText("running")));
    const clicked = performance.now();
    const reply = await runner.run(data.test, view.state.doc.toString(), data.timeout * 1000);
    const verdict = toVerdict(reply, data.timeout);
    window.mpTimings.verdicts.push(performance.now());
    window.mpTimings.runs.push(performance.now() - clicked);
    showVerdict(verdict);
    if (!verdict.runnerFailed) store.set(verdictKey, verdict);
    running = false;
    runButton.disabled = false;
  }

  runButton.addEventListener("click", runTests);
  document.querySelector("[data-testid=reset]").addEventListener("click", () => {
    resetting = true;
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: data.starter } });
    resetting = false;
    undoButton.hidden = false;
  });
  undoButton.addEventListener("click", () => {
    undo(view);
    view.focus();
  });
  const last = store.get(verdictKey);
  if (last) showVerdict(last);
  document.addEventListener("mp:lang", () => {
    const shown = store.get(verdictKey);
    if (shown && !running) showVerdict(shown);
  });
}

main();
