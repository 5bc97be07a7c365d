// Shared by every page: the Chinese/English switch and the visitor's exercise statuses.
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

export const STATUS_TEXT = {
  accepted: ["通过", "Accepted"],
  wrong_answer: ["答案错误", "Wrong answer"],
  error: ["运行出错", "Error"],
  syntax_error: ["语法错误", "Syntax error"],
  import_error: ["导入失败", "Import error"],
  no_tests: ["没有测试", "No tests"],
  memory_limit: ["超出内存限制", "Memory limit exceeded"],
  output_limit: ["输出过多", "Output limit exceeded"],
  interrupted: ["被中断", "Interrupted"],
  crashed: ["进程崩溃", "Crashed"],
  timeout: ["超时", "Time limit exceeded"],
  running: ["运行中…", "Running…"],
};

export function statusText(status) {
  const pair = STATUS_TEXT[status] || [status, status];
  return pair[lang() === "en" ? 1 : 0];
}

function setLang(value) {
  document.documentElement.dataset.ui = value;
  document.documentElement.lang = value === "en" ? "en" : "zh-CN";
  store.set("lang", value);
  document.dispatchEvent(new CustomEvent("mp:lang"));
}

function showStatuses() {
  for (const cell of document.querySelectorAll("[data-status-for]")) {
    const last = store.get("verdict:" + cell.dataset.statusFor);
    cell.textContent = last ? statusText(last.status) : "—";
    cell.dataset.status = last ? last.status : "";
  }
}

export function initSite() {
  const toggle = document.querySelector("[data-testid=lang]");
  if (toggle) toggle.addEventListener("click", () => setLang(lang() === "en" ? "zh" : "en"));
  document.addEventListener("mp:lang", showStatuses);
  showStatuses();
}
