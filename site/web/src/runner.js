// The exercise runner's page side: one Web Worker (worker.js) at a time. A run past its limit is
// interrupted through Pyodide's interrupt buffer when the page is cross-origin isolated; if that
// does not answer, or the page is not isolated, the worker is terminated and a fresh one started.
// This small script runs before the editor bundle so that Python starts loading at once; it leaves
// the runner in window.mpRunner and the timings in window.mpTimings: ready and verdicts (ms since
// navigation), runs (ms from click to verdict) and phases (the last worker's start-up, ms).
const START_LIMIT_MS = 60000; // a worker that is not ready by then counts as failed
const SOFT_GRACE_MS = 2000; // after a soft interrupt, wait this long before terminating
const TIMEOUT = Symbol("timeout");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms, TIMEOUT));
const timings = (window.mpTimings = { ready: [], verdicts: [], runs: [] });

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
    this.ready = new Promise((resolve, reject) => {
      const fail = (message) => {
        clearTimeout(timer);
        reject(new Error(message));
        this.pending?.resolve({ error: message });
      };
      const timer = setTimeout(() => fail(`the runner did not start within ${START_LIMIT_MS / 1000} s`), START_LIMIT_MS);
      this.worker.onerror = (event) => fail(event.message || "the runner's worker failed");
      this.worker.onmessage = ({ data }) => {
        if (data.type === "ready") {
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
      () => this.onState("failed"),
    );
    this.worker.postMessage({ type: "init", interrupt: this.interrupt });
  }

  restart() {
    this.worker.terminate();
    this.spawn();
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
    const flag = this.interrupt && new Uint8Array(this.interrupt);
    if (flag) flag[0] = 0;
    this.worker.postMessage({ type: "run", id, test, code });
    const reply = await Promise.race([result, sleep(limitMs)]);
    if (reply !== TIMEOUT) {
      // judge_core turns everything the code does into a verdict; an error here means the
      // interpreter or the worker itself broke, so it is not used again.
      if (!reply.error) return reply;
      this.restart();
      return { ...reply, crashed: true };
    }
    if (flag) {
      flag[0] = 2; // SIGINT: KeyboardInterrupt inside Python
      if ((await Promise.race([result, sleep(SOFT_GRACE_MS)])) !== TIMEOUT) return { timeout: "interrupted" };
    }
    this.restart();
    return { timeout: "terminated" };
  }
}

const indicator = document.querySelector("[data-testid=runner]");
window.mpRunner = new Runner((state) => (indicator.dataset.state = state));
