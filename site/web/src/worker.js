// The exercise runner: a module Web Worker holding one Pyodide interpreter with pytest and the
// judge's core. Messages in:  {type: "init", interrupt: SharedArrayBuffer | null}
//                             {type: "run", id, test, code}
// Messages out: {type: "ready", phases} | {type: "failed", error} | {type: "result", id, verdict | error}
import { loadPyodide } from "../pyodide/pyodide.mjs";

const pyodideURL = new URL("../pyodide/", import.meta.url).href;
const runtimeURL = (name) => new URL(`../runtime/${name}`, import.meta.url).href;
let runner = null;

// Returns how long each start-up phase took (ms), for the benchmark.
async function start(interrupt) {
  const t0 = performance.now();
  const phases = {};
  const mark = (name, since) => (phases[name] = Math.round(performance.now() - since));
  const [sitePackages, snapshot] = ["site-packages.zip", "snapshot.bin"].map((name) =>
    fetch(runtimeURL(name)).then((r) => {
      if (!r.ok) throw new Error(`${r.url}: HTTP ${r.status}`);
      return r.arrayBuffer();
    }),
  );
  sitePackages.catch(() => {}); // awaited below; this only keeps an early failure from being "unhandled"
  // The snapshot already holds pytest and the judge imported and warmed up (see precompile.mjs).
  // Should it be missing or refused, start from scratch: slower, but the same interpreter.
  // packageBaseUrl: Pyodide's default for fetching packages is its CDN; point it at our own files too.
  const options = { indexURL: pyodideURL, packageBaseUrl: pyodideURL, packages: [] };
  let py;
  let fresh = false;
  try {
    py = await loadPyodide({ ...options, _loadSnapshot: snapshot });
  } catch (err) {
    console.warn(`starting Python without the snapshot: ${err}`);
    py = await loadPyodide(options);
    fresh = true;
  }
  mark(fresh ? "load" : "restore", t0);
  const t1 = performance.now();
  const sitePackagesDir = py.runPython("import site; site.getsitepackages()[0]");
  py.unpackArchive(await sitePackages, "zip", { extractDir: sitePackagesDir });
  if (interrupt) py.setInterruptBuffer(new Uint8Array(interrupt));
  runner = py.pyimport("browser_runner");
  if (fresh) runner.warm_up();
  mark("setup", t1);
  mark("total", t0);
  return phases;
}

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    try {
      self.postMessage({ type: "ready", phases: await start(data.interrupt) });
    } catch (err) {
      self.postMessage({ type: "failed", error: String(err && err.stack ? err.stack : err) });
    }
  } else if (data.type === "run") {
    try {
      self.postMessage({ type: "result", id: data.id, verdict: JSON.parse(runner.run(data.test, data.code)) });
    } catch (err) {
      self.postMessage({ type: "result", id: data.id, error: String(err) });
    }
  }
};
