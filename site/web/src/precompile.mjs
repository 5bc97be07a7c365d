// Build step run under Node: byte-compile Pyodide's standard library and the runner's Python files
// with Pyodide's own interpreter (so the .pyc magic number is exactly the browser's), and write
//   <out>/python_stdlib.zip   the standard library as sourceless .pyc (replaces the .py-only zip)
//   <out>/site-packages.zip   pytest and its dependencies (unpacked wheels) plus the extra modules
//   <out>/snapshot.bin        the interpreter's memory after loading those two and one warm-up run of
//                             browser_runner, so that a browser worker starts by restoring it instead of
//                             importing everything again (the file system is not in it: the worker
//                             still mounts the same two zips)
// Usage: node precompile.mjs <pyodide dir> <out dir> <wheel or .py file>...
import { loadPyodide } from "pyodide";
import { resolve } from "node:path";

const [pyodideDir, outDir, ...inputs] = process.argv.slice(2).map((p) => resolve(p));
if (!pyodideDir || !outDir) {
  console.error("usage: node precompile.mjs <pyodide dir> <out dir> <wheel or .py file>...");
  process.exit(2);
}
const py = await loadPyodide({ indexURL: pyodideDir + "/", packages: [] });
py.mountNodeFS("/out", outDir);
inputs.forEach((p, i) => py.mountNodeFS(`/in${i}`, resolve(p, "..")));
py.globals.set("inputs", inputs.map((p, i) => `/in${i}/${p.split("/").pop()}`));
py.runPython(`
import importlib._bootstrap_external as bx
import os, sys, zipfile

def pyc(source, filename):
    code = compile(source, filename, "exec", dont_inherit=True)
    return bytes(bx._code_to_timestamp_pyc(code, 0, 0))

def repack(entries, dest, prefix):
    """entries: (name, bytes) pairs; .py files become sourceless .pyc next to where they were."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in entries:
            if name.endswith(".py"):
                try:
                    name, data = name + "c", pyc(data, prefix + name)
                except SyntaxError:
                    pass  # e.g. deliberately broken test data; keep the source
            out.writestr(name, data)

stdlib = sys.path[1]  # /lib/python3XY.zip
with zipfile.ZipFile(stdlib) as z:
    repack(((n, z.read(n)) for n in z.namelist() if not n.endswith("/")), "/out/python_stdlib.zip", stdlib + "/")

site = []
for path in inputs:
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            site += [(n, z.read(n)) for n in z.namelist() if not n.endswith("/")]
    else:
        site.append((os.path.basename(path), open(path, "rb").read()))
repack(site, "/out/site-packages.zip", "/lib/python%d.%d/site-packages/" % sys.version_info[:2])
`);

// A fresh interpreter on exactly the files the browser will get, warmed up, then snapshotted.
const { readFileSync, writeFileSync } = await import("node:fs");
const warm = await loadPyodide({
  indexURL: pyodideDir + "/",
  stdLibURL: outDir + "/python_stdlib.zip",
  packages: [],
  env: { HOME: "/home/pyodide" },
  _makeSnapshot: true,
});
const sitePackages = warm.runPython("import site; site.getsitepackages()[0]");
warm.unpackArchive(new Uint8Array(readFileSync(outDir + "/site-packages.zip")), "zip", { extractDir: sitePackages });
warm.pyimport("browser_runner").warm_up();
writeFileSync(outDir + "/snapshot.bin", warm.makeMemorySnapshot());
console.log(`precompiled the standard library and ${inputs.length} inputs into ${outDir}, with a warm snapshot`);
