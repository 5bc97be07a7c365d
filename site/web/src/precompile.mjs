// Build step run under Node: byte-compile Pyodide's standard library and the runner's Python files
// with Pyodide's own interpreter (so the .pyc magic number is exactly the browser's), snapshot a
// warmed-up interpreter, and write
//   <out>/python_stdlib.zip       the whole standard library as sourceless .pyc (replaces the .py-only zip)
//   <out>/site-packages-full.zip  pytest and its dependencies (unpacked wheels) plus the extra modules
//   <out>/snapshot.bin            the interpreter's memory after loading those two and one warm-up run of
//                                 browser_runner, so that a browser worker starts by restoring it instead of
//                                 importing everything again
//   <out>/stdlib.zip, <out>/site-packages.zip
//                                 the same two without the files of the modules the snapshot has already
//                                 imported (they are in its memory, and nothing here imports them again):
//                                 what a worker that restores the snapshot downloads. The file system is
//                                 not in the snapshot; the full zips serve a start without it. Of pygments,
//                                 which pytest only uses to colour a terminal, no module is left in them.
// The zips are stored, not deflated: the build gzips each whole file, which compresses better.
// Usage: node precompile.mjs <pyodide dir> <out dir> <wheel or .py file>...
import { loadPyodide } from "pyodide";
import { resolve } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";

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
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as out:
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
repack(site, "/out/site-packages-full.zip", "/lib/python%d.%d/site-packages/" % sys.version_info[:2])
`);

// A fresh interpreter on exactly the files a start without the snapshot gets, warmed up, then snapshotted.
const warm = await loadPyodide({
  indexURL: pyodideDir + "/",
  stdLibURL: outDir + "/python_stdlib.zip",
  packages: [],
  env: { HOME: "/home/pyodide" },
  _makeSnapshot: true,
});
const sitePackages = warm.runPython("import site; site.getsitepackages()[0]");
warm.unpackArchive(new Uint8Array(readFileSync(outDir + "/site-packages-full.zip")), "zip", { extractDir: sitePackages });
warm.pyimport("browser_runner").warm_up();
// Which files the imported modules came from; then forget the standard library zip's table of
// contents, so that the restored interpreter reads the table of the smaller zip it is given.
const imported = warm.runPython(`
import sys, zipimport
files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
zipimport._zip_directory_cache.clear()
sorted(f for f in files if isinstance(f, str))
`).toJs();
writeFileSync(outDir + "/snapshot.bin", warm.makeMemorySnapshot());

py.globals.set("imported", imported);
py.globals.set("site_dir", sitePackages);
const left = py.runPython(`
# pytest imports pygments as it starts (those modules are in the snapshot) and uses it only to colour
# terminal output, which the runner never asks for: the rest of pygments (its many lexers) is not needed.
UNUSED = ("pygments/",)

def without_imported(src, dest, prefix):
    def needed(name):
        return prefix + name not in imported_set and not (name.startswith(UNUSED) and name.endswith(".pyc"))
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as out:
        kept = [i for i in z.infolist() if needed(i.filename)]
        for info in kept:
            out.writestr(info, z.read(info))
    return len(z.infolist()) - len(kept)

imported_set = set(imported)
[without_imported("/out/python_stdlib.zip", "/out/stdlib.zip", stdlib + "/"),
 without_imported("/out/site-packages-full.zip", "/out/site-packages.zip", site_dir + "/")]
`).toJs();
console.log(`precompiled the standard library and ${inputs.length} inputs into ${outDir}, with a warm snapshot; ` +
            `${left[0]} + ${left[1]} files of modules it imported are left out of the zips it starts with`);
