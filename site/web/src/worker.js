// The exercise runner: a module Web Worker holding one Pyodide interpreter with pytest, the judge's
// core and its renderer. The page's first script starts it (exercise.html.j2), and it fetches its runtime
// files as soon as it starts, on its own thread: the page's main thread, busy with the editor, takes
// no part in the download. Messages in:  {type: "init", interrupt: SharedArrayBuffer | null, test, rewritten, starter}
//                                        {type: "run", id, test, code}
// Messages out: {type: "progress", loaded} (bytes of the runtime files read so far) | {type: "ready", phases}
//               | {type: "failed", error} | {type: "started", id} (a Run taken up: its time limit starts)
//               | {type: "result", id, verdict, view | error}
// The runtime files (Pyodide's and runtime/) are kept in a Cache API cache named by the build's runtime
// version (site/build.py writes it below). A returning visit reads them from there, and compiles the
// WebAssembly by streaming from that cached response, which lets the browser take the machine code it
// cached on an earlier visit from its code cache (Chromium keeps only the functions it had optimised, so
// the others are still compiled as they are first called; see the warm-up below).
import { loadPyodide } from "../pyodide/pyodide.mjs";

const pyodideURL = new URL("../pyodide/", import.meta.url).href;
const runtimeURL = (name) => new URL(`../runtime/${name}`, import.meta.url).href;
const PROGRESS_STEP = 1 << 20; // bytes between progress reports
const CACHE_PREFIX = "mini-platform-runtime-";
const CACHE_NAME = CACHE_PREFIX + "__RUNTIME_VERSION__"; // the version: replaced by site/build.py
const WARM_UP_AFTER_MS = 100; // a Run the page sends on "ready" arrives well within this
let py = null;
let runner = null;
let runs = 0; // Run messages received
let loaded = 0;
let reported = 0;

const workerStarted = performance.now();
const quiet = (promise) => (promise.catch(() => {}), promise); // awaited later; not "unhandled" meanwhile
const networkFetch = self.fetch.bind(self);
const quietly = (work) => {
  try {
    work();
  } catch (err) {
    console.warn(`warming up: ${err}`); // only a head start
  }
};
// This build's cache, with the caches of other builds deleted; null without the Cache API (storage
// disabled, or a browser that refuses it here): then every file comes from the network as before.
const runtimeCache = (async () => {
  try {
    const cache = await caches.open(CACHE_NAME);
    for (const name of await caches.keys()) if (name.startsWith(CACHE_PREFIX) && name !== CACHE_NAME) quiet(caches.delete(name));
    return cache;
  } catch {
    return null;
  }
})();
const isRuntime = (url) => url.startsWith(pyodideURL) || url.startsWith(runtimeURL(""));
// Files fetched from the network are written to the cache once Python is ready (or failed to start):
// the writes stay out of the way of the first start.
let startSettled;
const startDone = new Promise((resolve) => (startSettled = resolve));

/** The response for ``url``, a runtime file: from this build's cache, or from the network and then kept. */
async function cachedFetch(url) {
  const cache = await runtimeCache;
  const hit = cache && (await cache.match(url).catch(() => null));
  if (hit) return hit;
  const response = await networkFetch(url);
  if (cache && response.ok) {
    const copy = response.clone();
    quiet(startDone.then(() => cache.put(url, copy)));
  }
  return response;
}

/** The body of ``url`` (a Uint8Array), its bytes counted into the progress reports. */
async function download(url) {
  const response = await cachedFetch(url);
  if (!response.ok) throw new Error(`${response.url}: HTTP ${response.status}`);
  const reader = response.body.getReader();
  const chunks = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.length;
    loaded += value.length;
    if (loaded - reported >= PROGRESS_STEP) {
      reported = loaded;
      self.postMessage({ type: "progress", loaded });
    }
  }
  const buffer = new Uint8Array(length);
  chunks.reduce((offset, chunk) => (buffer.set(chunk, offset), offset + chunk.length), 0);
  return buffer;
}

const sitePackages = quiet(download(runtimeURL("site-packages.zip")));
const snapshot = quiet(download(runtimeURL("snapshot.bin")));
snapshot.then(() => (snapshotReady = Math.round(performance.now() - workerStarted)));
// Pyodide compiles its .wasm only once the snapshot is here (it sizes the memory from it). Compile it now,
// while the snapshot downloads; Pyodide (314) fetches the file with fetch() and instantiates it with
// WebAssembly.instantiateStreaming: hand it this response and the module compiled from it. A failure
// here (the file missing) also ends the start at once: loadPyodide itself would wait forever.
let wasmReady = null; // ms after the worker started when the module was compiled (or taken from the code cache)
let snapshotReady = null; // ms after the worker started when the snapshot's bytes were all read
const wasmURL = pyodideURL + "pyodide.asm.wasm";
const wasmFile = cachedFetch(wasmURL);
const wasm = quiet(WebAssembly.compileStreaming(wasmFile));
wasm.then(() => (wasmReady = Math.round(performance.now() - workerStarted)));
// Pyodide's own requests (the standard library, its lock file) go through the cache too.
self.fetch = (url, ...rest) => {
  const address = String(url);
  if (address === wasmURL) return wasmFile;
  return isRuntime(address) ? cachedFetch(address) : networkFetch(url, ...rest);
};
WebAssembly.instantiateStreaming = async (_response, imports) => {
  const module = await wasm;
  return { module, instance: await WebAssembly.instantiate(module, imports) };
};

// Returns how long each start-up phase took (ms), for the benchmark.
async function start() {
  const t0 = performance.now();
  const phases = {};
  const mark = (name, since) => (phases[name] = Math.round(performance.now() - since));
  const never = () => new Promise(() => {});
  const failFast = (promise) => Promise.race([promise, sitePackages.then(never), wasm.then(never)]);
  // The snapshot already holds pytest and the judge imported and warmed up (see precompile.mjs).
  // Should it be missing or refused, start from scratch: slower, but the same interpreter.
  // packageBaseUrl: Pyodide's default for fetching packages is its CDN; point it at our own files too.
  // With the snapshot, the zips leave out the modules it has already imported (precompile.mjs); without
  // it, the whole standard library (Pyodide's default stdLibURL) and site-packages are fetched.
  const options = { indexURL: pyodideURL, packageBaseUrl: pyodideURL, packages: [] };
  let files = sitePackages;
  try {
    py = await failFast(loadPyodide({ ...options, stdLibURL: runtimeURL("stdlib.zip"), _loadSnapshot: snapshot }));
  } catch (err) {
    console.warn(`starting Python without the snapshot: ${err}`);
    files = download(runtimeURL("site-packages-full.zip"));
    py = await failFast(loadPyodide(options));
  }
  const fresh = files !== sitePackages;
  mark(fresh ? "load" : "restore", t0);
  const t1 = performance.now();
  const sitePackagesDir = py.runPython("import site; site.getsitepackages()[0]");
  py.unpackArchive(await files, "zip", { extractDir: sitePackagesDir });
  runner = py.pyimport("browser_runner");
  if (fresh) runner.warm_up();
  mark("setup", t1);
  mark("total", t0);
  // For the benchmark: when the module and the snapshot were ready, and when this worker started (ms
  // since the epoch, which the page turns into ms since its navigation).
  Object.assign(phases, { wasm: wasmReady, snapshot: snapshotReady, started: performance.timeOrigin + workerStarted });
  return phases;
}

// Started at once, not when the page's script says so: the page's main thread may be busy for a while.
const started = quiet(start());
quiet(started.finally(startSettled));

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    // The page's test file with its assertions rewritten at build time (small: here long before the
    // interpreter); without it, prepare rewrites the file.
    const rewritten = data.rewritten
      ? fetch(runtimeURL(`tests/${data.rewritten}`)).then((r) => (r.ok ? r.arrayBuffer() : null), () => null)
      : null;
    let phases;
    try {
      phases = await started;
    } catch (err) {
      self.postMessage({ type: "failed", error: String(err && err.message ? err.message : err) });
      return;
    }
    if (data.interrupt) py.setInterruptBuffer(new Uint8Array(data.interrupt));
    const code = await rewritten;
    self.postMessage({ type: "ready", phases });
    // A Run sent meanwhile waits for this, then finds the work done.
    try {
      if (data.test) runner.prepare(data.test, code && new Uint8Array(code));
    } catch (err) {
      console.warn(`preparing the tests: ${err}`); // only a head start: the first Run does it again
    }
    // The first judgement after a restore is several times slower than the next ones (the browser compiles
    // the interpreter's code as it is first used). While nobody has asked for a Run, make that one now:
    // this page's tests on its starter code, its verdict thrown away. A Run sent meanwhile waits for the
    // rest of it, about what it saves that Run.
    const warmUp = () => (data.test && data.starter ? runner.run(data.test, data.starter) : runner.warm_up());
    if (phases.restore !== undefined) setTimeout(() => runs || quietly(warmUp), WARM_UP_AFTER_MS);
  } else if (data.type === "run") {
    runs += 1;
    self.postMessage({ type: "started", id: data.id });
    try {
      self.postMessage({ type: "result", id: data.id, ...JSON.parse(runner.run(data.test, data.code)) });
    } catch (err) {
      self.postMessage({ type: "result", id: data.id, error: String(err) });
    }
  }
};
