// The exercise runner's page side: one Web Worker (worker.js) at a time. A run past its limit, or
// one the visitor stops, is interrupted through Pyodide's interrupt buffer when the page is
// cross-origin isolated; if that does not answer, or the page is not isolated, the worker is
// terminated and a fresh one started. The page's head starts the first worker, which fetches the
// runtime files itself; this small script, loaded async, takes it over and leaves the runner in
// window.mpRunner (and says so with an "mp:runner" event on document) and the timings in
// window.mpTimings: ready and verdicts (ms since navigation), runs (ms from click to verdict), waits (ms each Run
// waited for the worker to take it up) and phases (the last worker's start-up, ms).
const START_LIMIT_MS = 60000; // a worker that is not ready by then counts as failed
// After a soft interrupt at the time limit, wait this long before terminating. A fresh worker costs seconds (the
// snapshot restored), and a busy machine has taken over 2 s to answer the interrupt of a plain loop (CI, once;
// usually 15-400 ms): only code that swallows KeyboardInterrupt waits the whole grace.
const SOFT_GRACE_MS = 5000;
const STOP_GRACE_MS = 500; // the same when the visitor pressed Stop
const TIMEOUT = Symbol("timeout");
const STOP = Symbol("stop");
const STARTED = Symbol("started");
const sleep = (ms, value = TIMEOUT) => new Promise((resolve) => setTimeout(resolve, ms, value));
const timings = (window.mpTimings = { ready: [], verdicts: [], runs: [], waits: [] });
const data = JSON.parse(document.getElementById("exercise-data").textContent);
// The runtime files the worker downloads itself, whose sizes (uncompressed, from the build) make the
// progress total: a compressed response's Content-Length is not what the worker counts.
const RUNTIME_TOTAL = ["site-packages.zip", "snapshot.bin"].reduce((sum, name) => sum + (data.runtime?.[name] || 0), 0);

class Runner {
  constructor(onState) {
    this.onState = onState;
    this.seq = 0;
    this.spawn();
  }

  spawn() {
    this.onState("loading");
    this.interrupt = self.crossOriginIsolated ? new SharedArrayBuffer(1) : null;
    // The first worker was started by the page's head (exercise.html.j2), before this script arrived.
    const early = window.mpWorker;
    window.mpWorker = null;
    this.worker = early || new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.pending = null;
    let settled = false; // progress reports that arrive after a failure must not show "loading" again
    this.ready = new Promise((resolve, reject) => {
      const fail = (message) => {
        settled = true;
        clearTimeout(timer);
        reject(new Error(message));
        this.pending?.resolve({ error: message });
      };
      const timer = setTimeout(() => fail(`the runner did not start within ${START_LIMIT_MS / 1000} s`), START_LIMIT_MS);
      this.worker.onerror = (event) => fail(event.message || "the runner's worker failed to load");
      if (early?.failed) fail(early.failed);
      this.worker.onmessage = ({ data }) => {
        if (data.type === "ready") {
          settled = true;
          clearTimeout(timer);
          timings.ready.push(performance.now());
          timings.phases = { ...data.phases, started: Math.round(data.phases.started - performance.timeOrigin) };
          resolve(data.phases);
        } else if (data.type === "progress") {
          if (!settled && RUNTIME_TOTAL) this.onState("loading", { loaded: data.loaded, total: RUNTIME_TOTAL });
        } else if (data.type === "failed") {
          fail(data.error);
        } else if (data.type === "started" && this.pending?.id === data.id) {
          this.pending.started(STARTED);
        } else if (data.type === "result" && this.pending?.id === data.id) {
          this.pending.resolve(data);
        }
      };
    });
    this.ready.then(
      () => this.onState("ready"),
      (err) => this.onState("failed", { error: err.message }),
    );
    this.worker.postMessage({ type: "init", interrupt: this.interrupt, test: data.test, rewritten: data.rewritten, starter: data.starter });
  }

  restart() {
    this.worker.terminate();
    this.spawn();
  }

  /** Ends the running submission now (its reply says stopped: "interrupted" or "terminated"). */
  stop() {
    this.stopRequest?.(STOP);
  }

  async run(test, code, limitMs) {
    try {
      await this.ready;
    } catch (err) {
      this.restart(); // the next click tries a fresh worker
      return { error: `运行器启动失败 / the runner failed to start: ${err.message}` };
    }
    const id = ++this.seq;
    let started;
    const taken = new Promise((resolve) => (started = resolve));
    const result = new Promise((resolve) => (this.pending = { id, resolve, started }));
    const stopped = new Promise((resolve) => (this.stopRequest = resolve));
    const flag = this.interrupt && new Uint8Array(this.interrupt);
    if (flag) flag[0] = 0;
    const sent = performance.now();
    this.worker.postMessage({ type: "run", id, test, code });
    // The limit counts from when the worker takes the Run up: one sent while it judges the starter to warm up
    // (worker.js) waits for that, seconds on a busy machine, and an interrupt sent meanwhile would stop the warm-up
    // instead of this code, which then runs on until the worker is terminated. The wait itself is capped at the limit.
    let reply = await Promise.race([taken, result, sleep(limitMs), stopped]);
    if (reply === STARTED) {
      timings.waits.push(Math.round(performance.now() - sent));
      reply = await Promise.race([result, sleep(limitMs), stopped]);
    }
    this.stopRequest = null;
    if (reply !== TIMEOUT && reply !== STOP) {
      // judge_core turns everything the code does into a verdict; an error here means the
      // interpreter or the worker itself broke, so it is not used again.
      if (!reply.error) return reply;
      this.restart();
      return { ...reply, crashed: true };
    }
    const key = reply === STOP ? "stopped" : "timeout";
    if (flag) {
      flag[0] = 2; // SIGINT: KeyboardInterrupt inside Python
      const grace = reply === STOP ? STOP_GRACE_MS : SOFT_GRACE_MS;
      if ((await Promise.race([result, sleep(grace)])) !== TIMEOUT) return { [key]: "interrupted" };
    }
    this.restart();
    return { [key]: "terminated" };
  }
}

let latest = ["loading", {}]; // the runner's state, shown once the indicator has been parsed
function show(state, detail = {}) {
  latest = [state, detail];
  const indicator = document.querySelector("[data-testid=runner]");
  if (!indicator) return;
  indicator.dataset.state = state;
  if (state === "loading") {
    // The indicator may be parsed before its children (this script is async): whenParsed shows the state again.
    const percent = indicator.querySelector("[data-percent]");
    if (percent) percent.textContent = detail.total ? ` ${Math.min(100, Math.round((100 * detail.loaded) / detail.total))}%` : "";
  }
  const why = indicator.querySelector("[data-error]");
  if (why) why.textContent = state === "failed" ? detail.error || "" : "";
}
window.mpRunner = new Runner(show);
document.dispatchEvent(new Event("mp:runner"));
function whenParsed() {
  show(...latest);
  document.querySelector("[data-testid=retry]")?.addEventListener("click", () => window.mpRunner.restart());
}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", whenParsed);
else whenParsed();
