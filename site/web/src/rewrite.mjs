// Build step run under Node: pytest's assertion rewriting of the browser exercises' test files, done
// once here rather than in every visitor's just-started interpreter (where it takes about a second),
// with the Python, pytest and runner that precompile.mjs put into <runtime dir>. Each output is what
// browser_runner.compile_test returns for its input; the worker hands it to browser_runner.prepare.
// Usage: node rewrite.mjs <pyodide dir> <runtime dir> <test.py> <output> [<test.py> <output>]...
import { loadPyodide } from "pyodide";
import { resolve } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";

const [pyodideDir, runtimeDir, ...pairs] = process.argv.slice(2).map((p) => resolve(p));
if (!pyodideDir || !runtimeDir || pairs.length % 2) {
  console.error("usage: node rewrite.mjs <pyodide dir> <runtime dir> <test.py> <output> [<test.py> <output>]...");
  process.exit(2);
}
const py = await loadPyodide({
  indexURL: pyodideDir + "/",
  stdLibURL: runtimeDir + "/python_stdlib.zip",
  packages: [],
  env: { HOME: "/home/pyodide" },
});
const sitePackages = py.runPython("import site; site.getsitepackages()[0]");
py.unpackArchive(new Uint8Array(readFileSync(runtimeDir + "/site-packages-full.zip")), "zip", { extractDir: sitePackages });
const runner = py.pyimport("browser_runner");
for (let i = 0; i < pairs.length; i += 2) {
  const compiled = runner.compile_test(readFileSync(pairs[i], "utf8"));
  writeFileSync(pairs[i + 1], compiled.toJs());
  compiled.destroy();
}
console.log(`rewrote the assertions of ${pairs.length / 2} test file(s)`);
