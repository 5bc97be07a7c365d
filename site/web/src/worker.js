// The exercise runner: a module Web Worker holding one Pyodide interpreter with pytest, the judge's
// core and its renderer. Messages in:  {type: "init", interrupt: SharedArrayBuffer | null, test}
//                                      {type: "file", name, buffer | error}   (see runner.js)
//                                      {type: "run", id, test, code}
// Messages out: {type: "ready", phases} | {type: "failed", error} | {type: "result", id, verdict, view | error}
import { loadPyodide } from "../pyodide/pyodide.mjs";

const pyodideURL = new URL("../pyodide/", import.meta.url).href;
const runtimeURL = (name) => new URL(`../runtime/${name}`, import.meta.url).href;
let runner = null;

// The runtime files, which the page fetches as it starts, before this worker's module has even loaded,
// and sends here: site-packages.zip, snapshot.bin and "rewritten" (the page's test file with its
// assertions rewritten at build time, or null).
const arrived = {};
const received = Object.fromEntries(["site-packages.zip", "snapshot.bin", "rewritten"].map((name) => {
  const promise = new Promise((resolve, reject) => (arrived[name] = { resolve, reject }));
  promise.catch(() => {}); // awaited below; this only keeps an early failure from being "unhandled"
  return [name, promise];
}));

// Returns how long each start-up phase took (ms), for the benchmark.
async function start(interrupt) {
  const t0 = performance.now();
  const phases = {};
  const mark = (name, since) => (phases[name] = Math.round(performance.now() - since));
  const [sitePackages, snapshot] = [received["site-packages.zip"], received["snapshot.bin"]];
  // loadPyodide waits forever when its .wasm cannot be fetched, so the worker asks for it too (HEAD):
  // that, or site-packages.zip, failing ends the start at once (the page offers a retry).
  const wasm = fetch(pyodideURL + "pyodide.asm.wasm", { method: "HEAD" }).then((r) => {
    if (!r.ok) throw new Error(`${r.url}: HTTP ${r.status}`);
  });
  wasm.catch(() => {});
  const never = () => new Promise(() => {});
  const failFast = (promise) => Promise.race([promise, sitePackages.then(never), wasm.then(never)]);
  // The snapshot already holds pytest and the judge imported and warmed up (see precompile.mjs).
  // Should it be missing or refused, start from scratch: slower, but the same interpreter.
  // packageBaseUrl: Pyodide's default for fetching packages is its CDN; point it at our own files too.
  // With the snapshot, the zips leave out the modules it has already imported (precompile.mjs); without
  // it, the whole standard library (Pyodide's default stdLibURL) and site-packages are fetched.
  const options = { indexURL: pyodideURL, packageBaseUrl: pyodideURL, packages: [] };
  let py;
  let files = sitePackages;
  try {
    py = await failFast(loadPyodide({ ...options, stdLibURL: runtimeURL("stdlib.zip"), _loadSnapshot: snapshot }));
  } catch (err) {
    console.warn(`starting Python without the snapshot: ${err}`);
    files = fetch(runtimeURL("site-packages-full.zip")).then((r) => {
      if (!r.ok) throw new Error(`${r.url}: HTTP ${r.status}`);
      return r.arrayBuffer();
    });
    py = await failFast(loadPyodide(options));
  }
  const fresh = files !== sitePackages;
  mark(fresh ? "load" : "restore", t0);
  const t1 = performance.now();
  const sitePackagesDir = py.runPython("import site; site.getsitepackages()[0]");
  py.unpackArchive(await files, "zip", { extractDir: sitePackagesDir });
  if (interrupt) py.setInterruptBuffer(new Uint8Array(interrupt));
  runner = py.pyimport("browser_runner");
  if (fresh) runner.warm_up();
  mark("setup", t1);
  mark("total", t0);
  return phases;
}

self.onmessage = async ({ data }) => {
  if (data.type === "file") {
    if (data.error) arrived[data.name].reject(new Error(data.error));
    else arrived[data.name].resolve(data.buffer);
  } else if (data.type === "init") {
    let phases;
    try {
      phases = await start(data.interrupt);
    } catch (err) {
      self.postMessage({ type: "failed", error: String(err && err.message ? err.message : err) });
      return;
    }
    const code = await received.rewritten.catch(() => null); // small: here long before the interpreter
    self.postMessage({ type: "ready", phases });
    // A Run sent meanwhile waits for this, then finds the work done.
    try {
      if (data.test) runner.prepare(data.test, code && new Uint8Array(code));
    } catch (err) {
      console.warn(`preparing the tests: ${err}`); // only a head start: the first Run does it again
    }
  } else if (data.type === "run") {
    try {
      self.postMessage({ type: "result", id: data.id, ...JSON.parse(runner.run(data.test, data.code)) });
    } catch (err) {
      self.postMessage({ type: "result", id: data.id, error: String(err) });
    }
  }
};
