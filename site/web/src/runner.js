// The exercise runner's page side: one Web Worker (worker.js) at a time. A run past its limit, or
// one the visitor stops, is interrupted through Pyodide's interrupt buffer when the page is
// cross-origin isolated; if that does not answer, or the page is not isolated, the worker is
// terminated and a fresh one started. This small script is loaded async, so that Python starts
// loading as soon as it arrives, before the page is parsed or the editor bundle runs; it leaves the
// runner in window.mpRunner (and says so with an "mp:runner" event on document) and the timings in
// window.mpTimings: ready and verdicts (ms since navigation), runs (ms from click to verdict) and
// phases (the last worker's start-up, ms). The runtime files are fetched here, not in the worker, so
// that their download starts with the page rather than once the worker's module has loaded.
const START_LIMIT_MS = 60000; // a worker that is not ready by then counts as failed
const SOFT_GRACE_MS = 2000; // after a soft interrupt at the time limit, wait this long before terminating
const STOP_GRACE_MS = 500; // the same when the visitor pressed Stop
const TIMEOUT = Symbol("timeout");
const STOP = Symbol("stop");
const sleep = (ms, value = TIMEOUT) => new Promise((resolve) => setTimeout(resolve, ms, value));
const timings = (window.mpTimings = { ready: [], verdicts: [], runs: [] });
const data = JSON.parse(document.getElementById("exercise-data").textContent);
const runtimeURL = (name) => new URL(`../runtime/${name}`, import.meta.url).href;
const RUNTIME = ["site-packages.zip", "snapshot.bin"];

/** Fetches the runtime files in parallel and hands each to ``worker`` (transferred) as it arrives, or
 * why it failed; reports progress (sizes: uncompressed bytes from the build, since a compressed
 * response's Content-Length is not what the reader counts). The page's test file with its assertions
 * rewritten at build time goes as "rewritten" (null when missing: the worker then rewrites it). */
function download(worker, sizes, progress) {
  const loaded = Object.fromEntries(RUNTIME.map((name) => [name, 0]));
  const total = RUNTIME.reduce((sum, name) => sum + ((sizes && sizes[name]) || 0), 0);
  let last = 0;
  const send = (name, fetched) =>
    fetched.then(
      (buffer) => worker.postMessage({ type: "file", name, buffer }, buffer ? [buffer] : []),
      (err) => worker.postMessage({ type: "file", name, error: String(err && err.message ? err.message : err) }),
    );
  for (const name of RUNTIME) {
    send(name, (async () => {
      const response = await fetch(runtimeURL(name));
      if (!response.ok) throw new Error(`${response.url}: HTTP ${response.status}`);
      if (!total || !response.body) return response.arrayBuffer();
      const reader = response.body.getReader();
      const chunks = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        loaded[name] += value.length;
        const sum = Object.values(loaded).reduce((a, b) => a + b, 0);
        if (sum - last > total / 50) {
          last = sum;
          progress({ loaded: sum, total });
        }
      }
      return new Blob(chunks).arrayBuffer();
    })());
  }
  const rewritten = data.rewritten ? fetch(runtimeURL(`tests/${data.rewritten}`)) : Promise.resolve(null);
  send("rewritten", rewritten.then((r) => (r && r.ok ? r.arrayBuffer() : null), () => null));
}

class Runner {
  constructor(onState) {
    this.onState = onState;
    this.seq = 0;
    this.spawn();
  }

  spawn() {
    this.onState("loading");
    this.interrupt = self.crossOriginIsolated ? new SharedArrayBuffer(1) : null;
    this.worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
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
      this.worker.onmessage = ({ data }) => {
        if (data.type === "ready") {
          settled = true;
          clearTimeout(timer);
          timings.ready.push(performance.now());
          timings.phases = data.phases;
          resolve(data.phases);
        } else if (data.type === "failed") {
          fail(data.error);
        } else if (data.type === "result" && this.pending?.id === data.id) {
          this.pending.resolve(data);
        }
      };
    });
    this.ready.then(
      () => this.onState("ready"),
      (err) => this.onState("failed", { error: err.message }),
    );
    this.worker.postMessage({ type: "init", interrupt: this.interrupt, test: data.test });
    download(this.worker, data.runtime, (detail) => settled || this.onState("loading", detail));
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
    const result = new Promise((resolve) => (this.pending = { id, resolve }));
    const stopped = new Promise((resolve) => (this.stopRequest = resolve));
    const flag = this.interrupt && new Uint8Array(this.interrupt);
    if (flag) flag[0] = 0;
    this.worker.postMessage({ type: "run", id, test, code });
    const reply = await Promise.race([result, sleep(limitMs), stopped]);
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
    const percent = indicator.querySelector("[data-percent]");
    percent.textContent = detail.total ? ` ${Math.min(100, Math.round((100 * detail.loaded) / detail.total))}%` : "";
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
