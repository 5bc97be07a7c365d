// Shared by every page: the Chinese/English switch, the visitor's progress (localStorage) and the
// status cells and progress bars that show it. Labels come from practice/judging/render.py through the
// page's #mp-labels JSON, so the site and the local judge name statuses alike.
export const store = {
  get(key, fallback = null) {
    try {
      const value = localStorage.getItem("mp:" + key);
      return value === null ? fallback : JSON.parse(value);
    } catch {
      return fallback;
    }
  },
  set(key, value) {
    try {
      localStorage.setItem("mp:" + key, JSON.stringify(value));
    } catch {
      /* storage full or disabled: the page still works, it just forgets */
    }
  },
};

export const lang = () => document.documentElement.dataset.ui || "zh";

let labelCache = null;
export function labels() {
  if (!labelCache) {
    const node = document.getElementById("mp-labels");
    labelCache = node ? JSON.parse(node.textContent) : { status: {}, kind: {}, labels: {}, advice: {}, messages: {} };
  }
  return labelCache;
}

/** {zh, en} of a status name. */
export function statusPair(status) {
  const pair = labels().status[status];
  return pair ? { zh: pair[0], en: pair[1] } : { zh: status, en: status };
}

export function statusText(status) {
  return statusPair(status)[lang() === "en" ? "en" : "zh"];
}

/** A node showing both languages; CSS shows the one the page is in. */
export function bilingual(pair) {
  const span = document.createElement("span");
  const zh = Object.assign(document.createElement("span"), { className: "zh", lang: "zh-CN", textContent: pair.zh });
  const en = Object.assign(document.createElement("span"), { className: "en", lang: "en", textContent: pair.en });
  span.append(zh, en);
  return span;
}

// ---------------------------------------------------------------- progress
// progress:<id> = {best: summary, last: summary, runs, failedRuns, hints}; summary = {status, passed, total, at}.
// "Solved" sticks: a later failing run replaces `last`, never an accepted `best`.

export function progress(id) {
  const saved = store.get("progress:" + id);
  if (saved) return saved;
  const old = store.get("verdict:" + id); // an earlier version kept only the last verdict
  if (old && old.status) {
    const summary = { status: old.status, passed: 0, total: 0, at: null };
    return { best: summary, last: summary, runs: 1, failedRuns: old.status === "accepted" ? 0 : 1, hints: 0 };
  }
  return { best: null, last: null, runs: 0, failedRuns: 0, hints: 0 };
}

const better = (a, b) =>
  !b || (a.status === "accepted") > (b.status === "accepted") ||
  ((a.status === "accepted") === (b.status === "accepted") && (a.passed || 0) > (b.passed || 0));

export function recordRun(id, summary) {
  const p = progress(id);
  p.last = summary;
  if (better(summary, p.best)) p.best = summary;
  p.runs += 1;
  if (summary.status !== "accepted") p.failedRuns += 1;
  store.set("progress:" + id, p);
  return p;
}

export function setProgress(id, change) {
  const p = { ...progress(id), ...change };
  store.set("progress:" + id, p);
  return p;
}

export const solved = (id) => progress(id).best?.status === "accepted";

function when(at) {
  return at ? new Date(at).toLocaleString(lang() === "en" ? "en" : "zh-CN") : "";
}

export function showStatuses() {
  for (const cell of document.querySelectorAll("[data-status-for]")) {
    const p = progress(cell.dataset.statusFor);
    const shown = solved(cell.dataset.statusFor) ? p.best : p.last;
    cell.dataset.status = shown ? shown.status : "";
    cell.replaceChildren(shown ? bilingual(shown.status === "accepted" ? { zh: "✓ 已通过", en: "✓ Solved" } : statusPair(shown.status)) : "—");
    if (shown && p.last && p.last !== shown && p.last.status !== "accepted") {
      const last = statusPair(p.last.status);
      cell.title = lang() === "en" ? `last run: ${last.en} ${when(p.last.at)}` : `最近一次：${last.zh} ${when(p.last.at)}`;
    } else if (shown) {
      cell.title = when(shown.at);
    }
  }
  for (const cell of document.querySelectorAll("[data-owner-for]")) { // the "your engine" page
    const yours = solved(cell.dataset.ownerFor);
    cell.dataset.owner = yours ? "yours" : "reference";
    cell.replaceChildren(bilingual(yours ? { zh: "你的", en: "yours" } : { zh: "参考实现", en: "reference" }));
  }
  for (const box of document.querySelectorAll("[data-progress]")) {
    const ids = box.dataset.progress.split(" ").filter(Boolean);
    const done = ids.filter(solved).length;
    const bar = box.querySelector("progress");
    bar.max = ids.length || 1;
    bar.value = done;
    box.querySelector("[data-count]").replaceChildren(
      bilingual({ zh: `已通过 ${done}/${ids.length}`, en: `${done} of ${ids.length} solved` }),
    );
    bar.setAttribute("aria-valuetext", `${done}/${ids.length}`);
  }
}

function setLang(value) {
  document.documentElement.dataset.ui = value;
  document.documentElement.lang = value === "en" ? "en" : "zh-CN";
  store.set("lang", value);
  document.dispatchEvent(new CustomEvent("mp:lang"));
}

export function initSite() {
  const toggle = document.querySelector("[data-testid=lang]");
  if (toggle) toggle.addEventListener("click", () => setLang(lang() === "en" ? "zh" : "en"));
  document.addEventListener("mp:lang", () => {
    showStatuses();
    focusableScrollers();
  });
  window.addEventListener("storage", showStatuses); // another tab solved something
  for (const button of document.querySelectorAll("[data-copy]")) {
    button.addEventListener("click", async () => {
      const text = document.getElementById(button.dataset.copy).textContent;
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        const range = document.createRange(); // no clipboard permission: select it for Ctrl+C
        range.selectNodeContents(document.getElementById(button.dataset.copy));
        getSelection().removeAllRanges();
        getSelection().addRange(range);
      }
      button.dataset.copied = "1";
      setTimeout(() => delete button.dataset.copied, 1500);
    });
  }
  showStatuses();
  focusableScrollers();
  initFigures();
}

/** Chapter figures: a tap, a click or Enter shows one at its own size, scrollable, in a dialog (a phone
 * shrinks a figure to the screen's width, too small to read its labels). */
function initFigures() {
  const figures = document.querySelectorAll(".notebook img");
  if (!figures.length) return;
  const body = Object.assign(document.createElement("div"), { className: "zoom-body" });
  const close = Object.assign(document.createElement("button"), { type: "button" });
  close.append(bilingual({ zh: "关闭", en: "Close" }));
  const help = bilingual({ zh: "原始大小；可以滑动查看", en: "Full size; scroll to see all of it" });
  const bar = Object.assign(document.createElement("div"), { className: "zoom-bar" });
  bar.append(help, close);
  const dialog = Object.assign(document.createElement("dialog"), { className: "figure-zoom" });
  dialog.setAttribute("aria-label", "figure / 图");
  dialog.append(bar, body);
  document.body.append(dialog);
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog || event.target.tagName === "IMG") dialog.close();
  });
  for (const figure of figures) {
    figure.classList.add("zoomable");
    figure.tabIndex = 0;
    figure.setAttribute("role", "button");
    figure.title = lang() === "en" ? "Show at full size" : "查看原始大小";
    const open = () => {
      const large = Object.assign(document.createElement("img"), { src: figure.src, alt: figure.alt });
      body.replaceChildren(large);
      dialog.showModal();
      close.focus();
    };
    figure.addEventListener("click", open);
    figure.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        open();
      }
    });
  }
}

/** Code blocks and tables that scroll can be scrolled from the keyboard too. */
export function focusableScrollers(root = document) {
  for (const pre of root.querySelectorAll("pre, .notebook table, .notebook .output_area, .notebook .text_cell_render")) {
    if (pre.scrollWidth > pre.clientWidth + 1 || pre.scrollHeight > pre.clientHeight + 1) pre.tabIndex = 0;
  }
}

/** Hints of an exercise page, one at a time; how many were shown is remembered. */
export function initHints(id) {
  const hints = [...document.querySelectorAll("[data-hint]")];
  const button = document.querySelector("[data-testid=next-hint]");
  if (!button || !hints.length) return;
  const show = (count) => {
    hints.forEach((hint, i) => (hint.hidden = i >= count));
    button.hidden = count >= hints.length;
    button.querySelector("[data-hint-number]").textContent = `${Math.min(count + 1, hints.length)}/${hints.length}`;
  };
  button.addEventListener("click", () => {
    const count = Math.min(progress(id).hints + 1, hints.length);
    setProgress(id, { hints: count });
    show(count);
    hints[count - 1].focus();
  });
  show(progress(id).hints);
}
